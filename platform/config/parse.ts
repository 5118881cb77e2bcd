// Reading one environment variable as a typed value, with the error that names it and what it must be.

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Record<string, string | undefined>;

export function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

export function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

export function oneOf<T extends string>(env: Env, name: string, fallback: T, values: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

/** An http(s) base address without a trailing slash, or undefined when unset. */
export function baseUrl(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    // Reported below.
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new ConfigError(`${name} must be an http(s) address, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

/** A comma list of host:port, or undefined when unset or empty. */
export function brokerList(env: Env, name: string): readonly string[] | undefined {
  const brokers = env[name]?.split(',').map((b) => b.trim()).filter((b) => b !== '');
  return brokers && brokers.length > 0 ? Object.freeze(brokers) : undefined;
}

/** A comma list of origins (scheme://host[:port]); `*` too where any origin may be named. */
export function originList(env: Env, name: string, options: { anyOrigin: boolean }): readonly string[] {
  const origins = (env[name] ?? '').split(',').map((o) => o.trim()).filter((o) => o !== '');
  for (const origin of origins) {
    if (options.anyOrigin && origin === '*') continue;
    if (!URL.canParse(origin) || new URL(origin).origin !== origin) {
      throw new ConfigError(`${name} must be a comma list of origins (scheme://host[:port], no path or slash)${options.anyOrigin ? ' or *' : ''}, got "${origin}"`);
    }
  }
  return Object.freeze(origins);
}
