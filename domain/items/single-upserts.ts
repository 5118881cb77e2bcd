// Single upserts of a catalog that arrive together share their statements (group commit).
import { groupCommit } from '../../platform/group-commit.ts';
import { traceparent } from '../../platform/tracing.ts';
import type { Db } from '../../platform/db/sql.ts';
import { normalizeItem } from './payload.ts';
import type { NormalizedItem } from './normalized-item.ts';
import { addNormalized, upsertPrepared } from './upsert.ts';
import type { PreparedItems, UpsertEntry } from './upsert.ts';
import type { VersionSource } from './version-source.ts';

interface SingleUpsert {
  /** The request's entity manager, made on first use: a group uses only its first member's. */
  readonly db: () => Db;
  readonly item: NormalizedItem;
  readonly mediaRefreshAgeHours: number;
  /** The request's trace context: the group is written in no request's context. */
  readonly traceparent: string | undefined;
  readonly source: VersionSource;
}

/**
 * A group is one bulk upsert, written through the entity manager of its first request: a
 * failing item never affects the others, and a failed statement is written again member by
 * member, so its failure reaches only the request it belongs to. Past 200 members the rest
 * wait for the next group, so one group's latency stays bounded however many requests queue.
 */
const submit = groupCommit<SingleUpsert, UpsertEntry>(async (catalogId, group) => {
  const valid = group.map(({ item, traceparent: tp }, index) => (tp === undefined ? { index, item } : { index, item, traceparent: tp }));
  const [{ db, mediaRefreshAgeHours }] = group as [SingleUpsert];
  return upsertPrepared(db(), catalogId, { entries: new Array(group.length), valid }, {
    mediaRefreshAgeHours, returnStored: true, sourceOf: (index) => group[index]!.source,
  });
}, { maxGroup: 200, retryAlone: true, name: 'upsert group' });

/**
 * Upserts one item, answering with the stored item (`stored`, unless a lost race leaves it to
 * the caller to read back). Upserts of a catalog that arrive while its previous group is in the
 * database are written together, one lookup and one write for all of them instead of two
 * statements each, with the same outcomes as one after the other in arrival order.
 */
export function upsertOne(db: () => Db, catalogId: string, input: unknown, options: { mediaRefreshAgeHours: number; source: VersionSource }): Promise<UpsertEntry> {
  const prepared: PreparedItems = { entries: [], valid: [] };
  addNormalized(prepared, normalizeItem(input, ''), 0);
  const [invalid] = prepared.entries;
  if (invalid) return Promise.resolve(invalid);
  return submit(catalogId, { db, item: prepared.valid[0]!.item, mediaRefreshAgeHours: options.mediaRefreshAgeHours, traceparent: traceparent(), source: options.source });
}
