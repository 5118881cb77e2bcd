// The rate limit lives in Postgres: two API instances on one database share one budget per key.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as client from '../../generated/client.ts';
import { clientOptions } from '../helpers/client.ts';
import { checkedFetch } from '../helpers/contract-check.ts';
import { sqlClient } from '../helpers/database.ts';
import { countRequests } from '../../platform/http/rate-limit.ts';
import { startTestService } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let first: TestService;
let second: TestService;

before(async () => {
  first = await startTestService(FILE);
  second = await startTestService(FILE, { DATABASE_URL: first.databaseUrl });
});
after(async () => {
  await second?.close();
  await first?.close();
});

/**
 * Counters are kept per clock minute, so a test that spends a budget and reads its counter
 * starts at the top of a minute when less than half of the current one is left: a run that
 * straddles the boundary would split its count over two windows.
 */
async function startWithinOneMinute(): Promise<void> {
  const intoMinute = (Date.now() / 1000) % 60;
  if (intoMinute > 30) await new Promise((resolve) => setTimeout(resolve, (60 - intoMinute) * 1000 + 50));
}

test('two instances on one database share one budget of 100 requests per minute (free tier)', async () => {
  const { key } = await first.newTenant({ tier: 'free', scopes: ['catalog:read'] });
  await startWithinOneMinute();
  const headers = { authorization: `Bearer ${key}` };
  const statuses: number[] = [];
  const remaining: number[] = [];
  // Alternate between the instances: each alone would allow 100.
  for (let i = 0; i < 100; i += 1) {
    const options = clientOptions(i % 2 === 0 ? first.url : second.url, key);
    const answer = await client.listItems({}, {
      ...options,
      fetch: async (input, init) => {
        const response = await options.fetch!(input, init);
        remaining.push(Number(response.headers.get('x-ratelimit-remaining')));
        assert.equal(response.headers.get('x-ratelimit-limit'), '100');
        return response;
      },
    });
    statuses.push(answer.status);
  }
  assert.ok(statuses.every((s) => s !== 429), 'the first 100 requests are within the budget');
  assert.deepEqual(remaining.slice(0, 3), [99, 98, 97]);
  assert.equal(remaining.at(-1), 0);

  for (const base of [first.url, second.url]) {
    const { response, body } = await checkedFetch(`${base}/api/v1/catalog/items`, { headers });
    assert.equal(response.status, 429);
    assert.equal(body.error.code, 'too_many_requests');
    const retryAfter = Number(response.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 120, `Retry-After ${retryAfter} is a sensible wait`);
    assert.equal(body.error.retryAfter, retryAfter, 'error.retryAfter equals the Retry-After header');
    assert.equal(response.headers.get('x-ratelimit-remaining'), '0');
  }
});

test('refused requests are not counted, and budgets are per key', async () => {
  const a = await first.newTenant({ tier: 'free', scopes: ['catalog:read'] });
  const b = await first.newTenant({ tier: 'pro', scopes: ['catalog:read'] });
  await startWithinOneMinute();
  for (let i = 0; i < 100; i += 1) {
    await fetch(`${second.url}/api/v1/catalog/items`, { headers: { authorization: `Bearer ${a.key}` } }).then((r) => r.arrayBuffer());
  }
  for (let i = 0; i < 3; i += 1) {
    const limited = await checkedFetch(`${first.url}/api/v1/catalog/items`, { headers: { authorization: `Bearer ${a.key}` } });
    assert.equal(limited.response.status, 429);
  }
  const sql = await sqlClient(first.databaseUrl);
  try {
    const { rows } = await sql.query('select count from rate_limits where subject = $1', [`key:${a.keyId}`]);
    assert.equal(rows[0].count, 100, 'the three refused requests were not counted');
  } finally {
    await sql.end();
  }
  const other = await checkedFetch(`${first.url}/api/v1/catalog/items`, { headers: { authorization: `Bearer ${b.key}` } });
  assert.notEqual(other.response.status, 429, 'another key keeps its own budget');
  assert.equal(other.response.headers.get('x-ratelimit-limit'), '1000', 'pro tier allows 1000 per minute');
  assert.equal(other.response.headers.get('x-ratelimit-remaining'), '999');
});

