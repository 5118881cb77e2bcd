// The service on a three-broker cluster under imports, upserts, webhooks and images while a leader dies, two brokers go away and a broker's disk is wiped: every count exact, nothing acknowledged lost.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { Item, ItemPayload } from '../../generated/client.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { checkedFetch } from '../helpers/contract-check.ts';
import { makeImage } from '../helpers/image-origin.ts';
import { item as importLine, jsonl, runImport } from '../helpers/imports.ts';
import { privateCluster, readTopic } from '../helpers/kafka.ts';
import { eventually, startMediaBed } from '../helpers/media.ts';
import { metricValue } from '../helpers/metrics.ts';
import type { MediaBed } from '../helpers/media.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
const cluster = privateCluster('kafka-test-cluster-service', 3);
const IMAGES = 12;
const IMPORT_LINES = 600;
// Every BAD_EVERY-th import line has a GTIN of the wrong length.
const BAD_EVERY = 40;
const BULK_BODIES = 3;
const SINGLES = 20;
// Past the relay's and the consumers' longest backoff (30 s) and a broker's restart on a busy machine: a deadline, not a speed.
const RECOVER_MS = 180_000;
const HOOK = '/cluster';

let bed: MediaBed;
let receiver: Receiver;
let brokers: string[];
const written = new Map<string, ItemPayload>();
const errorLines = new Map<string, number>();

const opts = () => clientOptions(bed.service.url, bed.tenant.key);
const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

function payload(phase: string, n: number): ItemPayload {
  const withImage = n % 5 === 0;
  return {
    externalSystem: 'erp', externalId: `${phase}-${n}`, sku: `${phase}-SKU-${n}`, name: `Item ${n} of ${phase}`, price: n,
    ...(withImage ? { media: [{ url: bed.origin.at(`/img/${n % IMAGES}.png`), role: 'primary' as const, sortOrder: 0 }] } : {}),
  };
}

/** One phase's traffic: bulk bodies, single upserts and an import with bad lines, side by side; every write must be answered. */
async function traffic(phase: string): Promise<void> {
  const bulk = async () => {
    for (let b = 0; b < BULK_BODIES; b++) {
      const items = Array.from({ length: 100 }, (_, i) => payload(`${phase}-bulk`, b * 100 + i));
      const answer = expectData(await api.bulkUpsertItems({ items }, opts()), 200);
      assert.equal(answer.summary.failed, 0);
      for (const item of items) written.set(item.externalId, item);
    }
  };
  const singles = async () => {
    for (let n = 0; n < SINGLES; n++) {
      const item = payload(`${phase}-single`, n);
      const answer = await api.upsertItem(item, opts());
      assert.ok(answer.status === 200 || answer.status === 201, `single upsert answered ${answer.status}`);
      written.set(item.externalId, item);
    }
  };
  const importing = async () => {
    const lines = Array.from({ length: IMPORT_LINES }, (_, i) => importLine(`${phase}-import-${i}`, i % BAD_EVERY === 0 ? { gtin13: '123' } : {}));
    const job = await runImport(opts(), jsonl(lines));
    assert.equal(job.status, 'completed_with_errors');
    assert.deepEqual(job.counts, { total: IMPORT_LINES, processed: IMPORT_LINES, succeeded: IMPORT_LINES - IMPORT_LINES / BAD_EVERY, failed: IMPORT_LINES / BAD_EVERY, unchanged: 0 });
    lines.forEach((line, i) => { if (i % BAD_EVERY !== 0) written.set(line.externalId, line); });
  };
  await Promise.all([bulk(), singles(), importing()]);
}

const unsent = async () => (await bed.sql.query('SELECT count(*)::int AS n FROM outbox_events WHERE sent_at IS NULL')).rows[0].n as number;

