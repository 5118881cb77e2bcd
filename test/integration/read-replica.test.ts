// Reads from a streaming standby (DATABASE_READ_URL): marked reads are answered there while it keeps up, from the primary past the lag bound or while it is down, never with a 5xx.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, describe, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { ItemPayload } from '../../generated/client.ts';
import { query } from '../../scripts/postgres-replica/server.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { eventually } from '../helpers/media.ts';
import { metricValue } from '../helpers/metrics.ts';
import { privateReplicatedPostgres } from '../helpers/postgres-replica.ts';
import { cliCommand } from '../helpers/runtime.ts';
import { startTestService, testEnv } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { dropTopics } from '../helpers/spawned-service.ts';

const FILE = import.meta.filename;
// Small enough that a paused replay passes it within seconds; checks every 100 ms, so the test waits on them little.
const MAX_LAG_MS = 1500;
const WAIT_MS = 30_000;
const IN_USE = 'marked reads go to the read replica';
const UNUSABLE = 'read replica unusable: marked reads go to the primary';

const withDatabase = (serverUrl: string, name: string) => {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
};
const payload = (id: string): ItemPayload => ({ externalSystem: 'erp', externalId: id, name: `Item ${id}` });

describe('reads from a replica', () => {
  const pair = privateReplicatedPostgres('read-replica');
  let service: TestService | undefined;
  after(async () => {
    await service?.close();
    // The service was given its database, so its topics are left to the test that made them: this one.
    if (service) await dropTopics([...service.kafka.brokers], service.config.kafkaTopicPrefix).catch(() => undefined);
    await pair.remove();
  });

  let tenant: Tenant;
  const as = () => clientOptions(service!.url, tenant.key);
  const listed = async () => expectData(await api.listItems({ limit: 100 }, as()), 200).items.map((item) => item.externalId).sort();
  const reads = async (target: 'replica' | 'primary') => (await metricValue(service!.opsUrl, 'catalog_db_reads_total', { target })) ?? 0;
  const lag = () => metricValue(service!.opsUrl, 'catalog_db_read_replica_lag_seconds');
  const logged = (message: string) => service!.logged().filter((line) => line.msg === message);
  const onStandby = (sql: string) => query(pair.standbyUrl, sql);

  test('starts with its database on the primary and marked reads on the standby', async (t) => {
    const began = Date.now();
    const { primaryUrl, standbyUrl } = await pair.start();
    t.diagnostic(`pair started in ${Date.now() - began} ms`);
    // The service creates and migrates the database on the primary; the standby replays it.
    service = await startTestService(FILE, {
      DATABASE_URL: withDatabase(primaryUrl, 'catalog'),
      DATABASE_READ_URL: withDatabase(standbyUrl, 'catalog'),
      DATABASE_READ_MAX_LAG_MS: String(MAX_LAG_MS),
      DATABASE_READ_CHECK_INTERVAL_MS: '100',
      LOG_LEVEL: 'info',
    });
    tenant = await service.newTenant();
    // The first check may have run before the standby replayed the new database: then the next one finds it.
    await eventually(async () => logged(IN_USE).length > 0 || undefined, 'the replica in use', WAIT_MS);
    expectData(await api.upsertItem(payload('A'), as()), 201);
    await eventually(async () => (await listed()).includes('A') || undefined, 'A listed once the standby replayed it', WAIT_MS);
    const before = await reads('replica');
    await listed();
    assert.equal(await reads('replica'), before + 1);
    const shown = logged(IN_USE).at(-1)!;
    assert.ok(!JSON.stringify(shown).includes(pair.primaryUrl), 'the replica, not the primary, is named');
  });

  test('a paused replay: lists miss a new item until the lag passes the bound, then the primary answers; resumed, the replica again', async () => {
    const warnings = logged(UNUSABLE).length;
    const backs = logged(IN_USE).length;
    const replicaBefore = await reads('replica');
    // From here the lag grows with the time since the standby's last replayed commit: the next steps take milliseconds of the 1.5 s.
    await onStandby('SELECT pg_wal_replay_pause()');
    expectData(await api.upsertItem(payload('B'), as()), 201);
    assert.deepEqual(await listed(), ['A'], 'the paused standby has not replayed B: the list came from it');
    // getItem reads the primary: the caller sees its own write at once.
    assert.equal(expectData(await api.getItem('erp', 'B', as()), 200).externalId, 'B');
    assert.equal(await reads('replica'), replicaBefore + 1);

    const primaryBefore = await reads('primary');
    const fellBack = Date.now();
    await eventually(async () => (await listed()).includes('B') || undefined, 'B listed, from the primary, once the lag passed the bound', WAIT_MS);
    assert.ok(Date.now() - fellBack < WAIT_MS);
    assert.ok((await reads('primary')) > primaryBefore, 'the fallback is counted');
    assert.ok((await lag())! * 1000 > MAX_LAG_MS, 'the lag metric shows the replica behind');
    await listed();
    const warned = logged(UNUSABLE).slice(warnings);
    assert.equal(warned.length, 1, 'one warning for the whole episode, however many reads fell back');
    assert.match(String(warned[0]!.reason), /past the bound/);
    assert.equal(warned[0]!.level, 40);

    await onStandby('SELECT pg_wal_replay_resume()');
    await eventually(async () => logged(IN_USE).length > backs || undefined, 'the info line: reads back on the replica', WAIT_MS);
    const replicaAgain = await reads('replica');
    assert.deepEqual(await listed(), ['A', 'B']);
    assert.equal(await reads('replica'), replicaAgain + 1);
    assert.ok((await lag())! * 1000 <= MAX_LAG_MS);
  });

  test('the standby stopped: marked reads answer 200 from the primary throughout, and go back to it once it runs again', async (t) => {
    const warnings = logged(UNUSABLE).length;
    const backs = logged(IN_USE).length;
    const statuses = new Map<string, number>();
    const count = (what: string, status: number) => statuses.set(`${what} ${status}`, (statuses.get(`${what} ${status}`) ?? 0) + 1);
    // Reads in flight while the standby goes: some lose their connection mid-request, some find it refused before a check noticed.
    let reading = true;
    const traffic = (async () => {
      while (reading) {
        const [list, exported, events] = await Promise.all([
          api.listItems({ limit: 100 }, as()),
          fetch(`${service!.url}/api/v1/catalog/items/export`, { headers: { authorization: `Bearer ${tenant.key}` } }).then(async (r) => ({ status: r.status, lines: (await r.text()).split('\n').filter(Boolean).length })),
          api.listEvents({ limit: 10 }, as()),
        ]);
        count('listItems', list.status);
        count('exportItems', exported.status);
        if (exported.status === 200) assert.equal(exported.lines, 2, 'every export whole');
        count('listEvents', events.status);
      }
    })();
    const stopped = Date.now();
    await pair.stopStandby('fast');
    t.diagnostic(`standby stopped in ${Date.now() - stopped} ms`);
    await eventually(async () => logged(UNUSABLE).length > warnings || undefined, 'the warning: the replica does not answer', WAIT_MS);
    const primaryBefore = await reads('primary');
    assert.deepEqual(await listed(), ['A', 'B']);
    assert.ok((await reads('primary')) > primaryBefore);
    assert.ok(Number.isNaN(await lag()), 'no lag to report while it does not answer');
    const ready = await fetch(`${service!.opsUrl}/readyz`);
    assert.equal(ready.status, 200, 'the primary alone decides readiness');
    assert.equal((await ready.json() as { checks: { database: string } }).checks.database, 'ok');
    reading = false;
    await traffic;
    assert.deepEqual([...statuses.keys()].filter((key) => !key.endsWith(' 200')), [], `every read answered 200: ${JSON.stringify([...statuses])}`);
    assert.equal(logged(UNUSABLE).length, warnings + 1, 'one warning for the outage');

    const restarted = Date.now();
    await pair.start();
    t.diagnostic(`standby streaming again in ${Date.now() - restarted} ms`);
    await eventually(async () => logged(IN_USE).length > backs || undefined, 'reads back on the replica', WAIT_MS);
    const replicaAgain = await reads('replica');
    assert.deepEqual(await listed(), ['A', 'B']);
    assert.equal(await reads('replica'), replicaAgain + 1);
  });

  test('catalog doctor finds the standby as the service does: streaming, and how far behind', async () => {
    // Last, and without blocking: the service under test runs in this process, its checks on its event loop.
    const { stdout } = await promisify(execFile)(...cliCommand(['doctor']), {
      env: { ...testEnv(FILE, withDatabase(pair.primaryUrl, 'catalog')), DATABASE_READ_URL: withDatabase(pair.standbyUrl, 'catalog') } as NodeJS.ProcessEnv,
    }).catch((error: { stdout: string; stderr: string }) => ({ stdout: `${error.stdout}${error.stderr}` }));
    assert.match(stdout, /^ok +read replica +.*: a streaming standby, \d+ ms behind/m, stdout);
  });
});
