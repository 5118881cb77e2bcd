// `catalog outbox …`: the operator's view of the records the broker refused for good, and sending them again.
import { parseArgs } from 'node:util';
import { listParked, resendParked, resendParkedRecord } from '../domain/events/parked.ts';
import type { ParkedRecord } from '../domain/events/parked.ts';
import { cliActor } from '../platform/actor.ts';
import type { Config } from '../platform/config/config.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { secretBoxOf } from '../app/secrets.ts';
import { createLogger } from '../platform/log/logger.ts';
import { UsageError } from './usage-error.ts';

const out = (line = '') => process.stdout.write(`${line}\n`);
const PAGE = 200;

const row = (r: ParkedRecord) => [r.id, r.parkedAt, r.errorType, String(r.byteSize), r.eventType ?? r.topic, r.catalogId ?? '-', r.resentAt ?? '-', r.key].join('\t');

export async function runOutboxCommand(config: Config, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  if (action !== 'parked' && action !== 'resend') {
    throw new UsageError(`${action === undefined ? 'outbox needs' : `"outbox ${action}" is not a command; outbox takes`} one of: parked, resend.`, 'outbox');
  }
  const { values, positionals } = parseArgs({
    args: rest, allowPositionals: action === 'resend', strict: true,
    options: { catalog: { type: 'string' }, all: { type: 'boolean', default: false } },
  });
  if (action === 'resend' && positionals.length !== 1 && !values.all) throw new UsageError('outbox resend takes one RECORD_ID, or --all', 'outbox');
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 2);
  const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, poolSize: 2, create: false, secrets: secretBoxOf(config) });
  const db = orm.em.fork();
  const catalog = values.catalog === undefined ? {} : { catalogId: values.catalog };
  try {
    if (action === 'parked') {
      out(['ID', 'PARKED', 'ERROR', 'BYTES', 'TYPE', 'CATALOG', 'RESENT', 'KEY'].join('\t'));
      let cursor: string | undefined;
      do {
        const page = await listParked(db, { ...catalog, includeResent: values.all, limit: PAGE, ...(cursor ? { cursor } : {}) });
        for (const record of page.records) out(row(record));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      return 0;
    }
    const actor = cliActor();
    const resent = values.all ? await resendParked(db, catalog, actor) : [await resendParkedRecord(db, positionals[0]!, actor)];
    out(`Re-sent ${resent.length} parked record(s); the relay publishes them with what is written after them, and parks again what the broker still refuses.`);
    for (const record of resent) out(row(record));
    return 0;
  } finally {
    await orm.close();
  }
}
