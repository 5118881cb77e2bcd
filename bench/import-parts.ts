// `npm run bench:import-parts`: each part of a fresh import run alone, with the service's own code, and the CPU a line costs in it.
//
// The parts a fresh line cannot do without (the spec's upsert in transactions of 100, its
// item.created event relayed to Kafka and read back by the webhook fan-out), each measured on
// its own, with nothing else running: their sum is the least CPU a fresh line costs this machine,
// printed beside what its cores allow at bench:import's target of 20,000 lines/s. CPU is read
// from /proc: this process, every Postgres process and the Kafka broker.
import { Readable } from 'node:stream';
import { resolve } from 'node:path';
import { createCatalog } from '../domain/access/catalogs.ts';
import { lineFingerprint } from '../domain/imports/fingerprint.ts';
import { readLines } from '../domain/imports/line-reader.ts';
import { parseLine } from '../domain/imports/lines.ts';
import { normalizeItem } from '../domain/items/payload.ts';
import type { NormalizeResult } from '../domain/items/normalized-item.ts';
import { addNormalized, upsertPrepared } from '../domain/items/upsert.ts';
import type { PreparedItems } from '../domain/items/upsert.ts';
import { createOutboxRelay } from '../consumers/relay/outbox-relay.ts';
import { loadConfig } from '../platform/config/config.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { createKafkaClient } from '../platform/kafka/client.ts';
import { TOPICS, allTopicNames } from '../platform/kafka/topics.ts';
import { createLogger } from '../platform/log/logger.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import { budgetPerLine, cpuPerUnit, cpuSnapshot } from './cpu.ts';
import { dropBenchDatabase, freshBenchDatabase } from './database.ts';
import { benchLine } from './import-lines.ts';
import { cliActor } from '../platform/actor.ts';

const LINES = Number(process.env.BENCH_LINES ?? 100_000);
// The spec's transaction size, as the consumer commits new lines.
const BATCH = 100;
const logger = createLogger('warn');
const adminUrl = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const brokers = process.env.KAFKA_BROKERS?.split(',') ?? (await ensureKafka({ dataDir: resolve('.data') })).brokers;
const prefix = `bench-parts.${Date.now().toString(36)}.`;
const roles = new Map([['this script', process.pid]]);

/** CPU per line of `part` (µs by process group). */
async function measure(part: () => Promise<void>): Promise<Map<string, number>> {
  const before = cpuSnapshot(roles);
  await part();
  return cpuPerUnit(before, cpuSnapshot(roles), LINES);
}

const DB_NAME = 'catalog_bench_import_parts';
// As the import's batches commit (RECORD_BATCH): no wait for the WAL flush.
const databaseUrl = await freshBenchDatabase(adminUrl, DB_NAME, ['synchronous_commit = off']);
const orm = await openDatabase({ databaseUrl, logger, poolSize: 2 });
const catalog = await createCatalog(orm.em.fork(), { name: 'bench', ownerEmail: 'bench@merchant.example' }, cliActor());
const kafka = await createKafkaClient(loadConfig({ ...process.env, KAFKA_BROKERS: brokers.join(','), LOG_LEVEL: 'warn' }), logger, { topicPrefix: prefix });
await kafka.ensureTopics();
const file = Buffer.from(Array.from({ length: LINES }, (_, i) => `${benchLine(i)}\n`).join(''));
const chunks = function* () {
  for (let at = 0; at < file.length; at += 64 * 1024) yield file.subarray(at, at + 64 * 1024);
};

/** Each line as the consumer reads it: split from the file, fingerprinted, parsed, validated, normalized and hashed. */
async function* readFile(): AsyncGenerator<{ fingerprint: string; normalized: NormalizeResult }> {
  for await (const line of readLines(Readable.from(chunks()))) {
    const parsed = parseLine(line);
    if (!parsed.ok) throw new Error(`line ${line.lineNumber}: ${parsed.error.errorMessage}`);
    yield { fingerprint: lineFingerprint(line.bytes!), normalized: normalizeItem(parsed.value) };
  }
}

