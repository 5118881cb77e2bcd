// A caller's code against the types openapi-typescript makes from the contract with its default
// settings, through openapi-fetch: type-checked by test/integration/openapi-typescript.test.ts.
import createClient from 'openapi-fetch';
import type { components, paths } from './catalog.ts';

type ItemPayload = components['schemas']['ItemPayload'];

const client = createClient<paths>({
  baseUrl: 'http://127.0.0.1:8080/api/v1/catalog',
  headers: { Authorization: 'Bearer cat_live_example' },
});

// Optional fields stay optional: no `trackStock`, no media `sortOrder`, no `dryRun`.
const shirt: ItemPayload = {
  externalSystem: 'erp',
  externalId: 'SKU-0001',
  sku: 'TSHIRT-RED-M',
  name: 'Red T-shirt, size M',
  price: 19.9,
  category: { name: 'T-Shirts' },
  media: [{ url: 'https://cdn.merchant.example/img/tshirt-red-front.jpg', role: 'primary' }],
};

export async function sync(): Promise<string[]> {
  const upserted = await client.POST('/items/upsert', { body: shirt });
  if (upserted.error) throw new Error(upserted.error.error.message);
  const outcome: 'created' | 'updated' | 'unchanged' = upserted.data.data.outcome;
  const stored: string | null | undefined = upserted.data.data.item.media[0]?.storedUrl;

  // Bulk elements take item payloads (the contract accepts any object there; the service checks each).
  const bulk = await client.POST('/items/bulk-upsert', {
    body: { items: [shirt, { externalSystem: 'erp', externalId: 'SKU-0002', name: 'Plain mug' }] },
  });
  const statuses = bulk.data?.data.results.map((result) => result.status) ?? [];

  // An upload answers 201 with its address; an import from a source address answers 202 with the queued job.
  const job = await client.POST('/imports', { body: { fileSizeBytes: 1024 } });
  const created = job.data?.data;
  const uploadUrl: string | undefined = created && 'uploadUrl' in created ? created.uploadUrl : undefined;

  const item = await client.GET('/items/{externalSystem}/{externalId}', {
    params: { path: { externalSystem: 'erp', externalId: 'SKU-0001' } },
  });
  const onHand: number | null | undefined = item.data?.data.onHand;

  const document = await client.GET('/openapi.json');
  const title: unknown = document.data?.info.title;
  const events = await client.GET('/events', { params: { query: { limit: 10 } } });
  // JSONL: openapi-fetch's default `parseAs: 'json'` would parse the lines as one document.
  const exported = await client.GET('/items/export', { parseAs: 'text' });
  const lines: number = exported.data?.split('\n').filter(Boolean).length ?? 0;
  const firstType: unknown = events.data?.data.events[0]?.data.externalId;

  return [outcome, String(stored), ...statuses, String(uploadUrl), String(onHand), String(title), String(firstType), String(lines)];
}
