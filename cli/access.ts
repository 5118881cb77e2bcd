// `catalog catalogs …` and `catalog keys …`: the operator's commands for tenants and keys.
import { parseArgs } from 'node:util';
import { createApiKey, limitApiKey, listApiKeys, revokeApiKey, SCOPES, TIERS } from '../domain/access/key-store.ts';
import type { ApiKey } from '../platform/db/entities/catalogs.ts';
import { createCatalog, findCatalog } from '../domain/access/catalogs.ts';
import { cliActor } from '../platform/actor.ts';
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

const ACTIONS = { catalogs: ['create'], keys: ['create', 'list', 'update', 'revoke'] } as const;

const UNITS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `--expires-at ISO` or `--expires-in 90d|12h|30m`: when the key stops working; undefined without either. */
function expiryOf(values: { 'expires-at'?: string | undefined; 'expires-in'?: string | undefined }): Date | undefined {
  const at = values['expires-at'];
  const within = values['expires-in'];
  if (at !== undefined && within !== undefined) throw new UsageError('give --expires-at or --expires-in, not both');
  if (at !== undefined) {
    const when = new Date(at);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(at) || Number.isNaN(when.getTime())) throw new UsageError(`--expires-at must be an ISO 8601 instant (2027-03-01T00:00:00Z), got "${at}"`);
    return when;
  }
  if (within === undefined) return undefined;
  const match = /^([1-9]\d{0,5})([mhd])$/.exec(within);
  if (!match) throw new UsageError(`--expires-in must be a count of minutes, hours or days (30m, 12h, 90d), got "${within}"`);
  return new Date(Date.now() + Number(match[1]) * UNITS[match[2] as keyof typeof UNITS]);
}

const rangesOf = (allow: string): string[] => allow.split(',').map((cidr) => cidr.trim()).filter((cidr) => cidr !== '');

/** What a key's limits say in one line: `, expires …, from …`. */
const limitsOf = (key: ApiKey): string => `${key.expiresAt ? `, expires ${key.expiresAt.toISOString()}` : ''}`
  + `${key.allowedCidrs ? `, only from ${key.allowedCidrs.join(',')}` : ''}`;

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
  // Each change goes into the catalog's audit log as this operator's, under one request id.
  const actor = cliActor();
  try {
    if (group === 'catalogs' && action === 'create') {
      const { values } = parseArgs({ args: rest, options: { name: { type: 'string' }, 'owner-email': { type: 'string' } }, strict: true });
      const catalog = await createCatalog(em, { name: required(values, 'name'), ownerEmail: required(values, 'owner-email') }, actor);
      out(`Created catalog "${catalog.name}" (owner ${catalog.ownerEmail}).`);
      out(catalog.id);
      return 0;
    }
    if (group === 'keys' && action === 'create') {
      const { values } = parseArgs({
        args: rest,
        options: {
          catalog: { type: 'string' }, scopes: { type: 'string' }, tier: { type: 'string', default: 'free' },
          'rate-limit': { type: 'string' }, allow: { type: 'string' }, 'expires-at': { type: 'string' }, 'expires-in': { type: 'string' },
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
        expiresAt: expiryOf(values) ?? null,
        allowedCidrs: values.allow === undefined ? null : rangesOf(values.allow),
      }, actor);
      const limit = issued.record.rateLimitPerMinute ? `, ${issued.record.rateLimitPerMinute} requests/minute` : '';
      out(`Created key ${issued.record.id} for catalog "${catalog.name}" (scopes ${issued.record.scopes.join(',')}, tier ${issued.record.tier}${limit}${limitsOf(issued.record)}).`);
      out('Store it now: it is shown only once.');
      out(issued.key);
      return 0;
    }
    if (group === 'keys' && action === 'list') {
      const { values } = parseArgs({ args: rest, options: { catalog: { type: 'string' } }, strict: true });
      const catalog = await findCatalog(em, required(values, 'catalog'));
      const keys = await listApiKeys(em, catalog.id);
      // New columns come last, so the columns scripts read before keep their places.
      out(['ID', 'PREFIX', 'TIER', 'SCOPES', 'CREATED', 'REVOKED', 'KIND', 'EXPIRES', 'LAST USED', 'ALLOWED'].join('\t'));
      for (const key of keys) {
        out([key.id, `${key.keyPrefix}…`, key.tier, key.scopes.join(','), key.createdAt.toISOString(),
          key.revokedAt?.toISOString() ?? '-', key.kind, key.expiresAt?.toISOString() ?? '-',
          key.lastUsedAt?.toISOString() ?? '-', key.allowedCidrs?.join(',') ?? 'any'].join('\t'));
      }
      return 0;
    }
    if (group === 'keys' && action === 'update') {
      const { values, positionals } = parseArgs({
        args: rest,
        options: {
          allow: { type: 'string' }, 'allow-any': { type: 'boolean' }, 'expires-at': { type: 'string' }, 'expires-in': { type: 'string' },
          'no-expiry': { type: 'boolean' },
        },
        allowPositionals: true,
        strict: true,
      });
      if (positionals.length !== 1) throw new UsageError('keys update takes exactly one KEY_ID', group);
      if (values.allow !== undefined && values['allow-any']) throw new UsageError('give --allow or --allow-any, not both', group);
      const expiry = expiryOf(values);
      if (expiry !== undefined && values['no-expiry']) throw new UsageError('give --expires-at, --expires-in or --no-expiry, not two', group);
      const allowedCidrs = values['allow-any'] ? null : values.allow === undefined ? undefined : rangesOf(values.allow);
      const expiresAt = values['no-expiry'] ? null : expiry;
      if (allowedCidrs === undefined && expiresAt === undefined) throw new UsageError('keys update needs --allow, --allow-any, --expires-at, --expires-in or --no-expiry', group);
      const key = await limitApiKey(em, positionals[0]!, { allowedCidrs, expiresAt }, actor);
      const limits = limitsOf(key);
      out(`Updated key ${key.id} (${key.keyPrefix}…): ${limits === '' ? 'no expiry, any address' : limits.slice(2)}.`);
      return 0;
    }
    if (group === 'keys' && action === 'revoke') {
      const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true, strict: true });
      if (positionals.length !== 1) throw new UsageError('keys revoke takes exactly one KEY_ID');
      const key = await revokeApiKey(em, positionals[0]!, actor);
      out(`Revoked key ${key.id} (${key.keyPrefix}…) at ${key.revokedAt!.toISOString()}.`);
      return 0;
    }
    throw new UsageError(`"${group} ${action}" is not a command`, group);
  } finally {
    await orm.close();
  }
}
