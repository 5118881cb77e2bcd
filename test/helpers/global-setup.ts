// Runs once before all test files: a real Kafka broker (the project's own, or KAFKA_BROKERS),
// and a topic prefix unique to this run so runs never read each other's messages.
import { resolve } from 'node:path';
import { ensureKafka } from '../../scripts/kafka.ts';

export async function globalSetup(): Promise<void> {
  if (!process.env.KAFKA_BROKERS) {
    const { brokers } = await ensureKafka({ dataDir: resolve('.data') });
    process.env.KAFKA_BROKERS = brokers.join(',');
  }
  process.env.TEST_RUN_ID ??= `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

export async function globalTeardown(): Promise<void> {
  // The broker is left running on purpose: the next run (or `npm start`) reuses it.
}
