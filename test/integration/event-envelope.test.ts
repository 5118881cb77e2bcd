// The event document's two builders on the real Postgres: the SQL one (the item write's) gives the bytes JSON.stringify gives the JS one's (domainEvent's).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ENVELOPE_FIELDS, domainEvent, envelopeSql } from '../../domain/events/envelope.ts';
import type { DomainEvent } from '../../domain/events/envelope.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { query, sql } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { freshDatabase } from '../helpers/database.ts';

let orm: Orm;

before(async () => {
  orm = await openDatabase({ databaseUrl: await freshDatabase(import.meta.url), logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'warn'), poolSize: 2 });
});

after(async () => {
  await orm?.close();
});

/** The event as the SQL builder writes it, each field's value sent as a parameter. */
async function inPostgres(event: DomainEvent<object>): Promise<string> {
  const [row] = await query<{ document: string }>(orm.em.fork(), 'test.envelope', sql`SELECT ${envelopeSql({
    id: sql`${event.id}::uuid`, type: sql`${event.type}::text`, catalogId: sql`${event.catalogId}::text`,
    resourceId: sql`${event.resourceId}::text`, createdAt: sql`${event.createdAt}::text`, data: sql`${JSON.stringify(event.data)}::text`,
  })} AS document`);
  return row!.document;
}

test('the envelope\'s fields come in one order, in the JS event and in its JSON', () => {
  const event = domainEvent({ type: 'item.created', catalogId: newId(), resourceId: 'A', data: { a: 1 } });
  assert.deepEqual(Object.keys(event), ENVELOPE_FIELDS);
  assert.deepEqual(Object.keys(JSON.parse(JSON.stringify(event))), ENVELOPE_FIELDS);
});

test('the SQL builder writes the bytes JSON.stringify writes of domainEvent, whatever the resource id holds', async () => {
  const resourceIds = ['A-1', 'quote " backslash \\ slash /', 'tab\tline\nreturn\r\u0001\u001f', 'açúcar 価格 😀 \u2028\u2029', "it's", ''];
  for (const resourceId of resourceIds) {
    const event = domainEvent({
      type: 'item.updated', catalogId: newId(), resourceId, now: new Date('2026-11-28T04:30:00.123Z'),
      data: { externalId: resourceId, price: 10.5, tags: ['x'], previousContentHash: 'abc' },
    });
    assert.equal(await inPostgres(event), JSON.stringify(event), resourceId);
  }
});
