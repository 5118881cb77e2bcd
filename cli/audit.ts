// `catalog audit`: the operator's read of the audit log, one catalog's or every catalog's, newest first.
import { parseArgs } from 'node:util';
import { auditPage } from '../domain/audit/audit-log.ts';
import type { AuditFilter } from '../domain/audit/audit-log.ts';
import { findCatalog } from '../domain/access/catalogs.ts';
import type { Config } from '../platform/config/config.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { secretBoxOf } from '../app/secrets.ts';
import { createLogger } from '../platform/log/logger.ts';
import { UsageError } from './usage-error.ts';

const out = (line = '') => process.stdout.write(`${line}\n`);
const PAGE = 200;

function instant(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(Date.parse(value))) throw new UsageError(`--${name} must be an ISO 8601 instant (2026-11-21T00:00:00Z), got "${value}"`, 'audit');
  return value;
}

export async function runAuditCommand(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      catalog: { type: 'string' }, actor: { type: 'string' }, action: { type: 'string' }, resource: { type: 'string' },
      since: { type: 'string' }, until: { type: 'string' }, limit: { type: 'string', default: '50' }, json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const limit = Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw new UsageError(`--limit must be a whole number from 1 to 100000, got "${values.limit}"`, 'audit');
  // `--resource webhook` or `--resource webhook:ID` (an item's id holds a slash, never a colon first).
  const [resourceType, ...idParts] = values.resource?.split(':') ?? [];
  const filter: AuditFilter = {
    actor: values.actor, action: values.action, resourceType: resourceType || undefined,
    resourceId: idParts.length === 0 ? undefined : idParts.join(':'), since: instant('since', values.since), until: instant('until', values.until),
  };
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 2);
  const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, poolSize: 2, create: false, secrets: secretBoxOf(config) });
  const db = orm.em.fork();
  try {
    const catalogId = values.catalog === undefined ? undefined : (await findCatalog(db, values.catalog)).id;
    if (!values.json) out(['AT', 'CATALOG', 'ACTOR', 'ACTION', 'RESOURCE', 'ADDRESS', 'REQUEST'].join('\t'));
    let shown = 0;
    let cursor: string | undefined;
    do {
      const page = await auditPage(db, catalogId, filter, { limit: Math.min(PAGE, limit - shown), cursor });
      for (const { catalogId: catalog, entry } of page.rows) {
        if (values.json) {
          out(JSON.stringify({ catalogId: catalog, ...entry }));
          continue;
        }
        const { actor } = entry;
        const who = actor.kind === 'cli' ? `cli ${actor.operator}` : actor.kind === 'service' ? 'service' : `${actor.kind} ${actor.keyId} (${actor.keyPrefix ?? '?'}…)`;
        out([entry.at, catalog, who, entry.action, `${entry.resource.type}:${entry.resource.id}`, entry.clientAddress ?? '-', entry.requestId ?? '-'].join('\t'));
      }
      shown += page.rows.length;
      cursor = page.nextCursor ?? undefined;
    } while (cursor && shown < limit);
    return 0;
  } finally {
    await orm.close();
  }
}
