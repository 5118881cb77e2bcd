// The images of `npm run test:containers`: a debootstrap base (cached under .cache/containers) and the stand-ins built on it from Debian packages and Maven Central.
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { KAFKA_VERSION, ensureJars } from '../kafka/jars.ts';
import { ensureMavenJars } from '../maven-jars.ts';
import { ensureS3ProxyJars, S3PROXY_VERSION } from '../s3proxy.ts';
import { ROOT, run, say } from './command.ts';
import type { RunOptions } from './command.ts';
import { DEBOOTSTRAP } from './engine.ts';

const CONTAINERS = join(ROOT, 'scripts', 'containers');
const CACHE = join(ROOT, '.cache', 'containers');
// The images' base: bookworm's PostgreSQL 15 and OpenJDK 17 are what the stand-in images install.
const SUITE = 'bookworm';

export const IMAGES = {
  debian: `catalog-local/debian:${SUITE}`,
  jre: 'catalog-local/jre:17',
  // Tagged 8.x: Testcontainers' KafkaContainer runs KRaft for cp-kafka 8 and later.
  kafka: 'catalog-local/kafka:8.0.0',
  postgres: 'catalog-local/postgres:15',
  s3proxy: `catalog-local/s3proxy:${S3PROXY_VERSION}`,
  node: 'catalog-local/node:24-slim',
  prometheus: 'catalog-local/prometheus:debian',
} as const;

/** `docker --host <the run's daemon> …` */
export type Docker = (args: string[], options?: RunOptions) => Promise<string>;

/** The mirror apt uses here, for debootstrap. */
function debianMirror(): string {
  const sources = ['/etc/apt/sources.list', ...(existsSync('/etc/apt/sources.list.d') ? readdirSync('/etc/apt/sources.list.d').map((f) => join('/etc/apt/sources.list.d', f)) : [])]
    .filter((file) => /\.(list|sources)$/.test(file) && existsSync(file)).map((file) => readFileSync(file, 'utf8')).join('\n');
  const found = sources.match(/^(?:deb\s+(?:\[[^\]]*\]\s+)?|URIs:\s+)(https?:\/\/\S+\/debian)\/?\s/m);
  return found?.[1] ?? 'http://deb.debian.org/debian';
}

/** A minimal Debian root file system as an image: debootstrap once, then the cached tarball. */
export async function baseImage(work: string, docker: Docker): Promise<void> {
  const tarball = join(CACHE, `debian-${SUITE}-minbase.tar.gz`);
  if (!existsSync(tarball)) {
    const rootfs = join(work, 'rootfs');
    await run(DEBOOTSTRAP, ['--variant=minbase', SUITE, rootfs, debianMirror()], { logFile: join(work, 'debootstrap.log') });
    mkdirSync(CACHE, { recursive: true });
    // Renamed into place once whole, so an interrupted run never leaves a half tarball to reuse.
    const partial = `${tarball}.partial-${process.pid}`;
    await run('tar', ['-C', rootfs, '--numeric-owner', '-czf', partial, '.']);
    renameSync(partial, tarball);
    rmSync(rootfs, { recursive: true, force: true });
  } else {
    say(`reusing ${tarball.slice(ROOT.length + 1)}`);
  }
  await docker(['import', tarball, IMAGES.debian], { capture: true });
}

/** A build context in a folder of its own: the Dockerfile's files, plus what `extra` puts in. */
function context(work: string, name: string, files: string[], extra: (dir: string) => void = () => {}): string {
  const dir = join(work, 'contexts', name);
  mkdirSync(dir, { recursive: true });
  for (const file of files) copyFileSync(file, join(dir, file.split('/').at(-1)!));
  extra(dir);
  return dir;
}

export async function buildImages(work: string, docker: Docker): Promise<void> {
  const log = join(work, 'build.log');
  const build = (tag: string, dir: string, args: Record<string, string>) => docker(
    ['build', '--network', 'host', '--tag', tag, ...Object.entries(args).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]), dir], { logFile: log },
  );
  const here = (name: string, ...files: string[]) => files.map((file) => join(CONTAINERS, name, file));
  await build(IMAGES.jre, context(work, 'jre', here('jre', 'Dockerfile')), { BASE_IMAGE: IMAGES.debian });

  const brokerLibs = ensureJars();
  const toolLibs = ensureMavenJars({
    name: 'kafka-tools', version: KAFKA_VERSION, pom: join(CONTAINERS, 'kafka', 'pom.xml'),
    properties: { 'kafka.version': KAFKA_VERSION }, mainJar: `kafka-tools-${KAFKA_VERSION}.jar`,
  });
  await build(IMAGES.kafka, context(work, 'kafka', [...here('kafka', 'Dockerfile', 'run', 'kafka-storage', 'kafka-broker-api-versions'), join(ROOT, 'scripts', 'kafka', 'log4j2.yaml')], (dir) => {
    cpSync(brokerLibs, join(dir, 'libs'), { recursive: true });
    cpSync(toolLibs, join(dir, 'libs'), { recursive: true });
  }), { JRE_IMAGE: IMAGES.jre });

  const s3Libs = ensureS3ProxyJars();
  await build(IMAGES.s3proxy, context(work, 's3proxy', [...here('s3proxy', 'Dockerfile', 'run'), join(ROOT, 'scripts', 's3proxy', 'logback.xml')], (dir) => {
    cpSync(s3Libs, join(dir, 'libs'), { recursive: true });
  }), { JRE_IMAGE: IMAGES.jre });

  await build(IMAGES.postgres, context(work, 'postgres', here('postgres', 'Dockerfile', 'docker-entrypoint.sh')), { BASE_IMAGE: IMAGES.debian });
  await build(IMAGES.prometheus, context(work, 'prometheus', here('prometheus', 'Dockerfile')), { BASE_IMAGE: IMAGES.debian });

  // The Node 24 this script runs on (the project's `node` package) and the npm running it.
  const npmCli = process.env.npm_execpath;
  if (!process.version.startsWith('v24.') || !npmCli) throw new Error(`run this as \`npm run test:containers\` (Node 24 from the project's own package; this is ${process.version})`);
  const caBundle = process.env.NODE_EXTRA_CA_CERTS ?? '/etc/ssl/certs/ca-certificates.crt';
  await build(IMAGES.node, context(work, 'node', here('node', 'Dockerfile'), (dir) => {
    copyFileSync(process.execPath, join(dir, 'node'));
    cpSync(dirname(dirname(npmCli)), join(dir, 'npm'), { recursive: true });
    if (existsSync(caBundle)) copyFileSync(caBundle, join(dir, 'ca-certificates.crt'));
    else writeFileSync(join(dir, 'ca-certificates.crt'), '');
  }), { BASE_IMAGE: IMAGES.debian });
}
