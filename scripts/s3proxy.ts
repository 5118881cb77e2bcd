// A real S3-compatible server for the s3 storage driver's tests: S3Proxy (Maven Central) on loopback with its filesystem backend.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.ts';
import { ensureMavenJars } from './maven-jars.ts';

// 3.0.0 runs on Java 17 (class files of version 61), the machines' Java.
export const S3PROXY_VERSION = '3.0.0';
const HERE = dirname(fileURLToPath(import.meta.url));

/** The S3Proxy jars, collected by Maven once into .cache/s3proxy/<version>/libs. */
export function ensureS3ProxyJars(): string {
  return ensureMavenJars({
    name: 's3proxy',
    version: S3PROXY_VERSION,
    pom: join(HERE, 's3proxy', 'pom.xml'),
    properties: { 's3proxy.version': S3PROXY_VERSION },
    mainJar: `s3proxy-${S3PROXY_VERSION}.jar`,
  });
}

export interface RunningS3Proxy {
  readonly endpoint: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  stop(): Promise<void>;
}

// A JVM that is alive is still starting, however slowly a busy machine runs it (two test runs
// starting JVMs at once on 2 cores can take more than a minute): the wait ends when it answers or exits.
// This bound is only a safety net against a process that hangs for good, not a speed assumption.
const START_SAFETY_NET_MS = 10 * 60_000;
// The last lines S3Proxy wrote, shown when it does not start.
const LOG_TAIL_LINES = 40;

/** Keeps the last lines of a child's output, and passes its stderr on to ours. */
function logTail(child: ChildProcess): () => string {
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString('utf8').split('\n').filter((line) => line.trim() !== ''));
    lines.splice(0, Math.max(0, lines.length - LOG_TAIL_LINES));
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', (chunk: Buffer) => {
    keep(chunk);
    process.stderr.write(chunk);
  });
  return () => (lines.length > 0 ? lines.join('\n') : '(S3Proxy wrote nothing)');
}

/** Waits until S3Proxy answers HTTP; fails as soon as its process ends (or cannot be started). */
async function waitForPort(url: string, child: ChildProcess): Promise<void> {
  let ended: string | undefined;
  const exited = new Promise<void>((done) => {
    // 'close', not 'exit': by then its last output has been read, for the error's log tail.
    child.once('close', (code, signal) => { ended = `exited with ${signal ?? `code ${code}`}`; done(); });
    child.once('error', (error) => { ended = `could not be started: ${error.message}`; done(); });
  });
  const began = Date.now();
  for (;;) {
    if (ended !== undefined) throw new Error(`S3Proxy ${ended} before answering on ${url}`);
    if (Date.now() - began > START_SAFETY_NET_MS) {
      throw new Error(`S3Proxy was still running but did not answer on ${url} within ${START_SAFETY_NET_MS / 60_000} min`);
    }
    try {
      await fetch(url, { signal: AbortSignal.timeout(5000) });
      return;
    } catch {
      await Promise.race([exited, new Promise((r) => setTimeout(r, 250))]);
    }
  }
}

/** Starts S3Proxy on a free loopback port, storing objects under `dataDir`. */
export async function startS3Proxy(dataDir: string): Promise<RunningS3Proxy> {
  const libs = ensureS3ProxyJars();
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const accessKeyId = 'catalog-test-access-key';
  const secretAccessKey = 'catalog-test-secret-key';
  mkdirSync(join(dataDir, 'objects'), { recursive: true });
  const properties = join(dataDir, 's3proxy.properties');
  writeFileSync(properties, [
    `s3proxy.endpoint=${endpoint}`,
    's3proxy.authorization=aws-v2-or-v4',
    `s3proxy.identity=${accessKeyId}`,
    `s3proxy.credential=${secretAccessKey}`,
    'jclouds.provider=filesystem',
    `jclouds.filesystem.basedir=${join(dataDir, 'objects')}`,
  ].join('\n'));
  const child = spawn('java', [`-Dlogback.configurationFile=${join(HERE, 's3proxy', 'logback.xml')}`, '-cp', `${libs}/*`,
    'org.gaul.s3proxy.Main', '--properties', properties], { stdio: ['ignore', 'pipe', 'pipe'] });
  const tail = logTail(child);
  try {
    await waitForPort(endpoint, child);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}; its last output:\n${tail()}`, { cause: error });
  }
  return {
    endpoint,
    accessKeyId,
    secretAccessKey,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
