// `catalog serve` and `catalog migrate`: run the service until a signal, or apply migrations.
import type { Config } from '../platform/config/config.ts';
import { migrate, openDatabase } from '../platform/db/orm.ts';
import { createLogger } from '../platform/log/logger.ts';
import { startService } from '../app/service.ts';
import { secretBoxOf } from '../app/secrets.ts';

export async function runServe(config: Config): Promise<never> {
  const logger = createLogger(config.logLevel);
  // Listen for signals before starting: a SIGTERM during start-up still ends in a clean stop.
  const stopped = new Promise<string>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  const service = await startService(config, logger);
  const signal = await stopped;
  logger.info({ signal }, 'shutting down: draining requests and committing consumer offsets');
  await service.close();
  logger.info('stopped');
  await new Promise<void>((resolve) => logger.flush(() => resolve()));
  // Everything the service opened is closed; what may still hold the event loop is the OS's
  // name lookups of outbound hosts (webhook targets, image origins), which cannot be cancelled
  // and can take seconds each on a slow resolver. They must not delay the exit.
  process.exit(0);
}

export async function runMigrate(config: Config): Promise<number> {
  const logger = createLogger(config.logLevel, 2);
  const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, migrate: false, poolSize: 2, secrets: secretBoxOf(config) });
  try {
    const applied = await migrate(orm, config.databaseUrl, logger);
    process.stdout.write(applied.length > 0 ? `Applied ${applied.join(', ')}.\n` : 'The database is up to date.\n');
    return 0;
  } finally {
    await orm.close();
  }
}
