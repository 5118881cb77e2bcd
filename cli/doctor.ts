// `catalog doctor`: checks what this environment names (configuration, database and its read replica, broker, storage) and says what is wrong, and how to fix it, in plain words.
import { access, constants } from 'node:fs/promises';
import { dirname } from 'node:path';
import { loadConfig, singleMachineSettings } from '../platform/config/config.ts';
import type { Config } from '../platform/config/config.ts';
import { secretsKeyWarnings } from '../platform/config/secrets-key.ts';
import { secretKey } from '../platform/crypto/secret-box.ts';
import { openSession } from '../platform/db/connections.ts';
import { migrations } from '../platform/db/migrations/index.ts';
import { shownDatabaseUrl } from '../platform/db/orm.ts';
import { replicaState } from '../platform/db/read-replica.ts';
import { consoleBuild } from '../platform/http/console.ts';
import { brokersAnswer } from '../platform/kafka/probe.ts';
import { createLogger } from '../platform/log/logger.ts';
import { createStorage } from '../platform/storage/create-storage.ts';

// The local broker the service starts when KAFKA_BROKERS is not set (docs/configuration.md, `KAFKA_BROKERS`).
const LOCAL_BROKER = '127.0.0.1:9092';
const PROBE_TIMEOUT_MS = 5000;

type Check = { readonly ok: boolean; readonly what: string; readonly said: string };

async function database(config: Config): Promise<Check> {
  const where = shownDatabaseUrl(config.databaseUrl);
  const logger = createLogger('silent');
  let session;
  try {
    session = await openSession(config.databaseUrl, logger, 'doctor');
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === '3D000') return { ok: true, what: 'database', said: `${where} does not exist yet: the service creates it when it first starts` };
    return { ok: false, what: 'database', said: `${where} cannot be reached (${(error as Error).message}): is PostgreSQL running there, and is DATABASE_URL right?` };
  }
  try {
    const [row] = await session.query<{ applied: string[] | null }>(
      `SELECT CASE WHEN to_regclass('mikro_orm_migrations') IS NULL THEN NULL ELSE (SELECT array_agg(name) FROM mikro_orm_migrations) END AS applied`);
    const applied = new Set(row?.applied ?? []);
    const pending = migrations.filter((m) => !applied.has(m.name)).length;
    return { ok: true, what: 'database', said: `${where}: ${applied.size} migrations applied, ${pending === 0 ? 'none' : pending} pending${pending > 0 ? ' (the service applies them when it starts, or `catalog migrate`)' : ''}` };
  } finally {
    await session.close();
  }
}

/** The standby DATABASE_READ_URL names: reachable, a standby, streaming, and how far behind. */
async function readReplica(config: Config): Promise<Check> {
  const replica = config.databaseRead;
  const what = 'read replica';
  if (!replica) return { ok: true, what, said: 'none: every read goes to the primary (DATABASE_READ_URL unset)' };
  const where = shownDatabaseUrl(replica.url);
  let session;
  try {
    session = await openSession(replica.url, createLogger('silent'), 'doctor');
  } catch (error) {
    return { ok: false, what, said: `${where} cannot be reached (${(error as Error).message}): is the standby running, and is DATABASE_READ_URL right? Marked reads go to the primary meanwhile` };
  }
  try {
    const state = await replicaState(session);
    if (!state.standby) return { ok: false, what, said: `${where} is not a standby (not in recovery): DATABASE_READ_URL must name a streaming standby of DATABASE_URL's server` };
    if (!state.receiving) return { ok: false, what, said: `${where} is a standby that is not streaming from its primary (no WAL receiver): it falls behind, and marked reads go to the primary` };
    const lag = state.lagSeconds === null ? 'with nothing replayed yet' : `${Math.round(state.lagSeconds * 1000)} ms behind`;
    return { ok: true, what, said: `${where}: a streaming standby, ${lag}; marked reads go to it while within DATABASE_READ_MAX_LAG_MS (${replica.maxLagMs} ms)` };
  } finally {
    await session.close();
  }
}

