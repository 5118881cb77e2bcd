// The caller's address (the socket's, or the one a trusted proxy put in X-Forwarded-For) and address ranges (CIDR) to fence keys with.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';

/** An IPv4-mapped IPv6 address (`::ffff:10.1.2.3`, a dual-stack socket's) is the IPv4 address it carries. */
function parsed(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  const value = ipaddr.parse(address);
  return value.kind() === 'ipv6' && (value as ipaddr.IPv6).isIPv4MappedAddress() ? (value as ipaddr.IPv6).toIPv4Address() : value;
}

/**
 * Who is calling. With `trustProxyHops` 0 the socket's peer, whatever X-Forwarded-For says (anyone
 * can send the header). With N, the deployment says N proxies of its own stand in front, each
 * appending the address it was reached from: the N-th entry from the right is the one the
 * outermost proxy saw, and entries left of it are the client's to invent. A header with fewer
 * entries did not come through those proxies, so the socket's address is used.
 */
export function clientAddress(req: IncomingMessage, trustProxyHops: number): string {
  const own = socketAddress(req.socket);
  if (trustProxyHops === 0) return own;
  const header = req.headers['x-forwarded-for'];
  const entries = (Array.isArray(header) ? header.join(',') : header ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
  const entry = entries.length >= trustProxyHops ? entries[entries.length - trustProxyHops]! : undefined;
  return (entry === undefined ? undefined : parsed(entry)?.toString()) ?? own;
}

// A connection's peer is the same for every request it carries: parsed once (a few µs each time).
const peers = new WeakMap<Socket, string>();

function socketAddress(socket: Socket): string {
  const known = peers.get(socket);
  if (known !== undefined) return known;
  const raw = socket.remoteAddress;
  // A socket already closed has no address left to keep.
  if (raw === undefined) return 'unknown';
  const address = parsed(raw)?.toString() ?? raw;
  peers.set(socket, address);
  return address;
}

/**
 * A range in its canonical form (`10.0.0.0/8`, `2001:db8::/32`); a bare address is a range of
 * one. Undefined when it is not a range, or has bits set right of its prefix (a typo more often
 * than a wish: `10.1.0.0/8` would fence to all of 10/8).
 */
export function canonicalCidr(text: string): string | undefined {
  const value = text.trim();
  try {
    if (!value.includes('/')) {
      const address = parsed(value);
      return address && `${address.toString()}/${address.kind() === 'ipv4' ? 32 : 128}`;
    }
    const [address, bits] = ipaddr.parseCIDR(value);
    const network = address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(value) : ipaddr.IPv6.networkAddressFromCIDR(value);
    if (network.toString() !== address.toString()) return undefined;
    return `${network.toString()}/${bits}`;
  } catch {
    return undefined;
  }
}

/** Whether `address` is within one of `cidrs` (canonical ranges, as stored). */
export function addressAllowed(address: string, cidrs: readonly string[]): boolean {
  const caller = parsed(address);
  if (!caller) return false;
  return cidrs.some((cidr) => {
    const range = ipaddr.parseCIDR(cidr);
    return range[0].kind() === caller.kind() && caller.match(range);
  });
}
