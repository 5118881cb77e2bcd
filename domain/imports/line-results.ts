// What happened to each line of a batch, for the job's results file; in a dry run, each would-be update's fields with their stored and incoming values.
import type { ImportErrorType } from '../../generated/client.ts';
import type { Db } from '../../platform/db/sql.ts';
import { canonicalJson } from '../items/content-hash.ts';
import { identityKey, identityOf } from '../items/keys.ts';
import type { NormalizedItem } from '../items/normalized-item.ts';
import { lookup } from '../items/store.ts';
import type { UpsertEntry } from '../items/upsert.ts';
import { itemView } from '../items/view.ts';
import type { ItemView } from '../items/view.ts';
import type { LinesToUpsert } from './batch-pipeline.ts';
import type { FileLine } from './line-reader.ts';
import { errorMessageOf, errorTypeOf } from './lines.ts';

/** `pending`: an item the write's own statement decides (batch-record.ts fills it in from the rows written). */
export type LineStatus = 'created' | 'updated' | 'unchanged' | 'failed' | 'pending';

/** A field a dry run would change: its stored and incoming values. */
export interface FieldChange {
  readonly stored: unknown;
  readonly incoming: unknown;
}

/** A line's result as the batch's record takes it (short keys: it is sent as JSON with every batch). */
export interface LineResult {
  l: number;
  st: LineStatus;
  s?: string;
  e: string | null;
  id?: string;
  h?: string;
  /** Fill in the serviceId, contentHash or changedFields from the stored item. */
  f?: boolean;
  c?: string[];
  ch?: Record<string, FieldChange>;
  t?: ImportErrorType;
  m?: string;
}

/** Each line of a batch's result, given the entries of its lines that went through the upsert path (by position; an absent one is pending). */
export function lineResults(lines: LinesToUpsert, entries: ReadonlyArray<UpsertEntry | undefined>, changes?: ReadonlyMap<number, Record<string, FieldChange>>): LineResult[] {
  const results: LineResult[] = lines.lineErrors.map((error) =>
    ({ l: error.lineNumber, st: 'failed', e: error.externalId, t: error.errorType, m: error.errorMessage }));
  for (const known of lines.knownLines) {
    const { externalSystem, externalId } = identityOf(known.key);
    results.push({ l: known.lineNumber, st: 'unchanged', s: externalSystem, e: externalId, f: true });
  }
  const items = new Map(lines.items.valid.map((input) => [input.index, input.item]));
  lines.valueLines.forEach((line, index) => {
    const entry = entries[index];
    const item = items.get(index);
    if (entry?.status === 'error') {
      results.push({ l: line.lineNumber, st: 'failed', ...(item ? { s: item.externalSystem } : {}), e: entry.externalId, t: errorTypeOf(entry.error), m: errorMessageOf(entry.error) });
    } else if (item === undefined) {
      return;
    } else if (entry === undefined) {
      results.push({ l: line.lineNumber, st: 'pending', s: item.externalSystem, e: item.externalId, h: item.contentHash });
    } else {
      const changed = changes?.get(index);
      results.push({
        l: line.lineNumber, st: entry.status, s: item.externalSystem, e: item.externalId, id: entry.serviceId, h: item.contentHash,
        ...(changed ? { c: Object.keys(changed), ch: changed } : entry.status === 'updated' ? { f: true } : {}),
      });
    }
  });
  return results;
}

/** The results of lines proved stored by their fingerprint (`known`: by position, the identity key). */
export function knownResults(lines: readonly FileLine[], known: ReadonlyMap<number, string>): LineResult[] {
  return [...known].map(([i, key]) => {
    const { externalSystem, externalId } = identityOf(key);
    return { l: lines[i]!.lineNumber, st: 'unchanged', s: externalSystem, e: externalId, f: true };
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
