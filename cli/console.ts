// `catalog console`: mints a single-use link that opens the browser console on one catalog, straight in the database like `keys create`.
import { parseArgs } from 'node:util';
import { mintConsoleLink } from '../domain/access/console-links.ts';
import { CATALOG_SCOPES } from '../domain/access/key-store.ts';
import { cliActor } from '../platform/actor.ts';
import type { Config } from '../platform/config/config.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { secretBoxOf } from '../app/secrets.ts';
import { createLogger } from '../platform/log/logger.ts';
import { UsageError } from './usage-error.ts';

const out = (line = '') => process.stdout.write(`${line}\n`);

/** A whole number of minutes, or undefined when the option was not given (the domain checks the range). */
function minutes(value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${option} takes a whole number of minutes`, 'console');
  return Number(value);
}

export async function runConsoleCommand(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      catalog: { type: 'string' }, scopes: { type: 'string' }, 'read-only': { type: 'boolean', default: false },
      'redeem-minutes': { type: 'string' }, 'session-minutes': { type: 'string' }, label: { type: 'string' },
    },
    strict: true,
  });
  if (values.catalog === undefined || values.catalog === '') throw new UsageError('--catalog is required', 'console');
  if (values.scopes !== undefined && values['read-only']) throw new UsageError('--scopes and --read-only do not go together', 'console');
  // Every catalog scope unless told otherwise: the operator opens the console for the catalog's owner.
  const scopes = values['read-only'] ? ['catalog:read'] : values.scopes?.split(',') ?? [...CATALOG_SCOPES];
  const redeemWithinMinutes = minutes(values['redeem-minutes'], 'redeem-minutes');
  const sessionMinutes = minutes(values['session-minutes'], 'session-minutes');
  // Logs go to stderr so stdout carries only the command's own output.
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 2);
  const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, poolSize: 2, create: false, secrets: secretBoxOf(config) });
  try {
    const link = await mintConsoleLink(orm.em.fork(), {
      catalog: values.catalog, scopes, redeemWithinMinutes, sessionMinutes, label: values.label,
    }, config.publicBaseUrl, cliActor());
    out(`Console link for catalog "${link.catalogName}" (scopes ${link.scopes.join(',')}), single use, redeem by ${link.redeemBy}; `
      + `the session lasts ${link.sessionMinutes} minutes.`);
    out(link.url);
    return 0;
  } finally {
    await orm.close();
  }
}
