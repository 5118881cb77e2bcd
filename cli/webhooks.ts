// `catalog webhooks …`: the operator's list of a catalog's webhooks with their pace and backlog, and a webhook's rate limit set or cleared as its owner's PATCH does.
import { parseArgs } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { WebhookRateLimit } from '../generated/client.ts';
import { findCatalog } from '../domain/access/catalogs.ts';
import { checkRateLimit, findAnyWebhook, listWebhooks, updateWebhook } from '../domain/webhooks/subscriptions.ts';
import { targetRules } from '../handlers/webhooks/rules.ts';
import { cliActor } from '../platform/actor.ts';
import type { Config } from '../platform/config/config.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { ProductError } from '../platform/errors.ts';
import { secretBoxOf } from '../app/secrets.ts';
import { createLogger } from '../platform/log/logger.ts';
import { UsageError } from './usage-error.ts';

const out = (line = '') => process.stdout.write(`${line}\n`);
const ACTIONS = ['list', 'rate-limit'];
const PAGE = 100;

interface RateLimitFlags {
  'per-second'?: string | undefined;
  'max-in-flight'?: string | undefined;
  clear?: boolean | undefined;
}

// A plain decimal only: Number() would also take '', '0x10' and ' 5 '.
const numberOf = (text: string): number => (/^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text) ? Number(text) : Number.NaN);

/** The limit the flags ask for (null: none), checked against the contract's bounds; a mistake is a usage error. */
function rateLimitOf(flags: RateLimitFlags): WebhookRateLimit | null {
  const { 'per-second': perSecond, 'max-in-flight': maxInFlight } = flags;
  if (flags.clear) {
    if (perSecond !== undefined || maxInFlight !== undefined) throw new UsageError('give --per-second (and --max-in-flight) or --clear, not both', 'webhooks');
    return null;
  }
  if (perSecond === undefined) {
    throw new UsageError(maxInFlight === undefined ? 'webhooks rate-limit needs --per-second N [--max-in-flight M] or --clear'
      : '--max-in-flight needs --per-second: a cap on attempts at once goes with a pace', 'webhooks');
  }
  const limit = { perSecond: numberOf(perSecond), ...(maxInFlight === undefined ? {} : { maxInFlight: numberOf(maxInFlight) }) };
  try {
    // The domain's own check, so the CLI's bounds are the API's.
    checkRateLimit(limit);
  } catch (error) {
    if (!(error instanceof ProductError)) throw error;
    const detail = error.details?.[0];
    const [flag, given] = detail?.path === 'rateLimit.maxInFlight' ? ['--max-in-flight', maxInFlight] : ['--per-second', perSecond];
    throw new UsageError(`${flag} ${detail?.message ?? 'is out of bounds'}, got "${given}"`, 'webhooks');
  }
  return limit;
}

const paceOf = (limit: WebhookRateLimit | null): string => (limit === null ? 'none'
  : `${limit.perSecond}/s${limit.maxInFlight === undefined ? '' : `, at most ${limit.maxInFlight} at once`}`);

/** Runs `work` on the service's database (never a new empty one), then closes it. */
async function withDatabase(config: Config, work: (em: EntityManager) => Promise<number>): Promise<number> {
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 2);
  const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, poolSize: 2, create: false, secrets: secretBoxOf(config) });
  try {
    return await work(orm.em.fork());
  } finally {
    await orm.close();
  }
}

async function listCommand(em: EntityManager, catalogName: string): Promise<number> {
  const catalog = await findCatalog(em, catalogName);
  out(['ID', 'URL', 'STATUS', 'RATE LIMIT', 'WAITING', 'OLDEST WAITING', 'PAUSED UNTIL'].join('\t'));
  let cursor: string | undefined;
  do {
    const page = await listWebhooks(em, catalog.id, { limit: PAGE, cursor });
    for (const w of page.webhooks) {
      out([w.id, w.url, w.status, paceOf(w.rateLimit), w.backlog.waiting, w.backlog.oldestWaitingSince ?? '-', w.backlog.pausedUntil ?? '-'].join('\t'));
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return 0;
}

async function rateLimitCommand(em: EntityManager, config: Config, id: string, limit: WebhookRateLimit | null): Promise<number> {
  const found = await findAnyWebhook(em, id);
  // The owner's PATCH, in the audit log as this operator's: the waiting deliveries re-spaced, the dispatchers woken.
  const changed = await updateWebhook(em, targetRules(config), found.catalogId, found.id, { rateLimit: limit }, cliActor());
  const { waiting } = changed.backlog;
  out(`Webhook ${changed.id} (${changed.url}): rate limit ${paceOf(changed.rateLimit)}; ${waiting} ${waiting === 1 ? 'delivery' : 'deliveries'} pending.`);
  return 0;
}

export async function runWebhooksCommand(config: Config, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  // Each command's arguments are checked before the database is opened: a mistake changes nothing.
  if (action === 'list') {
    const { values } = parseArgs({ args: rest, options: { catalog: { type: 'string' } }, strict: true });
    if (values.catalog === undefined || values.catalog === '') throw new UsageError('--catalog is required', 'webhooks');
    const catalog = values.catalog;
    return withDatabase(config, (em) => listCommand(em, catalog));
  }
  if (action === 'rate-limit') {
    const { values, positionals } = parseArgs({
      args: rest,
      options: { 'per-second': { type: 'string' }, 'max-in-flight': { type: 'string' }, clear: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== 1) throw new UsageError('webhooks rate-limit takes exactly one WEBHOOK_ID', 'webhooks');
    const limit = rateLimitOf(values);
    return withDatabase(config, (em) => rateLimitCommand(em, config, positionals[0]!, limit));
  }
  throw new UsageError(`${action === undefined ? 'webhooks needs' : `"webhooks ${action}" is not a command; webhooks takes`} one of: ${ACTIONS.join(', ')}.`, 'webhooks');
}
