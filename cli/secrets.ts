// `catalog secrets …`: which keys seal the values kept secret at rest (webhook secrets, import source addresses and headers, stored idempotent answers), and re-sealing them with the current key after a key rotation.
import { parseArgs } from 'node:util';
import { resealSourceSecrets, sourceSecretKeys } from '../domain/imports/source-store.ts';
import { resealWebhookSecrets, webhookSecretKeys } from '../domain/webhooks/secret-seals.ts';
import type { Config } from '../platform/config/config.ts';
import { SecretKeyError, secretKey } from '../platform/crypto/secret-box.ts';
import type { SecretBox } from '../platform/crypto/secret-box.ts';
import { openDatabase } from '../platform/db/orm.ts';
import type { Db } from '../platform/db/sql.ts';
import { resealStoredAnswers, storedAnswerKeys } from '../platform/http/idempotency.ts';
import { createLogger } from '../platform/log/logger.ts';
import { secretBoxOf } from '../app/secrets.ts';
import { UsageError } from './usage-error.ts';

const out = (line = '') => process.stdout.write(`${line}\n`);
// Each batch is a transaction of its own: its rows are locked only briefly, and a rotation of any
// size is never one long transaction.
const BATCH_ROWS = 300;

type KeyCount = { column: string; keyId: string; values: number };

/** Every sealed column's values, counted by the key that sealed them. */
async function keyCounts(db: Db): Promise<KeyCount[]> {
  return [...await webhookSecretKeys(db), ...await sourceSecretKeys(db), ...await storedAnswerKeys(db)];
}

function status(counts: readonly KeyCount[], secrets: SecretBox, config: Config): void {
  const old = new Set(config.secretsKey.old.map((key) => secretKey(key).id));
  const state = (keyId: string) => (keyId === secrets.currentKeyId ? 'current' : old.has(keyId) ? 'old (SECRETS_OLD_KEYS)' : 'not configured here');
  out(['COLUMN', 'KEY', 'VALUES', 'KEY IS'].join('\t'));
  for (const row of counts) out([row.column, row.keyId || '-', String(row.values), row.keyId ? state(row.keyId) : 'not sealed'].join('\t'));
  out(`Current key ${secrets.currentKeyId}; ${old.size} old key(s) readable.`);
}

/** Re-seals every value not sealed with the current key, batch after batch; how many per table. */
async function rotate(db: Db, secrets: SecretBox, counted: Record<string, number>): Promise<void> {
  const tables: Array<[string, (db: Db, secrets: SecretBox, limit: number) => Promise<number>]> = [
    ['webhooks', resealWebhookSecrets], ['import_jobs', resealSourceSecrets], ['idempotency_keys', resealStoredAnswers],
  ];
  for (const [table, reseal] of tables) {
    counted[table] = 0;
    for (let done = await reseal(db, secrets, BATCH_ROWS); done > 0; done = await reseal(db, secrets, BATCH_ROWS)) counted[table] += done;
  }
}

export async function runSecretsCommand(config: Config, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  if (action !== 'status' && action !== 'rotate') {
    throw new UsageError(`${action === undefined ? 'secrets needs' : `"secrets ${action}" is not a command; secrets takes`} one of: status, rotate.`, 'secrets');
  }
  parseArgs({ args: rest, options: {}, strict: true });
  // Logs go to stderr so stdout carries only the command's own output.
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 2);
  const secrets = secretBoxOf(config);
  const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, poolSize: 2, create: false, secrets });
  const db = orm.em.fork();
  try {
    if (action === 'status') {
      status(await keyCounts(db), secrets, config);
      return 0;
    }
    const counted: Record<string, number> = {};
    try {
      await rotate(db, secrets, counted);
    } catch (error) {
      if (!(error instanceof SecretKeyError)) throw error;
      for (const [table, n] of Object.entries(counted)) out(`${table}: ${n} value(s) re-sealed with key ${secrets.currentKeyId}`);
      process.stderr.write(`catalog: ${error.message}: add that key to SECRETS_OLD_KEYS and run \`catalog secrets rotate\` again `
        + '(what was re-sealed stays so)\n');
      return 1;
    }
    for (const [table, n] of Object.entries(counted)) out(`${table}: ${n} value(s) re-sealed with key ${secrets.currentKeyId}`);
    // Values a process still running with an older SECRETS_KEY sealed meanwhile.
    const left = (await keyCounts(db)).filter((row) => row.keyId !== secrets.currentKeyId).reduce((sum, row) => sum + row.values, 0);
    if (left > 0) {
      out(`${left} value(s) were sealed with another key meanwhile: is a process still running with an older SECRETS_KEY? Run this again once none is.`);
      return 1;
    }
    const old = config.secretsKey.old.map((key) => secretKey(key).id);
    out(`Every value is sealed with key ${secrets.currentKeyId}.${old.length > 0 ? ` SECRETS_OLD_KEYS can now drop key ${old.join(', ')}.` : ''}`);
    return 0;
  } finally {
    await orm.close();
  }
}
