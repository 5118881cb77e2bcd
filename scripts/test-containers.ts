// `npm run test:containers`: the container checks on a real Docker engine, from nothing. Installs
// Debian's engine if missing, runs a private dockerd that leaves the host's networking alone, builds
// every image from Debian packages and Maven Central, runs the Testcontainers tests and the compose
// smoke flow, then removes everything it started. Prints each step's time.
import { spawn, spawnSync } from 'node:child_process';
import type { SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync, cpSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KAFKA_VERSION, ensureJars } from './kafka/jars.ts';
import { ensureMavenJars } from './maven-jars.ts';
import { freePort } from './free-port.ts';
import { ensureS3ProxyJars, S3PROXY_VERSION } from './s3proxy.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const CONTAINERS = join(ROOT, 'scripts', 'containers');
const CACHE = join(ROOT, '.cache', 'containers');

// Debian's packages, called by path: a newer `docker` elsewhere on the PATH may shadow them.
const DOCKER = '/usr/bin/docker';
const DOCKERD = '/usr/sbin/dockerd';
const COMPOSE = '/usr/bin/docker-compose';
const DEBOOTSTRAP = '/usr/sbin/debootstrap';
const PACKAGES = ['docker.io', 'docker-compose', 'debootstrap'];
// The images' base: bookworm's PostgreSQL 15 and OpenJDK 17 are what the stand-in images install.
const SUITE = 'bookworm';

const IMAGES = {
  debian: `catalog-local/debian:${SUITE}`,
  jre: 'catalog-local/jre:17',
  // Tagged 8.x: Testcontainers' KafkaContainer runs KRaft for cp-kafka 8 and later.
  kafka: '8.0.0',
  postgres: 'catalog-local/postgres:15',
  s3proxy: `catalog-local/s3proxy:${S3PROXY_VERSION}`,
  node: 'catalog-local/node:24-slim',
} as const;
const KAFKA_IMAGE = `catalog-local/kafka:${IMAGES.kafka}`;

// The integration tests that take their broker from Testcontainers here (issue #20: at least these).
const TESTCONTAINERS_TESTS = ['outbox-relay', 'imports', 'webhooks'].map((name) => `test/integration/${name}.test.ts`);

// Safety nets against a step that hangs for good, not speed assumptions: each wait ends as soon
// as its condition holds, or as soon as what it waits on has failed.
const DAEMON_SAFETY_NET_MS = 5 * 60_000;
const STACK_SAFETY_NET_MS = 20 * 60_000;
const POLL_MS = 1000;

const say = (line: string) => process.stdout.write(`test:containers: ${line}\n`);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Why this machine cannot run the checks, or undefined when it can. */
function cannotRun(): string | undefined {
  if (process.platform !== 'linux') return `it needs Linux, this is ${process.platform}`;
  if (process.getuid?.() !== 0) return 'it needs root to install and run a Docker engine';
  const missing = [DOCKER, DOCKERD, COMPOSE, DEBOOTSTRAP].some((tool) => !existsSync(tool));
  if (missing && spawnSync('apt-get', ['--version']).status !== 0) return 'the Docker engine is missing and there is no apt-get to install it';
  return undefined;
}

interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Output to this file instead of ours (long build logs); its tail goes into the error. */
  logFile?: string;
  /** Output captured and returned instead of shown. */
  capture?: boolean;
}

/** Runs a command to its end; throws with its exit and (for a log file) the log's tail when it fails. */
async function run(command: string, args: string[], options: RunOptions = {}): Promise<string> {
  const stdio: SpawnOptions['stdio'] = options.capture || options.logFile ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'inherit', 'inherit'];
  const child = spawn(command, args, { cwd: ROOT, env: options.env ?? process.env, stdio });
  const out: Buffer[] = [];
  if (options.logFile) {
    const log = createWriteStream(options.logFile, { flags: 'a' });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
  } else if (options.capture) {
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  }
  const code = await new Promise<number | string>((done) => {
    child.once('error', (error) => done(error.message));
    child.once('close', (status, signal) => done(status ?? String(signal)));
  });
  if (code !== 0) {
    const tail = options.logFile && existsSync(options.logFile) ? `\n${readFileSync(options.logFile, 'utf8').split('\n').slice(-60).join('\n')}` : '';
    throw new Error(`${command} ${args.join(' ')} failed (${code})${tail}`);
  }
  return Buffer.concat(out).toString('utf8');
}

const timings: Array<[string, number]> = [];
// Set by SIGINT or SIGTERM: the step under way runs to its end (a terminal's Ctrl-C stops its
// children too), the next ones do not start, the clean-up runs.
let interruptedBy: string | undefined;

