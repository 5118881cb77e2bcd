// The import benchmarks' lines: the same realistic items for bench:import and bench:import-parts.
const DESCRIPTION = 'A sturdy, well-made product for everyday use. '.repeat(4);

/** A realistic item of about 500 bytes: 200,000 of them make a file just under 100 MB. */
export function benchLine(i: number): string {
  return JSON.stringify({
    externalSystem: 'erp', externalId: `BENCH-${String(i).padStart(7, '0')}`, sku: `SKU-${String(i).padStart(7, '0')}`,
    name: `Benchmark product ${i}`, description: DESCRIPTION, price: Number((10 + (i % 1000) / 7).toFixed(2)), cost: 5.5,
    weight: 0.25, ncm: '8471.30.12', category: { name: `Category ${i % 40}` }, brand: { name: `Brand ${i % 60}` },
    tags: [`tag${i % 11}`, `tag${i % 17}`, 'bench'], metadata: { color: ['red', 'green', 'blue'][i % 3], size: i % 50 },
  });
}
