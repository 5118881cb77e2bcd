// The event log through the API: GET /events (oldest or newest first, filters, cursor, after) and GET /events/{id}, each event as delivered; the retention purge.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { deleteSentOutbox, domainEvent, eventRow, messageRow, writeOutbox } from '../../domain/events/outbox.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let tenant: Tenant;
let other: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = (who: Tenant = tenant) => clientOptions(service.url, who.key);

/** The catalog's events as the outbox stored them, oldest first: what webhooks and Kafka carry. */
async function stored(catalogId: string): Promise<Array<Record<string, unknown>>> {
  const { rows } = await sql.query(
    `SELECT payload FROM outbox_events WHERE topic = 'catalog.events.v1' AND payload::jsonb ->> 'catalogId' = $1 ORDER BY event_id`, [catalogId]);
  return rows.map((r: { payload: string }) => JSON.parse(r.payload));
}

before(async () => {
  service = await startTestService(FILE);
  tenant = await service.newTenant();
  other = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'EV-A', name: 'A' }, opts()), 201);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'EV-A', name: 'A, renamed' }, opts()), 200);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'EV-B', name: 'B' }, opts()), 201);
  expectData(await api.deleteItem('erp', 'EV-B', opts()), 200);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'EV-OTHER', name: 'Other' }, opts(other)), 201);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

test("GET /events lists the catalog's events oldest first, each exactly as stored; pages follow nextCursor", async () => {
  const all = await stored(tenant.catalogId);
  assert.deepEqual(all.map((e) => [e.type, e.resourceId]), [
    ['item.created', 'EV-A'], ['item.updated', 'EV-A'], ['item.created', 'EV-B'], ['item.deleted', 'EV-B'],
  ]);
  const whole = expectData(await api.listEvents({}, opts()), 200);
  assert.deepEqual(whole.events, all);
  assert.equal(whole.nextCursor, null);

  const paged: unknown[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = expectData(await api.listEvents({ limit: 1, ...(cursor ? { cursor } : {}) }, opts()), 200);
    paged.push(...page.events);
    cursor = page.nextCursor ?? undefined;
    pages += 1;
  } while (cursor && pages < 10);
  assert.deepEqual(paged, all);
  assert.equal(pages, 4);

  // Another catalog sees only its own.
  assert.deepEqual(expectData(await api.listEvents({}, opts(other)), 200).events.map((e) => e.resourceId), ['EV-OTHER']);
});