/** Waits until the outbox is empty; returns how long that took. */
async function drained(): Promise<number> {
  const began = Date.now();
  await eventually(async () => ((await unsent()) === 0 ? true : undefined), 'the outbox to drain', RECOVER_MS);
  return Date.now() - began;
}

/** Runs a phase's traffic with a fault (which returns its heal) in the middle of it, heals once the writes are in, and prints how long publishing took to catch up. */
async function phase(name: string, fault: () => Promise<() => Promise<unknown>>): Promise<void> {
  const load = traffic(name);
  // The fault lands while the phase's writes are on their way: once its first events are published.
  await eventually(async () => ((await bed.sql.query(`SELECT count(*)::int AS n FROM outbox_events WHERE sent_at IS NOT NULL AND payload LIKE $1`, [`%${name}-%`])).rows[0].n > 0 ? true : undefined),
    `${name}: the first events published`, RECOVER_MS);
  const heal = await fault();
  await load;
  const healedAt = Date.now();
  await heal();
  const wholeAt = Date.now();
  const catchUp = await drained();
  process.stdout.write(`# ${name}: every write answered; the cluster whole again ${seconds(wholeAt - healedAt)} after the writes were in, the outbox empty ${seconds(catchUp)} after that\n`);
}

async function busiestLeader(): Promise<number> {
  const counts = new Map<number, number>();
  for (const leader of (await cluster.leaderOf(bed.service.kafka.topic(TOPICS.events))).values()) counts.set(leader, (counts.get(leader) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]![0];
}

before(async () => {
  brokers = await cluster.start();
  bed = await startMediaBed(FILE, {
    KAFKA_BROKERS: brokers.join(','), LOG_LEVEL: 'warn', WEBHOOK_ALLOW_HTTP: 'true',
    // A short ladder: a delivery that met an outage is attempted again within seconds.
    WEBHOOK_RETRY_DELAYS_MS: '0,500,1000,2000,4000,8000,16000,32000',
  });
  for (let n = 0; n < IMAGES; n++) bed.origin.serve(`/img/${n}.png`, { body: await makeImage('png', 20 + n, 20, n + 1), contentType: 'image/png' });
  receiver = await startReceiver();
  const hook = expectData(await api.createWebhook({ url: receiver.url(HOOK), events: ['*'] }, {}, opts()), 201);
  receiver.secrets(HOOK, [hook.secret]);
});

after(async () => {
  await receiver?.close();
  await bed?.close();
  await cluster.remove();
});

test('a leader killed, two of three brokers away, and a broker wiped, each under load: every event, record and delivery arrives, counts exact', async () => {
  await phase('kill', async () => {
    const leader = await busiestLeader();
    await cluster.kill(leader);
    return () => cluster.restart(leader);
  });

  await phase('two-down', async () => {
    await cluster.stop(2);
    await cluster.stop(3);
    const ready = await checkedFetch(`${bed.service.url}/readyz`);
    assert.equal(ready.response.status, 200, 'the API stays ready: events wait in the outbox');
    await eventually(async () => {
      const { body } = await checkedFetch(`${bed.service.url}/readyz`);
      return (body as { checks: { kafka: string } }).checks.kafka === 'error' ? true : undefined;
    }, 'readiness to report that the cluster takes no writes', RECOVER_MS);
    // A write now still answers, and waits in the outbox (the phase's own writes may all be published by now).
    const held = payload('two-down-held', 1);
    const answer = await api.upsertItem(held, opts());
    assert.equal(answer.status, 201, `an upsert while the cluster takes no writes answered ${answer.status}`);
    written.set(held.externalId, held);
    // What the alerts read (monitoring/alerts.yml, CatalogDependencyDown and CatalogOutboxLagging; their timing is promtool's test).
    assert.equal(await metricValue(bed.service.opsUrl, 'catalog_dependency_up', { dependency: 'kafka' }), 0);
    await eventually(async () => ((await metricValue(bed.service.opsUrl, 'catalog_outbox_lag_seconds') ?? 0) > 0 ? true : undefined),
      'the outbox lag to show on /metrics', RECOVER_MS);
    return () => Promise.all([cluster.restart(2), cluster.restart(3)]);
  });

  await phase('wipe', async () => {
    const leader = await busiestLeader();
    await cluster.wipe(leader);
    return async () => {
      await cluster.restart(leader);
      // Its disk empty, it copies every partition back from the others before it is in sync again.
      await eventually(async () => {
        const isr = await cluster.isrOf(bed.service.kafka.topic(TOPICS.events));
        return [...isr.values()].every((nodes) => nodes.includes(leader)) ? true : undefined;
      }, `node ${leader} back in sync on every partition`, RECOVER_MS);
    };
  });

  // Every item as written, through the API.
  const stored = new Map<string, Item>();
  let cursor: string | undefined;
  do {
    const page = expectData(await api.listItems({ limit: 200, ...(cursor ? { cursor } : {}) }, opts()), 200);
    for (const item of page.items) stored.set(item.externalId, item);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  assert.equal(stored.size, written.size, 'every acknowledged write is stored, once');
  for (const [externalId, item] of written) assert.equal(stored.get(externalId)?.name, item.name, externalId);

  // Every event the outbox holds is on the events topic, and every item's latest changelog record is the API's item.
  const events = (await bed.sql.query(`SELECT event_id::text AS id, type FROM outbox_events WHERE topic = $1 AND catalog_id = $2`, [TOPICS.events, bed.tenant.catalogId])).rows as Array<{ id: string; type: string }>;
  const onTopic = new Map<string, number>();
  for (const record of await readTopic(brokers, bed.service.kafka.topic(TOPICS.events), RECOVER_MS)) {
    const id = record.headers['event-id'] ?? '';
    onTopic.set(id, (onTopic.get(id) ?? 0) + 1);
  }
  assert.deepEqual(events.filter((e) => !onTopic.has(e.id)).map((e) => `${e.type} ${e.id}`), [], 'events missing from the topic');
  const latest = new Map<string, { contentHash: string } | null>();
  for (const record of await readTopic(brokers, bed.service.kafka.topic(TOPICS.items), RECOVER_MS)) {
    const key = JSON.parse(record.key!) as string[];
    if (key[0] === bed.tenant.catalogId) latest.set(key[2]!, record.value ? JSON.parse(record.value.toString()) : null);
  }
  for (const [externalId, item] of stored) assert.equal(latest.get(externalId)?.contentHash, item.contentHash, `the changelog's ${externalId}`);

  // Every event delivered to the webhook, signed; duplicates allowed (receivers deduplicate by id).
  const receipts = await receiver.waitFor('every event delivered', (all) => {
    const ids = new Set(all.map((r) => r.event.id));
    return events.every((e) => ids.has(e.id));
  }, RECOVER_MS);
  assert.ok(receipts.every((r) => r.signedWith.length > 0), 'every delivery is signed with the webhook secret');
  const images = (await bed.sql.query(`SELECT status, count(*)::int AS n FROM media_assets WHERE catalog_id = $1 GROUP BY status`, [bed.tenant.catalogId])).rows;
  assert.deepEqual(images, [{ status: 'ingested', n: IMAGES }], 'every image ingested once, whatever the brokers did');

  for (const line of bed.service.logged()) {
    if ((line.level as number) >= 50) errorLines.set(String(line.msg), (errorLines.get(String(line.msg)) ?? 0) + 1);
  }
  const duplicates = { events: [...onTopic.values()].reduce((n, c) => n + c - 1, 0), deliveries: receipts.length - new Set(receipts.map((r) => r.event.id)).size };
  process.stdout.write(`# ${written.size} items, ${events.length} events: duplicates on the topic ${duplicates.events}, deliveries ${duplicates.deliveries}; `
    + `error lines by kind: ${JSON.stringify(Object.fromEntries(errorLines))}\n`);
});