async function broker(config: Config): Promise<Check> {
  const brokers = config.kafkaBrokers ?? [LOCAL_BROKER];
  if (await brokersAnswer(brokers, PROBE_TIMEOUT_MS)) return { ok: true, what: 'broker', said: `${brokers.join(',')} answers` };
  return {
    ok: config.kafkaBrokers === undefined, what: 'broker',
    said: config.kafkaBrokers === undefined
      ? `nothing answers on ${LOCAL_BROKER}: \`npm start\` starts the local broker (or \`npm run kafka -- start\`), or set KAFKA_BROKERS`
      : `${brokers.join(',')} does not answer within ${PROBE_TIMEOUT_MS / 1000} s: is the broker running there, and is KAFKA_BROKERS right?`,
  };
}

async function storage(config: Config): Promise<Check> {
  if (config.storageDriver === 'local') {
    // The folder may not exist yet (the service makes it); its nearest existing parent must be writable.
    let dir = config.storageDir;
    for (;;) {
      try {
        await access(dir, constants.W_OK);
        return { ok: true, what: 'storage', said: `local, ${config.storageDir}${dir === config.storageDir ? '' : ' (made at the first upload)'}` };
      } catch (error) {
        if ((error as { code?: string }).code !== 'ENOENT' || dirname(dir) === dir) {
          return { ok: false, what: 'storage', said: `local, ${config.storageDir}: ${dir} is not writable by this user (set STORAGE_DIR to a folder it can write)` };
        }
        dir = dirname(dir);
      }
    }
  }
  try {
    await createStorage(config).stat('doctor/probe');
    return { ok: true, what: 'storage', said: `s3, bucket ${config.s3.bucket}${config.s3.endpoint ? ` at ${config.s3.endpoint}` : ''} answers` };
  } catch (error) {
    return { ok: false, what: 'storage', said: `s3, bucket ${config.s3.bucket}: ${(error as Error).name}: ${(error as Error).message} (check S3_ENDPOINT, S3_REGION and the credentials)` };
  }
}

async function browserConsole(config: Config): Promise<Check> {
  const framed = config.consoleFrameAncestors.length > 0 ? `may be framed by ${config.consoleFrameAncestors.join(', ')}` : 'no page may frame it';
  if (await consoleBuild()) return { ok: true, what: 'console', said: `built, at ${config.publicBaseUrl}/console; ${framed}` };
  return { ok: false, what: 'console', said: 'console/dist is missing: `npm run build:console` builds it (`npm install` does too)' };
}

/** Never a failure: which key seals secrets at rest, and a warning when it is one for development only. */
function secretsKey(config: Config): Check {
  const { current, old, from } = config.secretsKey;
  const warnings = secretsKeyWarnings(config.secretsKey).map((warning) => `; warning: ${warning}`).join('');
  return { ok: true, what: 'secrets key', said: `key ${secretKey(current).id} (${from}), ${old.length} old key(s) readable${warnings}` };
}

/** Not a failure: one machine runs fine without; said so that a second one is not a surprise. */
function fleet(config: Config): Check {
  const needs = singleMachineSettings(config);
  return {
    ok: true, what: 'fleet',
    said: needs.length === 0 ? 'processes on other machines can join: uploads and images go to shared storage (s3)'
      : `one machine as configured; processes on a second machine need ${needs.join(' and ')}`,
  };
}

export async function runDoctor(): Promise<number> {
  let config: Config;
  const print = (check: Check) => process.stdout.write(`${check.ok ? 'ok  ' : 'FAIL'}  ${check.what.padEnd(13)} ${check.said}\n`);
  try {
    config = loadConfig();
  } catch (error) {
    print({ ok: false, what: 'configuration', said: (error as Error).message });
    return 1;
  }
  print({ ok: true, what: 'configuration', said: `role ${config.role}, listening on ${config.host}:${config.port}, storage ${config.storageDriver}` });
  const checks = [...await Promise.all([database(config), readReplica(config), broker(config), storage(config), browserConsole(config)]), secretsKey(config), fleet(config)];
  checks.forEach(print);
  return checks.every((check) => check.ok) ? 0 : 1;
}