test('filters: type, resourceId, after (the last event handled), since and until', async () => {
  const all = await stored(tenant.catalogId);
  const list = async (query: Parameters<typeof api.listEvents>[0]) =>
    expectData(await api.listEvents(query, opts()), 200).events.map((e) => e.id);
  const ids = all.map((e) => e.id as string);
  assert.deepEqual(await list({ $type: 'item.created' }), [ids[0], ids[2]]);
  assert.deepEqual(await list({ resourceId: 'EV-A' }), [ids[0], ids[1]]);
  assert.deepEqual(await list({ after: ids[1] }), [ids[2], ids[3]]);
  assert.deepEqual(await list({ after: ids[3] }), []);
  const third = all[2]!.createdAt as string;
  assert.deepEqual(await list({ since: third }), ids.filter((_, i) => (all[i]!.createdAt as string) >= third));
  assert.deepEqual(await list({ until: third }), ids.filter((_, i) => (all[i]!.createdAt as string) < third));
  // The same instant in another offset selects the same events.
  const offset = new Date(Date.parse(third) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
  assert.deepEqual(await list({ since: offset }), await list({ since: third }));
  assert.deepEqual(await list({ order: 'desc', since: third }), ids.filter((_, i) => (all[i]!.createdAt as string) >= third).reverse());
  assert.deepEqual(await list({ order: 'desc', until: third }), ids.filter((_, i) => (all[i]!.createdAt as string) < third).reverse());
  assert.deepEqual(await list({ order: 'desc', after: ids[3] }), []);
});

test('events of concurrent writers, whose outbox rows hold interleaving ids, are listed in id order at any page size, filter and position', async () => {
  const mixed = await service.newTenant();
  const em = service.orm.em.fork();
  const all = Array.from({ length: 40 }, (_, i) =>
    domainEvent({ type: i % 3 === 0 ? 'import.failed' : 'import.completed', catalogId: mixed.catalogId, resourceId: `R-${i % 4}`, data: { i } }));
  const ids = all.map((e) => e.id);
  const event = (i: number) => all[i]!;
  // Four transactions, each its own row: one spans all the others' ids; one has a single event.
  const rows = [[0, 10, 20, 30, 39], [1, 2, 3, 4, 5, 6, 7, 8, 9], [11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22], [23]];
  const rest = ids.map((_, i) => i).filter((i) => !rows.flat().includes(i));
  for (const members of [...rows, rest]) await writeOutbox(em, members.map((i) => eventRow(event(i))), { notify: false });
  assert.equal(Number((await sql.query('SELECT count(*) FROM outbox WHERE catalog_id = $1', [mixed.catalogId])).rows[0].count), 5);

  const walk = async (query: Parameters<typeof api.listEvents>[0]) => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = expectData(await api.listEvents({ ...query, ...(cursor ? { cursor } : {}) }, opts(mixed)), 200);
      seen.push(...page.events.map((e) => e.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor && seen.length <= ids.length);
    return seen;
  };
  for (const limit of [1, 2, 3, 7, 100]) {
    assert.deepEqual(await walk({ limit }), ids, `limit ${limit}`);
    assert.deepEqual(await walk({ limit, $type: 'import.failed' }), all.filter((e) => e.type === 'import.failed').map((e) => e.id), `failed, limit ${limit}`);
    assert.deepEqual(await walk({ limit, resourceId: 'R-1', after: ids[10] }), all.filter((e, i) => i > 10 && e.resourceId === 'R-1').map((e) => e.id), `R-1 after 10, limit ${limit}`);
    // Newest first: the same events in the opposite order, whichever rows hold them.
    assert.deepEqual(await walk({ limit, order: 'desc' }), ids.toReversed(), `newest first, limit ${limit}`);
    assert.deepEqual(await walk({ limit, order: 'desc', $type: 'import.failed' }), all.filter((e) => e.type === 'import.failed').map((e) => e.id).reverse(), `failed newest first, limit ${limit}`);
    assert.deepEqual(await walk({ limit, order: 'desc', resourceId: 'R-1', after: ids[10] }), all.filter((e, i) => i > 10 && e.resourceId === 'R-1').map((e) => e.id).reverse(), `R-1 back to 10, limit ${limit}`);
  }
  const ascending = expectData(await api.listEvents({ limit: 2 }, opts(mixed)), 200).nextCursor!;
  assert.equal(expectStatus(await api.listEvents({ limit: 2, order: 'desc', cursor: ascending }, opts(mixed)), 400).error.code, 'validation_error', 'a cursor is read in its own order');
  for (const i of [0, 10, 23, 39]) assert.deepEqual(expectData(await api.getEvent(ids[i]!, opts(mixed)), 200), JSON.parse(eventRow(event(i)).payload));
});

test('GET /events/{id} answers the event as delivered; 404 for another catalog\'s or an unknown one; 400 for a bad id or cursor', async () => {
  const [first] = await stored(tenant.catalogId);
  assert.deepEqual(expectData(await api.getEvent(first!.id as string, opts()), 200), first);
  assert.equal(expectStatus(await api.getEvent(first!.id as string, opts(other)), 404).error.code, 'not_found');
  assert.equal(expectStatus(await api.getEvent('0192f620-5e6f-7a7b-9c8d-9e0f1a2b3c4d', opts()), 404).error.code, 'not_found');
  assert.equal(expectStatus(await api.getEvent('not-an-id', opts()), 400).error.code, 'validation_error');
  assert.equal(expectStatus(await api.listEvents({ cursor: 'bm90LWEtY3Vyc29y' }, opts()), 400).error.code, 'validation_error');
});

test('the purge keeps sent events for the retention period and sent work messages for a day; unsent rows stay', async () => {
  const em = service.orm.em.fork();
  const event = domainEvent({ type: 'webhook.test', catalogId: tenant.catalogId, resourceId: 'purge', data: {} });
  const work = messageRow({ topic: 'catalog.media.v1', key: 'purge', body: { purge: true } });
  const unsent = messageRow({ topic: 'catalog.media.v1', key: 'purge-unsent', body: { purge: true } });
  // Apart: records one call writes for one topic share a row, sent together.
  await writeOutbox(em, [eventRow(event), work], { notify: false });
  await writeOutbox(em, [unsent], { notify: false });
  // Sent two days ago: past a day, within thirty.
  await sql.query(`UPDATE outbox SET sent_at = now() - interval '2 days' WHERE event_ids && $1::uuid[]`, [[event.id, work.eventId]]);
  const present = async () => (await sql.query('SELECT event_id FROM outbox_events WHERE event_id = ANY($1::uuid[])', [[event.id, work.eventId, unsent.eventId]]))
    .rows.map((r: { event_id: string }) => r.event_id).sort();
  const day = 24 * 3600_000;
  await deleteSentOutbox(em, { events: new Date(Date.now() - 30 * day), others: new Date(Date.now() - day) }, 1000);
  assert.deepEqual(await present(), [event.id, unsent.eventId].sort(), 'the work message went, the event stayed');
  assert.deepEqual(expectData(await api.getEvent(event.id, opts()), 200), JSON.parse(eventRow(event).payload));
  await deleteSentOutbox(em, { events: new Date(Date.now() - day), others: new Date(Date.now() - day) }, 1000);
  assert.deepEqual(await present(), [unsent.eventId], 'past its retention the event went too; the unsent row stays');
  assert.equal(expectStatus(await api.getEvent(event.id, opts()), 404).error.code, 'not_found');
});
