// The outbound network guard: media downloads and webhook deliveries never reach private,
// loopback, link-local or metadata addresses, checked on the resolved address at connect time
// (so a host name that resolves, or re-resolves, to such an address is refused: no DNS rebinding).
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOneOptions, LookupAllOptions, LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';

// Every ipaddr.js range except 'unicast' is refused: private, loopback, linkLocal (incl. the
// 169.254.169.254 metadata address), carrierGradeNat, uniqueLocal, multicast, reserved, unspecified…
const ALLOWED_RANGES = new Set(['unicast']);
// Cloud metadata services that sit in otherwise public-looking space.
const METADATA_ADDRESSES = new Set(['fd00:ec2::254', '100.100.100.200']);

export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError';
  readonly code = 'EREFUSEDADDRESS';
  readonly address: string;
  constructor(host: string, address: string) {
    super(`refused by the network guard: ${host} resolves to ${address}, a private, loopback, link-local or metadata address (OUTBOUND_ALLOW_PRIVATE=true allows them in development)`);
    this.address = address;
  }
}

/** True when connecting to `address` (an IP literal) must be refused. */
export function isRefusedAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return true;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  if (METADATA_ADDRESSES.has(parsed.toNormalizedString()) || METADATA_ADDRESSES.has(parsed.toString())) return true;
  return !ALLOWED_RANGES.has(parsed.range());
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A drop-in for `dns.lookup`, for `http.request({ lookup })`, `net.connect({ lookup })` and
 * undici's `connect: { lookup }`: resolves as usual, then refuses any answer that is not a
 * public unicast address. With `allowPrivate` (OUTBOUND_ALLOW_PRIVATE, tests) it only resolves.
 */
export function guardedLookup(allowPrivate: boolean) {
  return function lookup(hostname: string, options: LookupOptions | LookupOneOptions | LookupAllOptions | number | LookupCallback, callback?: LookupCallback): void {
    const done = (typeof options === 'function' ? options : callback)!;
    const opts: LookupOptions = typeof options === 'function' ? {} : typeof options === 'number' ? { family: options } : options;
    dnsLookup(hostname, { ...opts, all: true }, (error, addresses) => {
      if (error) return done(error, opts.all ? [] : '');
      const list = addresses as LookupAddress[];
      if (!allowPrivate) {
        const refused = list.find((a) => isRefusedAddress(a.address));
        if (refused) return done(new RefusedAddressError(hostname, refused.address) as unknown as NodeJS.ErrnoException, opts.all ? [] : '');
      }
      if (opts.all) return done(null, list);
      const first = list[0];
      if (!first) return done(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
      return done(null, first.address, first.family);
    });
  };
}

/** Checks an IP-literal host before connecting (lookup is skipped for literals). */
export function assertHostAllowed(hostname: string, allowPrivate: boolean): void {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && ipaddr.isValid(bare) && isRefusedAddress(bare)) throw new RefusedAddressError(hostname, bare);
}
