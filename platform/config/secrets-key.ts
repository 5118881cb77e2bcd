// The keys of the values sealed at rest (SECRETS_KEY or SECRETS_KEY_FILE, SECRETS_OLD_KEYS), or the development key generated into the data folder.
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { secretKey } from '../crypto/secret-box.ts';
import { ConfigError } from './parse.ts';
import type { Env } from './parse.ts';

export interface SecretsKeyConfig {
  /** The key new values are sealed with (32 bytes). */
  readonly current: Buffer;
  /** SECRETS_OLD_KEYS: keys still opened during a rotation, until `catalog secrets rotate` has re-sealed their values. */
  readonly old: readonly Buffer[];
  /** Where `current` came from; `generated`: written once into the data folder, for development only. */
  readonly from: 'SECRETS_KEY' | 'SECRETS_KEY_FILE' | 'generated';
  /** The file read, for SECRETS_KEY_FILE and a generated key. */
  readonly file: string | undefined;
}

/**
 * The id of compose.yaml's default SECRETS_KEY: published with the code, so whoever reads it can
 * open what it sealed. The service warns when it runs with it.
 */
export const PUBLISHED_DEVELOPMENT_KEY_ID = '5c32552e';

const HOW = 'the base64 of exactly 32 random bytes (`openssl rand -base64 32`)';

// The value is never repeated in a message: it is the key.
function parseKey(raw: string, name: string): Buffer {
  const text = raw.trim();
  const key = Buffer.from(text, 'base64');
  const canonical = [key.toString('base64'), key.toString('base64url'), key.toString('base64').replace(/=+$/, '')];
  if (key.length !== 32 || !canonical.includes(text)) throw new ConfigError(`${name} must be ${HOW}; its value is not shown`);
  return key;
}

/** The generated key, written once; of two processes starting together, the first to link its file wins. */
function generatedKey(dataDir: string): { key: Buffer; file: string } {
  const file = resolve(dataDir, 'secrets-key');
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    const draft = `${file}.${process.pid}.tmp`;
    writeFileSync(draft, randomBytes(32).toString('base64'), { mode: 0o600 });
    try {
      // link() fails when the name exists: never a half-written key read by another process.
      linkSync(draft, file);
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
    } finally {
      rmSync(draft, { force: true });
    }
  }
  return { key: parseKey(readFileSync(file, 'utf8'), `the generated key in ${file}`), file };
}

/** The current key (SECRETS_KEY, SECRETS_KEY_FILE, or generated outside production) and the old ones still readable. */
export function secretsKeyConfig(env: Env, dataDir: string): SecretsKeyConfig {
  const old = (env.SECRETS_OLD_KEYS ?? '').split(',').map((k) => k.trim()).filter((k) => k !== '')
    .map((k, i) => parseKey(k, `SECRETS_OLD_KEYS entry ${i + 1}`));
  const given = env.SECRETS_KEY?.trim();
  const fromFile = env.SECRETS_KEY_FILE?.trim();
  if (given && fromFile) throw new ConfigError('set SECRETS_KEY or SECRETS_KEY_FILE, not both');
  let current: Omit<SecretsKeyConfig, 'old'>;
  if (given) {
    current = { current: parseKey(given, 'SECRETS_KEY'), from: 'SECRETS_KEY', file: undefined };
  } else if (fromFile) {
    let text: string;
    try {
      text = readFileSync(fromFile, 'utf8');
    } catch (error) {
      throw new ConfigError(`SECRETS_KEY_FILE names ${fromFile}, which cannot be read (${(error as { code?: string }).code ?? (error as Error).message})`);
    }
    current = { current: parseKey(text, `SECRETS_KEY_FILE (${fromFile})`), from: 'SECRETS_KEY_FILE', file: fromFile };
  } else if (env.NODE_ENV === 'production') {
    throw new ConfigError(`set SECRETS_KEY (or SECRETS_KEY_FILE) in production: the key that seals webhook secrets and import source headers at rest, ${HOW}`);
  } else {
    const generated = generatedKey(dataDir);
    current = { current: generated.key, from: 'generated', file: generated.file };
  }
  // Only keys other than the current one, once each.
  const ids = new Set([secretKey(current.current).id]);
  const readable: Buffer[] = [];
  for (const key of old) {
    const { id } = secretKey(key);
    if (ids.has(id)) continue;
    ids.add(id);
    readable.push(key);
  }
  return Object.freeze({ ...current, old: Object.freeze(readable) });
}

/** What start-up warns of the key in use: one generated for development, or the published development key. */
export function secretsKeyWarnings(config: SecretsKeyConfig): string[] {
  const id = secretKey(config.current).id;
  if (config.from === 'generated') {
    return [`SECRETS_KEY is not set: webhook secrets and import headers are sealed with key ${id}, generated into ${config.file}, `
      + 'for development only (another machine cannot open them; losing the file loses them). Set SECRETS_KEY or SECRETS_KEY_FILE'];
  }
  if (id === PUBLISHED_DEVELOPMENT_KEY_ID) {
    return [`SECRETS_KEY is compose.yaml's published development key (${id}): anyone can open what it sealed. Set your own for anything shared`];
  }
  return [];
}
