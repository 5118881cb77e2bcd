// Deno smoke test: the CLI issues a key and `deno task start` serves, answers and shuts down cleanly.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../scripts/free-port.ts';
import { dropDatabase, freshDatabase } from '../helpers/database.ts';
import { ensureKafka } from '../../scripts/kafka.ts';
import { Kafka, logLevel } from 'kafkajs';
import { allTopicNames } from '../../platform/kafka/topics.ts';
import { RawConnection, rawRequest } from '../helpers/raw-http.ts';

// The few Deno APIs used here, typed locally so `tsc` (Node types only) and `deno check` both accept the file.
interface ChildStatus { success: boolean; code: number; signal: string | null }
interface CommandOptions {
  args: string[];
  cwd: string;
  env: Record<string, string>;
  stdin: 'null';
  stdout: 'piped';
  stderr: 'piped';
  signal?: AbortSignal;
}
interface ChildProcess {
  readonly pid: number;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly status: Promise<ChildStatus>;
  kill(signal?: string): void;
}
interface DenoApi {
  execPath(): string;
  Command: new (command: string, options: CommandOptions) => {
    output(): Promise<ChildStatus & { stdout: Uint8Array; stderr: Uint8Array }>;
    spawn(): ChildProcess;
  };
  env: { get(name: string): string | undefined };
  addSignalListener(signal: string, handler: () => void): void;
  exit(code: number): never;
}

const denoGlobal = (globalThis as unknown as { Deno?: DenoApi }).Deno;
if (denoGlobal === undefined) {
  process.stderr.write('test/deno/smoke.ts runs under Deno: npm run test:deno\n');
  process.exit(1);
}
const Deno: DenoApi = denoGlobal;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const STARTUP_TIMEOUT_MS = 120_000; // migrations and the first Kafka metadata call take a while on 2 cores
const SHUTDOWN_TIMEOUT_MS = 15_000;
const CLI_TIMEOUT_MS = 120_000;

let passed = 0;
let failed = 0;
let server: ChildProcess | undefined;
let serverExited = false;
const serverLog: string[] = [];

class CheckFailed extends Error {}

function ok(name: string, note?: string): void {
  passed += 1;
  console.log(`ok ${passed + failed} - ${name}${note ? ` # ${note}` : ''}`);
}

function notOk(name: string, why: string): void {
  failed += 1;
  console.log(`not ok ${passed + failed} - ${name}\n  # ${why.replaceAll('\n', '\n  # ')}`);
}

/** Runs one check; a failure is reported and the remaining checks still run unless `fatal`. */
async function check(name: string, body: () => Promise<string | void> | string | void, fatal = false): Promise<void> {
  try {
    ok(name, (await body()) ?? undefined);
  } catch (error) {
    notOk(name, error instanceof Error ? error.message : String(error));
    if (fatal) throw new CheckFailed(name);
  }
}

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

const lastLine = (text: string): string => text.trimEnd().split('\n').at(-1)?.trim() ?? '';
const tail = (lines: string[], n = 40): string => lines.join('').trimEnd().split('\n').slice(-n).join('\n');

function portOpen(hostPort: string): Promise<boolean> {
  const [host, port] = hostPort.split(':');
  return new Promise((done) => {
    const socket = connect({ host: host ?? '127.0.0.1', port: Number(port), timeout: 1000 });
    const finish = (open: boolean) => { socket.destroy(); done(open); };
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
    socket.once('timeout', () => finish(false));
  });
}

async function runCli(args: string[], env: Record<string, string>): Promise<string> {
  const command = new Deno.Command(Deno.execPath(), {
    args: ['task', '--quiet', 'catalog', ...args],
    cwd: ROOT,
    env,
    stdin: 'null',
    stdout: 'piped',
    stderr: 'piped',
    signal: AbortSignal.timeout(CLI_TIMEOUT_MS),
  });
  const result = await command.output();
  const stdout = new TextDecoder().decode(result.stdout);
  const stderr = new TextDecoder().decode(result.stderr);
  assert(result.success, `catalog ${args.slice(0, 2).join(' ')} exited with ${result.code}${result.signal ? ` (${result.signal})` : ''}\n${stderr.trim() || stdout.trim()}`);
  return stdout;
}

async function collect(stream: ReadableStream<Uint8Array>, into: string[]): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) into.push(decoder.decode(chunk, { stream: true }));
}

