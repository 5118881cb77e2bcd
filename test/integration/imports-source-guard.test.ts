// Imports from an address in production settings: https only, and the network guard refuses private and loopback addresses, by literal or by name.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { ImportJob } from '../../generated/client.ts';
import { clientOptions, expectStatus } from '../helpers/client.ts';
import { startImportService, waitForJob } from '../helpers/imports.ts';
import { startJsonlOrigin } from '../helpers/jsonl-origin.ts';
import type { JsonlOrigin } from '../helpers/jsonl-origin.ts';
import type { TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let origin: JsonlOrigin;

before(async () => {
  service = await startImportService(FILE, { OUTBOUND_ALLOW_PRIVATE: 'false' });
  origin = await startJsonlOrigin();
});
after(async () => {
  await origin?.close();
  await service?.close();
});

test('outside development a source must be https, and one that is or resolves to a loopback address is refused', async () => {
  const tenant = await service.newTenant();
  const opts = clientOptions(service.url, tenant.key);
  const plain = expectStatus(await api.createImport({ source: { url: `${origin.url}/feed.jsonl` } }, {}, opts), 400);
  assert.deepEqual(plain.error.details, [{ path: 'source.url', message: 'must be an https address (OUTBOUND_ALLOW_PRIVATE=true allows http in development)' }]);
  const port = new URL(origin.url).port;
  for (const host of ['127.0.0.1', 'localhost']) {
    const answer = await api.createImport({ source: { url: `https://${host}:${port}/feed.jsonl` } }, {}, opts);
    assert.equal(answer.status, 202);
    const job = await waitForJob(opts, (answer.data as { data: ImportJob }).data.id);
    assert.equal(job.status, 'failed');
    assert.equal(job.failureReason, `the source ${host}:${port} is refused by the network guard: a private, loopback, link-local or metadata address (OUTBOUND_ALLOW_PRIVATE=true allows them in development)`);
  }
  assert.equal(origin.requests.length, 0, 'nothing reached the origin');
});
