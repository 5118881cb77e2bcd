// Production and staging (spec, "Versioning"): keys carry their deployment, a key of the other one is refused by name, and the served contract lists both.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import * as api from '../../generated/client.ts';
import { createApiKey } from '../../domain/access/key-store.ts';
import { clientOptions } from '../helpers/client.ts';
import { startTestService, testEnv } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { cliCommand } from '../helpers/runtime.ts';
import { cliActor } from '../../platform/actor.ts';

const FILE = import.meta.filename;
const PRODUCTION = 'https://catalog.example.com';
let staging: TestService;
let tenant: Tenant;

before(async () => {
  staging = await startTestService(FILE, { CATALOG_ENVIRONMENT: 'staging', OTHER_ENVIRONMENT_URL: `${PRODUCTION}/` });
  tenant = await staging.newTenant();
});
after(async () => {
  await staging?.close();
});

test('a staging deployment issues cat_test_ keys (CLI too), takes them, and refuses a production key saying whose it is', async () => {
  assert.match(tenant.key, /^cat_test_[0-9A-Za-z]{32}$/);
  assert.equal((await api.listItems({}, clientOptions(staging.url, tenant.key))).status, 200);

  const { stdout } = await promisify(execFile)(...cliCommand(['keys', 'create', '--catalog', tenant.catalogId, '--scopes', 'catalog:read']), {
    env: testEnv(FILE, staging.databaseUrl, { CATALOG_ENVIRONMENT: 'staging' }) as NodeJS.ProcessEnv,
  });
  const cliKey = stdout.trim().split('\n').at(-1)!;
  assert.match(cliKey, /^cat_test_/);
  assert.equal((await api.listItems({}, clientOptions(staging.url, cliKey))).status, 200);

  // A production key, even one stored in this very database, is refused before any lookup.
  const { key: live } = await createApiKey(staging.orm.em.fork(), { catalogId: tenant.catalogId, scopes: ['catalog:read'], tier: 'free', environment: 'production' }, cliActor());
  assert.match(live, /^cat_live_/);
  const refused = await api.listItems({}, clientOptions(staging.url, live));
  assert.equal(refused.status, 401);
  if (refused.status === 401) {
    assert.equal(refused.data.error.message,
      'This API key belongs to the production environment (cat_live_…); this is the staging service, which takes cat_test_… keys.');
  }
});

test("the served contract lists this deployment and the other one's address", async () => {
  const { data } = await api.getOpenApi(clientOptions(staging.url));
  const servers = (data as unknown as { servers: Array<{ url: string; description: string }> }).servers;
  assert.deepEqual(servers.slice(1), [
    { url: `${staging.config.publicBaseUrl}/api/v1/catalog`, description: 'This deployment (staging)' },
    { url: `${PRODUCTION}/api/v1/catalog`, description: 'The production deployment' },
  ]);
});