/** The pid and every descendant of it, read from /proc (deno task runs the service as its child). */
function processTree(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of /proc/PID/stat is the parent pid; the command name before it may hold spaces.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // the process ended while we looked
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i += 1) tree.push(...(parents.get(tree[i]!) ?? []));
  return tree;
}

function killServer(): void {
  if (!server || serverExited) return;
  for (const pid of processTree(server.pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

async function waitForHealth(base: string, exited: Promise<ChildStatus>): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  let early: ChildStatus | undefined;
  void exited.then((status) => { early = status; });
  let lastError = '';
  while (Date.now() < deadline) {
    if (early) throw new Error(`the service exited with ${early.code} before answering /healthz\n${tail(serverLog)}`);
    try {
      const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      if (res.status === 200) return;
      lastError = `status ${res.status}`;
    } catch (error) {
      lastError = (error as Error).message;
    }
    await sleep(250);
  }
  throw new Error(`/healthz did not answer 200 within ${STARTUP_TIMEOUT_MS / 1000} s (${lastError})\n${tail(serverLog)}`);
}

type Json = Record<string, unknown>;

function assertCommonHeaders(res: Response, sentRequestId?: string): void {
  const requestId = res.headers.get('x-request-id');
  assert(requestId, 'no X-Request-Id header');
  if (sentRequestId) assert(requestId === sentRequestId, `X-Request-Id ${requestId} is not the one sent (${sentRequestId})`);
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    const value = res.headers.get(name);
    assert(value !== null && /^\d+$/.test(value), `header ${name} is ${value === null ? 'missing' : `"${value}"`}`);
  }
}

function assertErrorEnvelope(body: Json, res: Response, code: string): void {
  assert(body.success === false, `success is ${JSON.stringify(body.success)}, expected false`);
  const error = body.error as Json | undefined;
  assert(error && typeof error === 'object', 'no error object in the envelope');
  assert(error.code === code, `error.code is ${JSON.stringify(error.code)}, expected "${code}"`);
  assert(typeof error.message === 'string' && error.message !== '', 'error.message is not a non-empty string');
  assert(error.requestId === res.headers.get('x-request-id'), `error.requestId ${JSON.stringify(error.requestId)} differs from X-Request-Id`);
}

async function readJson(res: Response): Promise<Json> {
  const type = res.headers.get('content-type') ?? '';
  const text = await res.text();
  assert(type.startsWith('application/json'), `content-type is "${type}", expected JSON; body: ${text.slice(0, 300)}`);
  return JSON.parse(text) as Json;
}

/** The statuses the contract documents for GET /items, if the operation can be found. */
function documentedStatuses(contract: Json | undefined): string[] | undefined {
  const paths = contract?.paths as Record<string, Record<string, { responses?: Json }>> | undefined;
  const operation = paths?.['/items']?.get ?? paths?.['/api/v1/catalog/items']?.get;
  return operation?.responses ? Object.keys(operation.responses) : undefined;
}

/** Deletes this run's topics, so runs do not pile them up on a broker they share. */
async function deleteTopics(brokers: string, topicPrefix: string): Promise<void> {
  const admin = new Kafka({ clientId: 'deno-smoke', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    await admin.deleteTopics({ topics: allTopicNames(topicPrefix) });
  } catch {
    // The service never started, or its topics were never made: nothing to delete.
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'catalog-deno-smoke-'));
  const topicPrefix = `smoke.deno.${Date.now().toString(36)}.`;
  let databaseUrl: string | undefined;
  let brokers = '';
  try {
    brokers = Deno.env.get('KAFKA_BROKERS') ?? '';
    if (brokers === '') {
      // Same as the Node tests' global setup: reuse the project's local broker, start it if needed.
      brokers = (await ensureKafka({ dataDir: join(ROOT, '.data') })).brokers.join(',');
    }
    await check(`a Kafka broker listens on ${brokers}`, async () => {
      assert(await portOpen(brokers.split(',')[0]!.trim()), `nothing listens on ${brokers}; start it with: npm run kafka -- start`);
    }, true);

    // Named after this run: a smoke test running beside another never shares its database.
    databaseUrl = await freshDatabase('deno-smoke.test.ts');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = {
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      STORAGE_DRIVER: 'local',
      STORAGE_DIR: join(dataDir, 'storage'),
      SIGNING_SECRET: 'deno-smoke-signing-secret-0123456789abcdef',
      LOG_LEVEL: 'warn',
      NO_COLOR: '1',
    };

    let key = '';
    await check('CLI under Deno: catalogs create prints the catalog id, keys create prints the key', async () => {
      const name = `deno-smoke-${Date.now()}`;
      const catalogId = lastLine(await runCli(['catalogs', 'create', '--name', name, '--owner-email', 'owner@deno-smoke.example'], env));
      assert(/^[0-9a-f-]{36}$/i.test(catalogId), `last line of catalogs create is not an id: "${catalogId}"`);
      key = lastLine(await runCli(['keys', 'create', '--catalog', name, '--scopes', 'catalog:read,catalog:write', '--tier', 'free'], env));
      assert(/^cat_[a-z]+_\S+$/.test(key), `last line of keys create is not a key: "${key.slice(0, 12)}…"`);
    }, true);

    // Exactly what a developer runs: the deno.json task, its permission flags and its signal forwarding.
    const child = new Deno.Command(Deno.execPath(), {
      args: ['task', 'start'],
      cwd: ROOT,
      env: {
        ...env,
        PORT: String(port),
        HOST: '127.0.0.1',
        ROLE: 'all',
        KAFKA_BROKERS: brokers,
        KAFKA_TOPIC_PREFIX: topicPrefix,
      },
      stdin: 'null',
      stdout: 'piped',
      stderr: 'piped',
    }).spawn();
    server = child;
    const exited = child.status.then((status) => { serverExited = true; return status; });
    const drained = Promise.all([collect(child.stdout, serverLog), collect(child.stderr, serverLog)]).catch(() => undefined);

    await check('deno task start answers /healthz', () => waitForHealth(base, exited), true);

    let contract: Json | undefined;
    await check('GET /api/v1/catalog/openapi.json → 200 JSON with openapi 3.1.0, no key needed', async () => {
      const res = await fetch(`${base}/api/v1/catalog/openapi.json`);
      const body = await readJson(res);
      assert(res.status === 200, `status ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      assert(body.openapi === '3.1.0', `openapi is ${JSON.stringify(body.openapi)}`);
      assert(res.headers.get('x-request-id'), 'no X-Request-Id header');
      contract = body;
    });

    await check('GET /api/v1/catalog/items with a key → documented answer in the envelope, request id and rate-limit headers', async () => {
      const requestId = `deno-smoke-${Date.now()}`;
      const res = await fetch(`${base}/api/v1/catalog/items`, {
        headers: { authorization: `Bearer ${key}`, 'x-request-id': requestId },
      });
      const body = await readJson(res);
      const summary = `status ${res.status}: ${JSON.stringify(body).slice(0, 300)}`;
      assertCommonHeaders(res, requestId);
      if (res.status === 501) {
        assertErrorEnvelope(body, res, 'not_implemented');
        return '501 not_implemented (items not built yet)';
      }
      assert(res.status !== 401 && res.status !== 403 && res.status < 500, summary);
      const documented = documentedStatuses(contract);
      if (documented) {
        assert(documented.includes(String(res.status)) || documented.includes('default'), `${summary} (documented: ${documented.join(', ')})`);
      }
      if (res.status < 300) {
        assert(body.success === true && 'data' in body, `expected { success: true, data } — ${summary}`);
      } else {
        assert(body.success === false && typeof (body.error as Json | undefined)?.code === 'string', `expected an error envelope — ${summary}`);
      }
      return `${res.status}`;
    });

    await check('GET /api/v1/catalog/items without a key → 401 unauthorized in the envelope', async () => {
      const res = await fetch(`${base}/api/v1/catalog/items`);
      const body = await readJson(res);
      assert(res.status === 401, `status ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      assertErrorEnvelope(body, res, 'unauthorized');
      assertCommonHeaders(res);
    });

    // A refused body left unread once broke the keep-alive connection under Deno (ECONNRESET for the next request).
    await check('one keep-alive connection: 413 for a 2 MB body (declared, then chunked), 415, then a valid request, all answered', async () => {
      const connection = await RawConnection.open(base);
      try {
        const auth = { authorization: `Bearer ${key}` };
        const item = (padding: number) => JSON.stringify({ externalSystem: 'erp', externalId: 'deno-keep-alive', name: 'x', description: 'd'.repeat(padding) });
        const chunked = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n0\r\n\r\n`;
        const steps: Array<[Buffer, number, string]> = [
          [rawRequest('POST', '/api/v1/catalog/items/upsert', { ...auth, 'content-type': 'application/json' }, item(2 * 1024 * 1024)), 413, 'payload_too_large'],
          // Chunked, without Content-Length: the limit is found while reading.
          [rawRequest('POST', '/api/v1/catalog/items/upsert', { ...auth, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, chunked(item(2 * 1024 * 1024))), 413, 'payload_too_large'],
          [rawRequest('POST', '/api/v1/catalog/items/upsert', { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, 'name=x'), 415, 'unsupported_media_type'],
          [rawRequest('GET', '/api/v1/catalog/items', auth), 200, ''],
        ];
        for (const [request, status, code] of steps) {
          connection.write(request);
          const response = await connection.next();
          const body = JSON.parse(response.body) as Json;
          assert(response.status === status, `expected ${status}, got ${response.status}: ${response.body.slice(0, 300)}`);
          assert(response.headers['x-request-id'], `no X-Request-Id on the ${status}`);
          assert(response.headers.connection !== 'close', `the ${status} closes the connection`);
          if (code) assert((body.error as Json | undefined)?.code === code, `expected ${code}: ${response.body.slice(0, 300)}`);
        }
        assert(connection.errors.length === 0, connection.errors.join('; '));
      } finally {
        connection.close();
      }
    });

    await check('headers over the parser limit → 431 request_header_fields_too_large in the envelope with X-Request-Id', async () => {
      const connection = await RawConnection.open(base);
      try {
        connection.write(rawRequest('GET', '/api/v1/catalog/items', { 'x-padding': 'p'.repeat(64 * 1024) }));
        const response = await connection.next();
        const error = (JSON.parse(response.body) as Json).error as Json | undefined;
        assert(response.status === 431, `status ${response.status}: ${response.body.slice(0, 300)}`);
        assert(error?.code === 'request_header_fields_too_large', response.body.slice(0, 300));
        assert(response.headers['x-request-id'] && error.requestId === response.headers['x-request-id'], 'no X-Request-Id, or not the one in the envelope');
      } finally {
        connection.close();
      }
    });

    await check('a body too large to drain → 413 with Connection: close reaches a client still sending', async () => {
      const connection = await RawConnection.open(base);
      try {
        connection.write(rawRequest('POST', '/api/v1/catalog/items/upsert', { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, Buffer.alloc(16 * 1024 * 1024, 'x')));
        const response = await connection.next();
        assert(response.status === 413, `status ${response.status}: ${response.body.slice(0, 300)}`);
        assert(response.headers.connection === 'close', `Connection: ${response.headers.connection}`);
        await connection.closed;
        assert(connection.errors.length === 0, connection.errors.join('; '));
      } finally {
        connection.close();
      }
    });

    await check(`SIGTERM to deno task start → the service exits with code 0 within ${SHUTDOWN_TIMEOUT_MS / 1000} s`, async () => {
      child.kill('SIGTERM');
      const timeout = sleep(SHUTDOWN_TIMEOUT_MS).then(() => undefined);
      const status = await Promise.race([exited, timeout]);
      assert(status, `still running ${SHUTDOWN_TIMEOUT_MS / 1000} s after SIGTERM\n${tail(serverLog)}`);
      assert(status.code === 0, `exited with code ${status.code}${status.signal ? ` (signal ${status.signal})` : ''}\n${tail(serverLog)}`);
    });
    killServer();
    await Promise.race([drained, sleep(2000)]);

    await check('the service logged no errors (pino level ≥ 50)', () => {
      const errors = serverLog.join('').split('\n').filter((line) => {
        try {
          return (JSON.parse(line) as { level?: number }).level! >= 50;
        } catch {
          return false;
        }
      });
      assert(errors.length === 0, errors.slice(0, 5).join('\n'));
    });
  } finally {
    killServer();
    rmSync(dataDir, { recursive: true, force: true });
    if (databaseUrl) await dropDatabase(databaseUrl).catch(() => undefined);
    if (brokers !== '') await deleteTopics(brokers, topicPrefix);
  }
}

Deno.addSignalListener('SIGINT', () => {
  killServer();
  Deno.exit(130);
});

try {
  await main();
} catch (error) {
  if (!(error instanceof CheckFailed)) notOk('smoke test set-up', (error as Error).stack ?? String(error));
  killServer();
}
console.log(`${passed} passed, ${failed} failed`);
Deno.exit(failed === 0 ? 0 : 1);
