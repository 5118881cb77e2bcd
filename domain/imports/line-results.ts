// What happened to each line of a batch, for the job's results file; in a dry run, each would-be update's fields with their stored and incoming values.
import type { ImportErrorType } from '../../generated/client.ts';
import type { Db } from '../../platform/db/sql.ts';
import { canonicalJson } from '../items/content-hash.ts';
import { identityKey } from '../items/keys.ts';
import type { NormalizedItem } from '../items/normalized-item.ts';
import { lookup } from '../items/store.ts';
import type { UpsertEntry } from '../items/upsert.ts';
import { itemView } from '../items/view.ts';
import type { ItemView } from '../items/view.ts';
import type { LinesToUpsert } from './batch-pipeline.ts';
import { errorMessageOf, errorTypeOf } from './lines.ts';

/** A field a dry run would change: its stored and incoming values. */
export interface FieldChange {
  readonly stored: unknown;
  readonly incoming: unknown;
}

/**
 * A batch's results as its record stores them (batch-record.ts): for each line decided here, in
 * any order, its number, its outcome code and its item's id; a failed line, and every line of a
 * dry run, rendered whole. The record adds the lines its write decides (those with no entry yet)
 * and keeps, a line, its code and id: the rest is rendered when the results are read
 * (results.ts), from the job's file.
 */
export interface BatchResults {
  readonly lines: number[];
  /** A character a line: c created, u updated, n unchanged, r rendered. */
  readonly codes: string;
  readonly ids: Array<string | null>;
  /** The rendered lines, in line order. */
  readonly rendered: string[];
}

const CODES = { created: 'c', updated: 'u', unchanged: 'n' } as const;
export type Outcome = keyof typeof CODES | 'failed';
// Read back from the same table, so a code written is always one the reader knows.
export const OUTCOMES: Readonly<Record<string, Outcome>> = Object.fromEntries(Object.entries(CODES).map(([outcome, code]) => [code, outcome as Outcome]));

/** A line of the results file, its fields in the contract's order; absent ones left out. */
function renderedLine(lineNumber: number, status: Outcome, fields: {
  externalSystem?: string; externalId?: string | null; serviceId?: string; contentHash?: string;
  changedFields?: string[]; changes?: Record<string, FieldChange>; errorType?: ImportErrorType; errorMessage?: string;
}): string {
  const { externalSystem, externalId, serviceId, contentHash, changedFields, changes, errorType, errorMessage } = fields;
  return JSON.stringify({
    lineNumber, status, externalSystem, externalId: externalId ?? undefined, serviceId, contentHash, changedFields, changes, errorType, errorMessage,
  });
}

/**
 * Each line's result as far as the batch decides it, given the entries of its lines that went
 * through the upsert path (by position). An absent entry is an item the write's own statement
 * decides (`inWrite`); a dry run (`changes`, each would-be update's fields) renders every line.
 */
export function lineResults(lines: LinesToUpsert, entries: ReadonlyArray<UpsertEntry | undefined>, options: { changes?: ReadonlyMap<number, Record<string, FieldChange>>; inWrite?: boolean } = {}): BatchResults {
  const { changes, inWrite = false } = options;
  const decided: Array<{ line: number; code: string; id: string | null; text?: string }> = [];
  const render = (line: number, text: string) => decided.push({ line, code: 'r', id: null, text });
  for (const error of lines.lineErrors) {
    render(error.lineNumber, renderedLine(error.lineNumber, 'failed', { externalId: error.externalId, errorType: error.errorType, errorMessage: error.errorMessage }));
  }
  for (const { lineNumber, item } of lines.knownLines) decided.push({ line: lineNumber, code: 'n', id: item.id });
  const items = new Map(lines.items.valid.map((input) => [input.index, input.item]));
  lines.valueLines.forEach(({ lineNumber }, index) => {
    const entry = entries[index];
    const item = items.get(index);
    if (entry?.status === 'error') {
      render(lineNumber, renderedLine(lineNumber, 'failed', {
        ...(item ? { externalSystem: item.externalSystem } : {}), externalId: entry.externalId, errorType: errorTypeOf(entry.error), errorMessage: errorMessageOf(entry.error),
      }));
    } else if (entry === undefined || item === undefined) {
      // Positions must cover every line: a line left out would shift the ones after it.
      if (!inWrite || item === undefined) throw new Error(`line ${lineNumber} of the batch has no outcome`);
    } else if (changes) {
      const changed = changes.get(index);
      render(lineNumber, renderedLine(lineNumber, entry.status, {
        externalSystem: item.externalSystem, externalId: item.externalId, serviceId: entry.serviceId, contentHash: item.contentHash,
        ...(changed ? { changedFields: Object.keys(changed), changes: changed } : {}),
      }));
    } else {
      decided.push({ line: lineNumber, code: CODES[entry.status], id: entry.serviceId });
    }
  });
  decided.sort((a, b) => a.line - b.line);
  return {
    lines: decided.map((d) => d.line), codes: decided.map((d) => d.code).join(''), ids: decided.map((d) => d.id),
    rendered: decided.flatMap((d) => (d.text === undefined ? [] : [d.text])),
  };
}

/** The results file's line for a line whose outcome and item were kept as a code and an id (results.ts): rendered from the line's item. */
export function keptLineText(lineNumber: number, status: Outcome, item: NormalizedItem, serviceId: string, changedFields: string[] | null): string {
  return renderedLine(lineNumber, status, {
    externalSystem: item.externalSystem, externalId: item.externalId, serviceId, contentHash: item.contentHash,
    ...(changedFields ? { changedFields } : {}),
  });
}

/** The fields of the contract's Item an import line sets, as compared: names of categories and brands, media by URL, role and order. */
function comparable(item: NormalizedItem | ItemView): Record<string, unknown> {
  return {
    sku: item.sku, name: item.name, description: item.description, price: item.price, cost: item.cost, weight: item.weight,
    gtin13: item.gtin13, ncm: item.ncm, category: item.category?.name ?? null, brand: item.brand?.name ?? null, tags: item.tags,
    metadata: item.metadata, trackStock: item.trackStock, media: item.media.map((m) => ({ url: m.url, role: m.role, sortOrder: m.sortOrder })),
  };
}

// Categories and brands are matched case-insensitively (content-hash.ts): a change of case changes nothing.
const same = (field: string, a: unknown, b: unknown) =>
  (field === 'category' || field === 'brand') && typeof a === 'string' && typeof b === 'string'
    ? a.toLowerCase() === b.toLowerCase() : canonicalJson(a) === canonicalJson(b);

/** For a dry run's `updated` entries (by position), the fields the import would change, each with its stored and incoming value. */
export async function dryRunChanges(db: Db, catalogId: string, entries: readonly UpsertEntry[]): Promise<Map<number, Record<string, FieldChange>>> {
  const updated = entries.filter((entry): entry is Exclude<UpsertEntry, { status: 'error' }> => entry?.status === 'updated');
  const changes = new Map<number, Record<string, FieldChange>>();
  if (updated.length === 0) return changes;
  const found = await lookup(db, catalogId, updated.map((entry) => entry.item), true);
  for (const entry of updated) {
    const row = found.stored.get(identityKey(entry.item.externalSystem, entry.item.externalId));
    if (!row) continue;
    const stored = comparable(itemView(row));
    const incoming = comparable(entry.item);
    const fields: Record<string, FieldChange> = {};
    for (const field of Object.keys(incoming)) {
      if (!same(field, stored[field], incoming[field])) fields[field] = { stored: stored[field], incoming: incoming[field] };
    }
    changes.set(entry.index, fields);
  }
  return changes;
}
