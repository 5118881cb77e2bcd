// One relay in a process of its own, as a consumers process runs it, for bench:relay: prints "ready" once it runs, stops on SIGTERM.
import { createOutboxRelay } from '../consumers/relay/outbox-relay.ts';
import { loadConfig } from '../platform/config/config.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { createKafkaClient } from '../platform/kafka/client.ts';
import { createLogger } from '../platform/log/logger.ts';

const config = loadConfig();
const logger = createLogger(config.logLevel);
const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, poolSize: 4 });
const kafka = await createKafkaClient(config, logger, { clientId: `bench-relay-${process.pid}` });
const relay = createOutboxRelay({ orm, databaseUrl: config.databaseUrl, kafka, logger });
await relay.start();
process.stdout.write('ready\n');
process.once('SIGTERM', async () => {
  await relay.stop();
  await kafka.disconnect();
  await orm.close();
  process.stdout.write(`${JSON.stringify(relay.stats)}\n`);
  process.exit(0);
});
