// A real trace backend for the trace test: Zipkin's server (Maven Central's exec jar), in memory, on a loopback port.
import { spawn } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort } from './free-port.ts';
import { ensureMavenJars } from './maven-jars.ts';

// 3.x runs on Java 17, the machines' Java.
export const ZIPKIN_VERSION = '3.6.1';
const HERE = dirname(fileURLToPath(import.meta.url));
// A JVM that is alive is still starting, however slowly a busy machine runs it: the wait ends
// when it answers or exits. A safety net against one that hangs for good, not a speed assumption.
const START_SAFETY_NET_MS = 10 * 60_000;

export interface RunningZipkin {
  /** `http://127.0.0.1:<port>`: its API under /api/v2 (spans are posted to /api/v2/spans). */
  readonly url: string;
  stop(): Promise<void>;
}

/** Zipkin's self-contained server jar, fetched by Maven once into .cache/zipkin/<version>/libs. */
export function ensureZipkinJar(): string {
  const libs = ensureMavenJars({
    name: 'zipkin', version: ZIPKIN_VERSION, pom: join(HERE, 'zipkin', 'pom.xml'),
    properties: { 'zipkin.version': ZIPKIN_VERSION }, mainJar: `zipkin-server-${ZIPKIN_VERSION}-exec.jar`,
  });
  return join(libs, `zipkin-server-${ZIPKIN_VERSION}-exec.jar`);
}

/** Starts Zipkin with in-memory storage; resolves once its health check answers. */
export async function startZipkin(): Promise<RunningZipkin> {
  const jar = ensureZipkinJar();
  const port = await freePort();
  const child = spawn('java', ['-Xms64m', '-Xmx384m', '-jar', jar], {
    env: { ...process.env, QUERY_PORT: String(port), STORAGE_TYPE: 'mem', COLLECTOR_SCRIBE_ENABLED: 'false', LOGGING_LEVEL_ROOT: 'WARN' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => { output = `${output}${chunk.toString('utf8')}`.slice(-8000); });
  let exited: string | undefined;
  child.once('exit', (code, signal) => { exited = `exited with ${signal ?? code}`; });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (exited) return;
    const gone = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await gone;
  };
  const began = Date.now();
  for (;;) {
    if (exited) throw new Error(`Zipkin ${exited}:\n${output}`);
    const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) }).then((r) => r.ok, () => false);
    if (ok) return { url, stop };
    if (Date.now() - began > START_SAFETY_NET_MS) {
      await stop();
      throw new Error(`Zipkin did not answer within ${START_SAFETY_NET_MS / 60_000} min:\n${output}`);
    }
    await delay(500);
  }
}
