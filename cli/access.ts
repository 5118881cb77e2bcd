// `catalog catalogs …` and `catalog keys …`: the operator's commands for tenants and keys.
import { parseArgs } from 'node:util';
import { createApiKey, listApiKeys, revokeApiKey, SCOPES, TIERS } from '../domain/access/key-store.ts';
import { createCatalog, findCatalog } from '../domain/access/catalogs.ts';
import type { Config } from '../platform/config/config.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { secretBoxOf } from '../app/secrets.ts';
import { createLogger } from '../platform/log/logger.ts';
import { UsageError } from './usage-error.ts';

const out = (line = '') => process.stdout.write(`${line}\n`);

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

const ACTIONS = { catalogs: ['create'], keys: ['create', 'list', 'revoke'] } as const;

export async function runAccessCommand(config: Config, group: 'catalogs' | 'keys', args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const actions: readonly string[] = ACTIONS[group];
  if (action === undefined || !actions.includes(action)) {
    throw new UsageError(`${action === undefined ? `${group} needs` : `"${group} ${action}" is not a command; ${group} takes`} one of: `
      + `${actions.join(', ')}. Scopes: ${SCOPES.join(', ')}. Tiers: ${TIERS.join(', ')}.`, group);
  }
  // Logs go to stderr so stdout carries only the command's own output.
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 2);
  // The service's database, never a new empty one: keys made there would be refused by the service.
  const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, poolSize: 2, create: false, secrets: secretBoxOf(config) });
  const em = orm.em.fork();
  try {
    if (group === 'catalogs' && action === 'create') {
      const { values } = parseArgs({ args: rest, options: { name: { type: 'string' }, 'owner-email': { type: 'string' } }, strict: true });
      const catalog = await createCatalog(em, { name: required(values, 'name'), ownerEmail: required(values, 'owner-email') });
      out(`Created catalog "${catalog.name}" (owner ${catalog.ownerEmail}).`);
      out(catalog.id);
      return 0;
    }
    if (group === 'keys' && action === 'create') {
      const { values } = parseArgs({
        args: rest,
        options: {
          catalog: { type: 'string' }, scopes: { type: 'string' }, tier: { type: 'string', default: 'free' },
          'rate-limit': { type: 'string' },
        },
        strict: true,
      });
      const catalog = await findCatalog(em, required(values, 'catalog'));
      const issued = await createApiKey(em, {
        catalogId: catalog.id,
        scopes: required(values, 'scopes').split(','),
        tier: values.tier ?? 'free',
        environment: config.environment,
        ...(values['rate-limit'] === undefined ? {} : { rateLimitPerMinute: Number(values['rate-limit']) }),
      });
      const limit = issued.record.rateLimitPerMinute ? `, ${issued.record.rateLimitPerMinute} requests/minute` : '';
      out(`Created key ${issued.record.id} for catalog "${catalog.name}" (scopes ${issued.record.scopes.join(',')}, tier ${issued.record.tier}${limit}).`);
      out('Store it now: it is shown only once.');
      out(issued.key);
      return 0;
    }
    if (group === 'keys' && action === 'list') {
      const { values } = parseArgs({ args: rest, options: { catalog: { type: 'string' } }, strict: true });
      const catalog = await findCatalog(em, required(values, 'catalog'));
      const keys = await listApiKeys(em, catalog.id);
      // KIND and EXPIRES come last, so the columns scripts read before keep their places.
      out(['ID', 'PREFIX', 'TIER', 'SCOPES', 'CREATED', 'REVOKED', 'KIND', 'EXPIRES'].join('\t'));
      for (const key of keys) {
        out([key.id, `${key.keyPrefix}…`, key.tier, key.scopes.join(','), key.createdAt.toISOString(),
          key.revokedAt?.toISOString() ?? '-', key.kind, key.expiresAt?.toISOString() ?? '-'].join('\t'));
      }
      return 0;
    }
    if (group === 'keys' && action === 'revoke') {
      const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true, strict: true });
      if (positionals.length !== 1) throw new UsageError('keys revoke takes exactly one KEY_ID');
      const key = await revokeApiKey(em, positionals[0]!);
      out(`Revoked key ${key.id} (${key.keyPrefix}…) at ${key.revokedAt!.toISOString()}.`);
      return 0;
    }
    throw new UsageError(`"${group} ${action}" is not a command`, group);
  } finally {
    await orm.close();
  }
}