test('the window slides: the previous minute weighs by its remaining overlap', async () => {
  const em = first.orm.em.fork();
  const hit = async (subject: string, limit: number, now: number) => (await countRequests(em, subject, limit, now))[0]!;
  const subject = `test:${Date.now()}`;
  // 10 requests late in minute [600, 660) with a limit of 10.
  for (let i = 0; i < 10; i += 1) {
    const admitted = await hit(subject, 10, 650 + i * 0.1);
    assert.equal(admitted.allowed, true);
    assert.equal(admitted.remaining, 9 - i);
  }
  const refused = await hit(subject, 10, 655);
  assert.equal(refused.allowed, false);
  assert.equal(refused.retryAfter, 11, 'room returns at 666 s, when 10 × (60 − 6) / 60 + 1 ≤ 10');
  assert.equal(refused.resetAt, 720, 'the full limit is back once this minute has slid out of the window');
  // 15 s into the next minute the previous one still weighs 10 × 45/60 = 7.5: two more fit.
  assert.equal((await hit(subject, 10, 675)).allowed, true);
  assert.equal((await hit(subject, 10, 675)).allowed, true);
  const full = await hit(subject, 10, 675);
  assert.equal(full.allowed, false);
  assert.equal(full.retryAfter, 3, 'at 678 s the old minute weighs 10 × 42/60 = 7, and 7 + 2 + 1 ≤ 10');
  assert.equal(full.resetAt, 780);
  // At the reset it announced, nothing of the old minutes weighs any more: the whole limit is there.
  const fresh = await hit(subject, 10, full.resetAt);
  assert.equal(fresh.allowed, true);
  assert.equal(fresh.remaining, 9);
});

test('concurrent requests never overrun the budget: of 130 at once under a limit of 100, exactly 100 pass', async () => {
  const orm = first.orm;
  const subject = `burst:${Date.now()}`;
  const now = Math.floor(Date.now() / 60_000) * 60 + 1;
  const states = (await Promise.all(Array.from({ length: 130 }, () => countRequests(orm.em.fork(), subject, 100, now)))).flat();
  assert.equal(states.filter((s) => s.allowed).length, 100);
  assert.deepEqual(states.filter((s) => s.allowed).map((s) => s.remaining).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i));
});

test('one statement counting several requests admits them in order as far as the budget goes', async () => {
  const em = first.orm.em.fork();
  const subject = `group:${Date.now()}`;
  const now = Math.floor(Date.now() / 60_000) * 60 + 1;
  assert.deepEqual((await countRequests(em, subject, 10, now, 4)).map((s) => [s.allowed, s.remaining]), [[true, 9], [true, 8], [true, 7], [true, 6]]);
  const rest = await countRequests(em, subject, 10, now, 8);
  assert.deepEqual(rest.map((s) => s.allowed), [true, true, true, true, true, true, false, false]);
  assert.deepEqual(rest.slice(0, 6).map((s) => s.remaining), [5, 4, 3, 2, 1, 0]);
  assert.ok(rest[7]!.retryAfter >= 1);
  const sql = await sqlClient(first.databaseUrl);
  try {
    const { rows } = await sql.query('select count, admitted from rate_limits where subject = $1', [subject]);
    assert.deepEqual(rows, [{ count: 10, admitted: 6 }], 'the two refused requests were not counted');
  } finally {
    await sql.end();
  }
});

test('130 concurrent requests with one key on two instances: exactly the 100 of the free tier pass', async () => {
  const { key } = await first.newTenant({ tier: 'free', scopes: ['catalog:read'] });
  await startWithinOneMinute();
  const answers = await Promise.all(Array.from({ length: 130 }, (_, i) =>
    fetch(`${(i % 2 === 0 ? first : second).url}/api/v1/catalog/items?limit=1`, { headers: { authorization: `Bearer ${key}` } })
      .then(async (r) => { await r.arrayBuffer(); return r; })));
  const passed = answers.filter((r) => r.status === 200);
  assert.equal(passed.length, 100);
  assert.equal(answers.filter((r) => r.status === 429).length, 30);
  assert.deepEqual(passed.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i));
});