// 1. The consumer's own work on a line.
const lineCpu = await measure(async () => {
  for await (const _ of readFile()) {
    // Reading is the work.
  }
});

// 2. The same, and the upsert path 100 lines at a time: the lookups, then the items and their
// events in one statement. Streamed as the consumer does; reported without part 1's share.
const writeCpu = await measure(async () => {
  let items: PreparedItems = { entries: [], valid: [] };
  const upsert = async () => {
    const entries = await upsertPrepared(orm.em.fork(), catalog.id, items, { mediaRefreshAgeHours: 24 });
    if (entries.length !== items.valid.length || entries.some((entry) => entry.status !== 'created')) throw new Error('a line was not created');
    items = { entries: [], valid: [] };
  };
  for await (const { normalized, fingerprint } of readFile()) {
    addNormalized(items, normalized, items.valid.length, fingerprint);
    if (items.valid.length === BATCH) await upsert();
  }
  if (items.valid.length > 0) await upsert();
});
writeCpu.set('this script', writeCpu.get('this script')! - lineCpu.get('this script')!);

// 3. The relay: each line's item.created event and changelog record from the outbox to Kafka, claimed 500 at a time.
const relay = createOutboxRelay({ orm, databaseUrl, kafka, logger, batchSize: 500 });
let relayed = 0;
const relayCpu = await measure(async () => {
  for (let sent = await relay.relayOnce(); sent > 0; sent = await relay.relayOnce()) relayed += sent;
});
if (relayed !== LINES) throw new Error(`relayed ${relayed} outbox rows, not ${LINES} (a line's event and its changelog record share one)`);

// 4. The events read back, as the webhook fan-out reads them: each message decoded and parsed, nothing else.
let readBack = 0;
let allRead!: () => void;
const done = new Promise<void>((resolveDone) => { allRead = resolveDone; });
let consumer: Awaited<ReturnType<typeof kafka.runConsumer>> | undefined;
const readBackCpu = await measure(async () => {
  consumer = await kafka.runConsumer({
    groupId: `${prefix}read-back`, topics: [TOPICS.events], fromBeginning: true,
    eachBatch: async ({ batch }) => {
      for (const message of batch.messages) JSON.parse(message.value!.toString('utf8'));
      readBack += batch.messages.length;
      if (readBack >= LINES) allRead();
    },
  });
  await done;
});
await consumer?.stop();

const parts: Array<[string, Map<string, number>]> = [
  ['read, parse, validate and hash a line', lineCpu],
  [`upsert it (lookups, write; ${BATCH} a statement)`, writeCpu],
  ['relay its event and changelog record to Kafka', relayCpu],
  ['read its event back (fan-out)', readBackCpu],
];
const groups = ['this script', 'Postgres', 'broker'];
const cell = (us: number | undefined) => (us === undefined || Math.round(us * 10) === 0 ? '-' : us.toFixed(1)).padStart(12);
console.log(`${LINES.toLocaleString('en-US')} fresh lines, each part alone: CPU per line (µs)`);
console.log(`${'part'.padEnd(44)}${groups.map((g) => g.padStart(12)).join('')}${'total'.padStart(12)}`);
let floor = 0;
for (const [what, used] of parts) {
  const total = groups.reduce((sum, g) => sum + (used.get(g) ?? 0), 0);
  floor += total;
  console.log(`${what.padEnd(44)}${groups.map((g) => cell(used.get(g))).join('')}${cell(total)}`);
}
console.log(`${'the parts together'.padEnd(44)}${' '.repeat(36)}${cell(floor)}`);
console.log(`${'what a line may cost at 20,000 lines/s'.padEnd(44)}${' '.repeat(36)}${cell(budgetPerLine(20_000))}`);

await kafka.withAdmin((admin) => admin.deleteTopics({ topics: allTopicNames(prefix) })).catch(() => undefined);
await kafka.disconnect();
await orm.close();
await dropBenchDatabase(adminUrl, DB_NAME);
