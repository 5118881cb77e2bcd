// The figures a benchmark printed, by label: how bench:versus and bench:traces set two runs side by side.

/**
 * Every figure printed: a number standing alone (not the 50 of `p50`), labelled by its line's
 * text before the line's first figure and its unit, and after the first by the word between it and
 * the figure before (`commit-to-receipt latency: p50 ms`, `… › p99 ms`), or its place
 * (`fresh import (end to end) › #2 lines/s`); numbered when a label repeats, as `unchanged` does
 * for single and bulk upserts. A dash standing alone (a table's empty cell, as bench:import-parts
 * prints a share too small to show) is a figure of 0, so the cells after it keep their labels.
 */
export function figures(output: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of output.split('\n')) {
    const text = line.trim();
    const numbers = [...text.matchAll(/(?<![\w.])\d(?:,?\d)*(?:\.\d+)?(?![\w.])|(?<=\s)-(?=\s|$)/g)];
    const lead = numbers.length === 0 ? '' : text.slice(0, numbers[0]!.index).trim().replace(/\s+/g, ' ');
    if (lead === '') continue;
    let previousUnit = '';
    numbers.forEach((number, n) => {
      const unit = /^\s*([^\s\d,:;()-][^\s\d,:;()]*)/.exec(text.slice(number.index + number[0].length))?.[1] ?? '';
      const between = n === 0 ? [] : text.slice(numbers[n - 1]!.index + numbers[n - 1]![0].length, number.index)
        .split(/[\s,:;()]+/).filter((word) => word !== '' && word !== previousUnit);
      const name = n === 0 ? [lead, unit] : [lead, '›', between.at(-1) ?? `#${n + 1}`, unit];
      previousUnit = unit;
      const base = name.filter((part) => part !== '').join(' ');
      let label = base;
      for (let k = 2; found.has(label); k += 1) label = `${base} (${k})`;
      found.set(label, number[0] === '-' ? 0 : Number(number[0].replaceAll(',', '')));
    });
  }
  return found;
}
