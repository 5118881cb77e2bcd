// Single upserts of a catalog that arrive together share their statements (group commit).
import type { EntityManager } from '@mikro-orm/postgresql';
import { normalizeItem } from './payload.ts';
import { addNormalized, upsertPrepared } from './upsert.ts';
import type { PreparedItems, UpsertEntry, ValidInput } from './upsert.ts';

// A group is written by one statement; past this size the rest wait for the next one, so one
// group's latency stays bounded however many requests queue.
const MAX_GROUP = 200;

interface Waiter {
  item: ValidInput['item'];
  resolve(entry: UpsertEntry): void;
  reject(error: unknown): void;
}

/** Per catalog: the valid upserts waiting while that catalog's group is in the database. */
const waiting = new Map<string, Waiter[]>();

/**
 * Upserts one item, answering with the stored item (`stored`, unless a lost race leaves it to
 * the caller to read back). An upsert that finds its catalog's previous group still in the
 * database waits for it, and the next group takes every upsert that waited: one lookup and one
 * write for all of them instead of two statements each, the same outcomes as if they had run
 * one after the other in arrival order. A request alone is sent at once, so this adds no delay;
 * under load it turns many small statements, each with its round trip, plan, executor start and
 * WAL flush, into few larger ones. A group is one bulk upsert: a failing item never affects the
 * others.
 */
export function upsertOne(em: EntityManager, catalogId: string, input: unknown): Promise<UpsertEntry> {
  const prepared: PreparedItems = { entries: [], valid: [] };
  addNormalized(prepared, normalizeItem(input, ''), 0);
  const [invalid] = prepared.entries;
  if (invalid) return Promise.resolve(invalid);
  const item = prepared.valid[0]!.item;
  return new Promise((resolve, reject) => {
    const queue = waiting.get(catalogId);
    if (queue) {
      queue.push({ item, resolve, reject });
      return;
    }
    const started: Waiter[] = [{ item, resolve, reject }];
    waiting.set(catalogId, started);
    void drain(em, catalogId, started);
  });
}

async function drain(em: EntityManager, catalogId: string, queue: Waiter[]): Promise<void> {
  while (queue.length > 0) {
    const group = queue.splice(0, MAX_GROUP);
    try {
      await writeGroup(em, catalogId, group);
    } catch (error) {
      if (group.length === 1) group[0]!.reject(error);
      // Whatever failed the shared statement must fail only the request it belongs to: each
      // member is written again on its own, in arrival order.
      else for (const waiter of group) await writeGroup(em, catalogId, [waiter]).catch(waiter.reject);
    }
  }
  waiting.delete(catalogId);
}

async function writeGroup(em: EntityManager, catalogId: string, group: readonly Waiter[]): Promise<void> {
  const valid = group.map(({ item }, index) => ({ index, item }));
  const entries = await upsertPrepared(em, catalogId, { entries: new Array(group.length), valid }, { returnStored: true });
  group.forEach((waiter, i) => waiter.resolve(entries[i]!));
}
