// The receiver helper subscribers import: verifies X-Service-Signature against the raw body (no dependencies; Node ≥ 18, Deno, browsers).
//
// This file is the package's main export, so it uses only Web Crypto and TextEncoder: it must
// run unchanged wherever a subscriber's code runs.

/** Replay window of the spec: reject timestamps more than 300 s from now. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The header names a delivery carries (lower-case, as most servers expose them). */
export const SIGNATURE_HEADER = 'x-service-signature';
export const EVENT_ID_HEADER = 'x-service-event-id';
export const EVENT_TYPE_HEADER = 'x-service-event-type';

export type VerifyFailure =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_out_of_tolerance'
  | 'no_matching_signature';

export type VerifyResult =
  | { readonly valid: true; readonly timestamp: number }
  | { readonly valid: false; readonly reason: VerifyFailure };

export interface VerifyOptions {
  /** The `X-Service-Signature` value: `t=<unix seconds>,v1=<hex>[,v1=<hex>…]`. */
  readonly header: string | null | undefined;
  /** The exact bytes received. A string is taken as its UTF-8 bytes; never pass re-serialized JSON. */
  readonly body: string | Uint8Array | ArrayBuffer;
  /** The webhook's secret (`whsec_…`), or several (e.g. old and new around a rotation). */
  readonly secret: string | readonly string[];
  /** Default 300. */
  readonly toleranceSeconds?: number;
  /** The current time in unix seconds (tests). */
  readonly now?: number;
}

/** Thrown by `constructEvent` when a delivery does not verify; `reason` says why. */
export class SignatureVerificationError extends Error {
  override name = 'SignatureVerificationError';
  readonly reason: VerifyFailure;
  constructor(reason: VerifyFailure) {
    super(`webhook signature verification failed: ${reason.replaceAll('_', ' ')}`);
    this.reason = reason;
  }
}

/** The event body every delivery carries (see the contract's `webhooks` section). */
export interface CatalogEvent<TData = Record<string, unknown>> {
  readonly id: string;
  readonly type: string;
  readonly catalogId: string;
  readonly resourceId: string;
  readonly createdAt: string;
  readonly data: TData;
}

const encoder = new TextEncoder();

function bytesOf(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === 'string') return encoder.encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

function parseHeader(header: string): { timestamp: number; signatures: string[] } | undefined {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at < 0) return undefined;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't') {
      if (!/^\d{1,12}$/.test(value) || timestamp !== undefined) return undefined;
      timestamp = Number(value);
    } else if (key === 'v1') {
      if (/^[0-9a-f]{64}$/.test(value)) signatures.push(value);
    }
    // Other schemes (a future v2) are ignored, so receivers keep working when one is added.
  }
  if (timestamp === undefined) return undefined;
  return { timestamp, signatures };
}

async function hmacHex(secret: string, timestamp: number, body: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const prefix = encoder.encode(`${timestamp}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix, 0);
  signed.set(body, prefix.length);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, signed));
  let hex = '';
  for (const byte of mac) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

/** Compares two strings in time that depends only on their length, not on where they differ. */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Checks a delivery: the header parses, its timestamp is within the tolerance, and one of its
 * `v1=` entries is the HMAC-SHA256 (hex) of `<t>.<raw body>` keyed with one of the secrets.
 */
export async function verifySignature(options: VerifyOptions): Promise<VerifyResult> {
  if (!options.header) return { valid: false, reason: 'missing_header' };
  const parsed = parseHeader(options.header);
  if (!parsed || parsed.signatures.length === 0) return { valid: false, reason: 'malformed_header' };
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - parsed.timestamp) > tolerance) return { valid: false, reason: 'timestamp_out_of_tolerance' };
  const body = bytesOf(options.body);
  const secrets = typeof options.secret === 'string' ? [options.secret] : options.secret;
  let matched = false;
  for (const secret of secrets) {
    const expected = await hmacHex(secret, parsed.timestamp, body);
    // Every entry is compared, match or not, so timing says nothing about which one matched.
    for (const candidate of parsed.signatures) matched = constantTimeEqual(expected, candidate) || matched;
  }
  return matched ? { valid: true, timestamp: parsed.timestamp } : { valid: false, reason: 'no_matching_signature' };
}

/** Verifies, then parses the body: the event, or a SignatureVerificationError. */
export async function constructEvent<TData = Record<string, unknown>>(options: VerifyOptions): Promise<CatalogEvent<TData>> {
  const result = await verifySignature(options);
  if (!result.valid) throw new SignatureVerificationError(result.reason);
  const text = typeof options.body === 'string' ? options.body : new TextDecoder().decode(bytesOf(options.body));
  return JSON.parse(text) as CatalogEvent<TData>;
}

/**
 * For fetch-style servers (Deno.serve, Bun, Cloudflare Workers, Node's Request): reads the raw
 * body of `request` once, verifies it and returns the event.
 */
export async function verifyRequest<TData = Record<string, unknown>>(
  request: Request,
  secret: string | readonly string[],
  options: { toleranceSeconds?: number; now?: number } = {},
): Promise<CatalogEvent<TData>> {
  const body = new Uint8Array(await request.arrayBuffer());
  return constructEvent<TData>({ ...options, header: request.headers.get(SIGNATURE_HEADER), body, secret });
}
