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
import { errorMessageOf, errorTypeOf } from './lines.ts';

/** A line's outcome in the results file (the contract's ImportLineResult). */
type Outcome = 'created' | 'updated' | 'unchanged' | 'failed';

/** A field a dry run would change: its stored and incoming values. */
export interface FieldChange {
  readonly stored: unknown;
  readonly incoming: unknown;
}

/**
 * A line's result as the batch's record takes it: rendered here (`r`, a line of the results
 * file), or what the database fills in (batch-record.ts): an update's changed fields, which the
 * write recorded on the item, and the outcome of an item the write's own statement decides
 * (`pending`).
 */
export type LineResult =
  | { l: number; r: string }
  | { l: number; st: 'pending' | 'updated'; s: string; e: string; h: string; id?: string };

/** A line of the results file, its fields in the contract's order; absent ones left out. */
function rendered(lineNumber: number, status: Outcome, fields: {
  externalSystem?: string; externalId?: string | null; serviceId?: string; contentHash?: string;
  changedFields?: string[]; changes?: Record<string, FieldChange>; errorType?: ImportErrorType; errorMessage?: string;
}): LineResult {
  const { externalSystem, externalId, serviceId, contentHash, changedFields, changes, errorType, errorMessage } = fields;
  return { l: lineNumber, r: JSON.stringify({
    lineNumber, status, externalSystem, externalId: externalId ?? undefined, serviceId, contentHash, changedFields, changes, errorType, errorMessage,
  }) };
}

/** Each line of a batch's result, given the entries of its lines that went through the upsert path (by position; an absent one is pending). */
export function lineResults(lines: LinesToUpsert, entries: ReadonlyArray<UpsertEntry | undefined>, changes?: ReadonlyMap<number, Record<string, FieldChange>>): LineResult[] {
  const results: LineResult[] = lines.lineErrors.map((error) =>
    rendered(error.lineNumber, 'failed', { externalId: error.externalId, errorType: error.errorType, errorMessage: error.errorMessage }));
  for (const { lineNumber, item } of lines.knownLines) {
    const { externalSystem, externalId } = identityOf(item.key);
    results.push(rendered(lineNumber, 'unchanged', { externalSystem, externalId, serviceId: item.id, contentHash: item.contentHash }));
  }
  const items = new Map(lines.items.valid.map((input) => [input.index, input.item]));
  lines.valueLines.forEach((line, index) => {
    const entry = entries[index];
    const item = items.get(index);
    const identity = item ? { s: item.externalSystem, e: item.externalId, h: item.contentHash } : undefined;
    if (entry?.status === 'error') {
      results.push(rendered(line.lineNumber, 'failed', {
        ...(item ? { externalSystem: item.externalSystem } : {}), externalId: entry.externalId, errorType: errorTypeOf(entry.error), errorMessage: errorMessageOf(entry.error),
      }));
    } else if (identity === undefined) {
      return;
    } else if (entry === undefined) {
      results.push({ l: line.lineNumber, st: 'pending', ...identity });
    } else if (entry.status === 'updated' && !changes) {
      results.push({ l: line.lineNumber, st: 'updated', ...identity, id: entry.serviceId });
    } else {
      const changed = changes?.get(index);
      results.push(rendered(line.lineNumber, entry.status, {
        externalSystem: identity.s, externalId: identity.e, serviceId: entry.serviceId, contentHash: identity.h,
        ...(changed ? { changedFields: Object.keys(changed), changes: changed } : {}),
      }));
    }
  });
  return results;
}

/** The results file's line for a line proved stored by its fingerprint. */
export function knownLineText(lineNumber: number, item: NormalizedItem, serviceId: string): string {
  return (rendered(lineNumber, 'unchanged', {
    externalSystem: item.externalSystem, externalId: item.externalId, serviceId, contentHash: item.contentHash,
  }) as { r: string }).r;
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
