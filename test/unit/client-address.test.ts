// The caller's address: the socket's peer (an IPv4-mapped one as IPv4), or a trusted proxy's entry of X-Forwarded-For; and ranges.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { addressAllowed, canonicalCidr, clientAddress } from '../../platform/http/client-address.ts';

const request = (remoteAddress: string | undefined, forwarded?: string) =>
  ({ socket: { remoteAddress }, headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } }) as unknown as IncomingMessage;

test('the socket\'s peer, an IPv4-mapped IPv6 address as the IPv4 address it carries, and the same for each request of a connection', () => {
  assert.equal(clientAddress(request('::ffff:10.1.2.3'), 0), '10.1.2.3');
  assert.equal(clientAddress(request('2001:db8::1'), 0), '2001:db8::1');
  const connection = request('::ffff:192.0.2.7');
  assert.equal(clientAddress(connection, 0), '192.0.2.7');
  assert.equal(clientAddress(connection, 0), '192.0.2.7');
  assert.equal(clientAddress(request(undefined), 0), 'unknown', 'a closed socket has no address');
});

test('X-Forwarded-For counts only behind the proxies the deployment trusts, from the right', () => {
  assert.equal(clientAddress(request('127.0.0.1', '203.0.113.9'), 0), '127.0.0.1', 'anyone can send the header');
  assert.equal(clientAddress(request('127.0.0.1', '198.51.100.1, 203.0.113.9'), 1), '203.0.113.9');
  assert.equal(clientAddress(request('127.0.0.1', '198.51.100.1, 203.0.113.9'), 2), '198.51.100.1');
  assert.equal(clientAddress(request('127.0.0.1', '203.0.113.9'), 2), '127.0.0.1', 'fewer entries than proxies: not through them');
  assert.equal(clientAddress(request('127.0.0.1', 'not-an-address'), 1), '127.0.0.1');
});

test('ranges are canonical, refuse bits right of the prefix, and match their own family only', () => {
  assert.equal(canonicalCidr('10.0.0.0/8'), '10.0.0.0/8');
  assert.equal(canonicalCidr(' 192.0.2.5 '), '192.0.2.5/32');
  assert.equal(canonicalCidr('10.1.0.0/8'), undefined);
  assert.equal(canonicalCidr('2001:db8::/32'), '2001:db8::/32');
  assert.equal(canonicalCidr('nonsense'), undefined);
  assert.ok(addressAllowed('10.200.1.1', ['10.0.0.0/8']));
  assert.ok(!addressAllowed('11.0.0.1', ['10.0.0.0/8']));
  assert.ok(!addressAllowed('2001:db8::1', ['10.0.0.0/8']));
  assert.ok(addressAllowed('2001:db8::1', ['10.0.0.0/8', '2001:db8::/32']));
});
