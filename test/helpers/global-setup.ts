// Runs once around all test files: a real Kafka broker (the project's own, a Testcontainers one, or KAFKA_BROKERS), and a run id,
// held as a Postgres advisory lock for the run, that makes databases, topic prefixes and data folders unique to this run.
import { resolve } from 'node:path';
import { buildConsole } from '../../scripts/build-console.ts';
import { ensureKafka } from '../../scripts/kafka.ts';
import { ensureAsyncApiModels } from './asyncapi-models.ts';
import { ADMIN_DATABASE_URL, dropRunDatabases, dropStaleDatabases } from './database.ts';
import type { BrokerContainer } from './kafka-container.ts';
import { fromTestcontainers } from './kafka.ts';
import { holdRunLock, newRunId } from './test-run.ts';
import type { RunLock } from './test-run.ts';

let lock: RunLock | undefined;
let container: BrokerContainer | undefined;

export async function globalSetup(): Promise<void> {
  process.env.TEST_RUN_ID ??= newRunId('g');
  // Taken before any database of this run exists: other runs' clean-up sees the run alive.
  lock = await holdRunLock(ADMIN_DATABASE_URL, process.env.TEST_RUN_ID);
  const dropped = await dropStaleDatabases(process.env.TEST_RUN_ID);
  if (dropped.length > 0) process.stderr.write(`dropped ${dropped.length} database(s) of test runs that are gone\n`);
  if (!process.env.KAFKA_BROKERS && fromTestcontainers()) {
    const { startBrokerContainer } = await import('./kafka-container.ts');
    container = await startBrokerContainer();
    process.env.KAFKA_BROKERS = container.brokers.join(',');
  } else if (!process.env.KAFKA_BROKERS) {
    const { brokers } = await ensureKafka({ dataDir: resolve('.data') });
    process.env.KAFKA_BROKERS = brokers.join(',');
  }
  // Made once here rather than by the first test files to read a topic, all at once.
  ensureAsyncApiModels();
  // The browser tests load the console as its sources stand, not as the last `npm install` built it.
  await buildConsole();
}

export async function globalTeardown(): Promise<void> {
  // The local broker is left running on purpose: the next run (or `npm start`) reuses it. A
  // container is this run's alone.
  try {
    await container?.remove();
    // TEST_KEEP_DATABASES=1 keeps them to look into a failure; the next runs' clean-up drops them.
    if (process.env.TEST_RUN_ID && process.env.TEST_KEEP_DATABASES !== '1') await dropRunDatabases(process.env.TEST_RUN_ID);
  } finally {
    await lock?.release();
  }
}
