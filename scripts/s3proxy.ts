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

async function waitForPort(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`S3Proxy exited with code ${child.exitCode}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`S3Proxy did not answer on ${url} within ${timeoutMs} ms`);
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
    'org.gaul.s3proxy.Main', '--properties', properties], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitForPort(endpoint, child, 60_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
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
