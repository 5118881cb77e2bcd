// The network guard refuses every non-public destination, resolved or literal.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { RefusedAddressError, assertHostAllowed, guardedLookup, isRefusedAddress } from '../../platform/outbound/network-guard.ts';

test('private, loopback, link-local, metadata and special addresses are refused; public ones pass', () => {
  for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1',
    '0.0.0.0', '::1', '::', 'fe80::1', 'fc00::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '224.0.0.1', 'not-an-ip']) {
    assert.equal(isRefusedAddress(address), true, address);
  }
  for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8']) {
    assert.equal(isRefusedAddress(address), false, address);
  }
});

test('a host name resolving to loopback is refused at lookup time unless private access is allowed', async () => {
  const refusing = promisify(guardedLookup(false)) as unknown as (host: string, options: object) => Promise<unknown>;
  await assert.rejects(refusing('localhost', {}), RefusedAddressError);
  const allowing = promisify(guardedLookup(true)) as unknown as (host: string, options: object) => Promise<unknown>;
  assert.ok(await allowing('localhost', {}));
});

test('IP literals are checked before connecting', () => {
  assert.throws(() => assertHostAllowed('[::1]', false), RefusedAddressError);
  assert.throws(() => assertHostAllowed('169.254.169.254', false), RefusedAddressError);
  assert.doesNotThrow(() => assertHostAllowed('169.254.169.254', true));
  assert.doesNotThrow(() => assertHostAllowed('example.com', false));
});