async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (interruptedBy && name !== 'clean-up') throw new Error(`interrupted by ${interruptedBy}`);
  const began = performance.now();
  say(`${name}…`);
  try {
    return await work();
  } finally {
    const seconds = (performance.now() - began) / 1000;
    timings.push([name, seconds]);
    say(`${name}: ${seconds.toFixed(1)} s`);
  }
}

/** Debian's engine, Compose v1 and debootstrap, without letting the package start a daemon of its own. */
async function installEngine(): Promise<void> {
  if ([DOCKER, DOCKERD, COMPOSE, DEBOOTSTRAP].every((tool) => existsSync(tool))) return;
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !existsSync(policy);
  // The package's start script would run a dockerd with iptables rules and IP forwarding on.
  if (ownPolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = ['install', '-y', '--no-install-recommends', ...PACKAGES];
    await run('apt-get', install, { env }).catch(async () => {
      await run('apt-get', ['update'], { env });
      await run('apt-get', install, { env });
    });
  } finally {
    if (ownPolicy) rmSync(policy, { force: true });
  }
}

/** What must be the same after the run: IP forwarding and the firewall's rules. */
function hostNetworking(): string {
  const forward = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim();
  const rules = ['filter', 'nat'].map((table) => spawnSync('iptables', ['-t', table, '-S'], { encoding: 'utf8' }).stdout ?? '');
  return `ip_forward=${forward}\n${rules.join('')}`;
}

const links = (): Set<string> =>
  new Set((spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout ?? '').split('\n').map((line) => line.split(': ')[1]?.split('@')[0] ?? '').filter(Boolean));

/** A /24 in 10.0.0.0/8 that no route of this host covers, for the daemon's own bridge. */
function freeSubnet(): string {
  const routes = spawnSync('ip', ['-4', 'route', 'show', 'table', 'all'], { encoding: 'utf8' }).stdout ?? '';
  for (;;) {
    const [a, b] = [200 + Math.floor(Math.random() * 50), Math.floor(Math.random() * 256)];
    if (!routes.includes(`10.${a}.`) && !/^(default )?.*\b10\.0\.0\.0\/8\b/m.test(routes)) return `10.${a}.${b}`;
  }
}

interface Daemon {
  readonly host: string;
  stop(): Promise<void>;
}

/**
 * A dockerd of this run's own: its data, exec root, socket and bridge (a new one, so a Docker
 * already on the host keeps docker0), with iptables, masquerading and IP forwarding left alone.
 * Published ports go through docker-proxy; containers reach each other on their bridges.
 */
async function startDaemon(work: string): Promise<Daemon> {
  const before = links();
  const bridge = `catalog${randomBytes(3).toString('hex')}`;
  const net = freeSubnet();
  await run('ip', ['link', 'add', 'name', bridge, 'type', 'bridge']);
  await run('ip', ['addr', 'add', `${net}.1/24`, 'dev', bridge]);
  await run('ip', ['link', 'set', bridge, 'up']);
  const socket = join(work, 'docker.sock');
  const log = createWriteStream(join(work, 'dockerd.log'));
  const daemon = spawn(DOCKERD, [
    '--data-root', join(work, 'data'), '--exec-root', join(work, 'exec'), '--pidfile', join(work, 'docker.pid'),
    '--host', `unix://${socket}`, '--bridge', bridge,
    '--iptables=false', '--ip6tables=false', '--ip-masq=false', '--ip-forward=false',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  daemon.stdout.pipe(log);
  daemon.stderr.pipe(log);
  let exited: string | undefined;
  daemon.once('exit', (code, signal) => { exited = `exited with ${signal ?? `code ${code}`}`; });
  const host = `unix://${socket}`;
  const stop = async () => {
    if (exited === undefined) {
      const gone = new Promise((done) => daemon.once('exit', done));
      daemon.kill('SIGTERM');
      // Unref'd: a timer left running would keep this script alive after everything is done.
      await Promise.race([gone, new Promise((done) => setTimeout(done, 60_000).unref())]);
      if (exited === undefined) daemon.kill('SIGKILL');
      await gone;
    }
    // Whatever it left mounted under its roots (overlay layers, container shm, netns files).
    const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n').map((line) => line.split(' ')[1] ?? '')
      .filter((point) => point.startsWith(work)).sort().reverse();
    for (const point of mounts) spawnSync('umount', ['-l', point]);
    for (const name of links()) {
      if (!before.has(name)) spawnSync('ip', ['link', 'delete', name]);
    }
  };
  const began = Date.now();
  for (;;) {
    if (exited !== undefined) {
      await stop();
      throw new Error(`dockerd ${exited}:\n${readFileSync(join(work, 'dockerd.log'), 'utf8').split('\n').slice(-30).join('\n')}`);
    }
    if (spawnSync(DOCKER, ['--host', host, 'version'], { stdio: 'ignore' }).status === 0) break;
    if (Date.now() - began > DAEMON_SAFETY_NET_MS) {
      await stop();
      throw new Error(`dockerd did not answer on ${socket} within ${DAEMON_SAFETY_NET_MS / 60_000} min`);
    }
    await sleep(250);
  }
  return { host, stop };
}

/** The mirror apt uses here, for debootstrap. */
function debianMirror(): string {
  const sources = ['/etc/apt/sources.list', ...(existsSync('/etc/apt/sources.list.d') ? readdirSync('/etc/apt/sources.list.d').map((f) => join('/etc/apt/sources.list.d', f)) : [])]
    .filter((file) => /\.(list|sources)$/.test(file) && existsSync(file)).map((file) => readFileSync(file, 'utf8')).join('\n');
  const found = sources.match(/^(?:deb\s+(?:\[[^\]]*\]\s+)?|URIs:\s+)(https?:\/\/\S+\/debian)\/?\s/m);
  return found?.[1] ?? 'http://deb.debian.org/debian';
}

/** A minimal Debian root file system as an image: debootstrap once, then the cached tarball. */
async function baseImage(work: string, docker: (args: string[], options?: RunOptions) => Promise<string>): Promise<void> {
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

async function buildImages(work: string, docker: (args: string[], options?: RunOptions) => Promise<string>): Promise<void> {
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
  await build(KAFKA_IMAGE, context(work, 'kafka', [...here('kafka', 'Dockerfile', 'run', 'kafka-storage', 'kafka-broker-api-versions'), join(ROOT, 'scripts', 'kafka', 'log4j2.yaml')], (dir) => {
    cpSync(brokerLibs, join(dir, 'libs'), { recursive: true });
    cpSync(toolLibs, join(dir, 'libs'), { recursive: true });
  }), { JRE_IMAGE: IMAGES.jre });

  const s3Libs = ensureS3ProxyJars();
  await build(IMAGES.s3proxy, context(work, 's3proxy', [...here('s3proxy', 'Dockerfile', 'run'), join(ROOT, 'scripts', 's3proxy', 'logback.xml')], (dir) => {
    cpSync(s3Libs, join(dir, 'libs'), { recursive: true });
  }), { JRE_IMAGE: IMAGES.jre });

  await build(IMAGES.postgres, context(work, 'postgres', here('postgres', 'Dockerfile', 'docker-entrypoint.sh')), { BASE_IMAGE: IMAGES.debian });

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

async function testcontainersTests(daemon: Daemon): Promise<void> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DOCKER_HOST: daemon.host,
    TEST_KAFKA: 'testcontainers',
    TEST_KAFKA_IMAGE: KAFKA_IMAGE,
    // The reaper's image (ryuk) comes from a registry; this run removes its containers itself.
    TESTCONTAINERS_RYUK_DISABLED: 'true',
    // These machines have /.dockerenv, which would make Testcontainers look for a gateway instead.
    TESTCONTAINERS_HOST_OVERRIDE: 'localhost',
  };
  delete env.KAFKA_BROKERS;
  await run(process.execPath, ['--test', '--test-concurrency=2', '--test-global-setup=test/helpers/global-setup.ts', ...TESTCONTAINERS_TESTS], { env });
}

interface Stack {
  readonly env: NodeJS.ProcessEnv;
}

async function composeStack(daemon: Daemon, work: string): Promise<Stack> {
  const project = `catalog-smoke-${randomBytes(4).toString('hex')}`;
  const [apiPort, kafkaPort, s3Port] = [await freePort(), await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // Debian's docker client first, for what Compose runs itself.
    PATH: `/usr/bin:${process.env.PATH ?? ''}`,
    DOCKER_HOST: daemon.host,
    DOCKER_BUILDKIT: '0',
    COMPOSE_DOCKER_CLI_BUILD: '0',
    COMPOSE_PROJECT_NAME: project,
    COMPOSE_FILE: join(ROOT, 'compose.yaml'),
    POSTGRES_IMAGE: IMAGES.postgres,
    KAFKA_IMAGE,
    S3_IMAGE: IMAGES.s3proxy,
    NODE_IMAGE: IMAGES.node,
    CATALOG_IMAGE: `${project}/service:local`,
    API_PORT: String(apiPort),
    KAFKA_EXTERNAL_PORT: String(kafkaPort),
    S3_PORT: String(s3Port),
    // The smoke flow's webhook receiver listens on this host, a private address.
    OUTBOUND_ALLOW_PRIVATE: 'true',
    WEBHOOK_ALLOW_HTTP: 'true',
  };
  return {
    env: {
      ...env,
      SMOKE_API_URL: `http://127.0.0.1:${apiPort}`,
      SMOKE_KAFKA_BROKERS: `localhost:${kafkaPort}`,
      SMOKE_S3_PUBLIC_ENDPOINT: `http://localhost:${s3Port}`,
      SMOKE_COMPOSE: JSON.stringify([COMPOSE]),
      SMOKE_LOG: join(work, 'compose.log'),
    },
  };
}

/** Waits until the api is healthy and the consumers run; fails at once when a container gives up. */
async function stackReady(stack: Stack): Promise<void> {
  const docker = (args: string[]) => run(DOCKER, args, { env: stack.env, capture: true }).then((out) => out.trim());
  const began = Date.now();
  for (;;) {
    const [api, consumers] = [await docker(['ps', '-aq', '--filter', `label=com.docker.compose.project=${stack.env.COMPOSE_PROJECT_NAME}`, '--filter', 'label=com.docker.compose.service=api']),
      await docker(['ps', '-aq', '--filter', `label=com.docker.compose.project=${stack.env.COMPOSE_PROJECT_NAME}`, '--filter', 'label=com.docker.compose.service=consumers'])];
    if (api && consumers) {
      const health = await docker(['inspect', '--format', '{{.State.Health.Status}}', api]);
      const running = await docker(['inspect', '--format', '{{.State.Running}} {{.RestartCount}}', consumers]);
      if (health === 'unhealthy') throw new Error('the api container reports unhealthy');
      if (health === 'healthy' && running.startsWith('true')) return;
    }
    if (Date.now() - began > STACK_SAFETY_NET_MS) throw new Error(`the stack was not ready within ${STACK_SAFETY_NET_MS / 60_000} min`);
    await sleep(POLL_MS);
  }
}

async function main(): Promise<number> {
  const reason = cannotRun();
  if (reason) {
    say(`skipped: ${reason}`);
    return 0;
  }
  const began = performance.now();
  const networkBefore = hostNetworking();
  const work = mkdtempSync(join(tmpdir(), 'catalog-containers-'));
  let daemon: Daemon | undefined;
  let stack: Stack | undefined;
  let failed: unknown;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { interruptedBy = signal; });
  try {
    await step('engine', installEngine);
    daemon = await step('daemon', () => startDaemon(work));
    const host = daemon.host;
    const docker = (args: string[], options: RunOptions = {}) => run(DOCKER, ['--host', host, ...args], options);
    await step('base image', () => baseImage(work, docker));
    await step('images', () => buildImages(work, docker));
    await step('testcontainers tests', () => testcontainersTests(daemon!));
    stack = await composeStack(daemon, work);
    const compose = (args: string[], options: RunOptions = {}) => run(COMPOSE, args, { env: stack!.env, ...options });
    await step('compose up', async () => {
      await compose(['up', '--detach', '--build'], { logFile: stack!.env.SMOKE_LOG });
      await stackReady(stack!);
    });
    await step('compose smoke flow', () => run(process.execPath, ['--test', 'test/containers/compose-smoke.ts'], { env: stack!.env }))
      .catch(async (error) => {
        await compose(['logs', '--no-color', '--tail=80'], {}).catch(() => {});
        throw error;
      });
  } catch (error) {
    failed ??= error;
  } finally {
    await step('clean-up', async () => {
      if (stack) await run(COMPOSE, ['down', '--volumes', '--remove-orphans'], { env: stack.env, logFile: stack.env.SMOKE_LOG }).catch((error) => { failed ??= error; });
      await daemon?.stop();
      rmSync(work, { recursive: true, force: true });
    });
  }
  const networkAfter = hostNetworking();
  if (networkAfter !== networkBefore) {
    failed ??= new Error(`the host's networking changed during the run:\nbefore:\n${networkBefore}\nafter:\n${networkAfter}`);
  }
  for (const [name, seconds] of timings) say(`  ${name.padEnd(22)} ${seconds.toFixed(1).padStart(7)} s`);
  say(`  ${'total'.padEnd(22)} ${((performance.now() - began) / 1000).toFixed(1).padStart(7)} s`);
  if (failed) {
    say(`FAILED: ${failed instanceof Error ? failed.message : String(failed)}`);
    return 1;
  }
  say('passed');
  return 0;
}

process.exitCode = await main();
