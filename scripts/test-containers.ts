// `npm run test:containers`: the container checks on a real Docker engine, from nothing. Installs
// Debian's engine if missing, runs a private dockerd that leaves the host's networking alone, builds
// every image from Debian packages and Maven Central, runs the Testcontainers tests and the compose
// smoke flow, then removes everything it started. Prints each step's time.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, run, say, sleep } from './containers/command.ts';
import type { RunOptions } from './containers/command.ts';
import { COMPOSE, DOCKER, cannotRun, hostNetworking, installEngine, startDaemon } from './containers/engine.ts';
import type { Daemon } from './containers/engine.ts';
import { IMAGES, baseImage, buildImages } from './containers/images.ts';
import { freePort } from './free-port.ts';

// The integration tests that take their broker from Testcontainers here (issue #20: at least these).
const TESTCONTAINERS_TESTS = ['outbox-relay', 'imports', 'webhooks'].map((name) => `test/integration/${name}.test.ts`);

// A safety net against a stack that hangs for good, not a speed assumption: the wait ends as soon
// as the api is healthy, or as soon as it reports unhealthy.
const STACK_SAFETY_NET_MS = 20 * 60_000;
const POLL_MS = 1000;

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

async function testcontainersTests(daemon: Daemon): Promise<void> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DOCKER_HOST: daemon.host,
    TEST_KAFKA: 'testcontainers',
    TEST_KAFKA_IMAGE: IMAGES.kafka,
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
  const [apiPort, kafkaPort, s3Port, opsPort, prometheusPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
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
    KAFKA_IMAGE: IMAGES.kafka,
    S3_IMAGE: IMAGES.s3proxy,
    PROMETHEUS_IMAGE: IMAGES.prometheus,
    NODE_IMAGE: IMAGES.node,
    // Prometheus with the alerting rules, scraping every process's operations port.
    COMPOSE_PROFILES: 'monitoring',
    CATALOG_IMAGE: `${project}/service:local`,
    API_PORT: String(apiPort),
    KAFKA_EXTERNAL_PORT: String(kafkaPort),
    S3_PORT: String(s3Port),
    API_OPS_PORT: String(opsPort),
    PROMETHEUS_PORT: String(prometheusPort),
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
      SMOKE_OPS_URL: `http://127.0.0.1:${opsPort}`,
      SMOKE_PROMETHEUS_URL: `http://127.0.0.1:${prometheusPort}`,
      SMOKE_COMPOSE: JSON.stringify([COMPOSE]),
      SMOKE_LOG: join(work, 'compose.log'),
    },
  };
}

/** Waits until the api and the consumers are healthy (their operations ports); fails at once when a container gives up. */
async function stackReady(stack: Stack): Promise<void> {
  const docker = (args: string[]) => run(DOCKER, args, { env: stack.env, capture: true }).then((out) => out.trim());
  const began = Date.now();
  for (;;) {
    const [api, consumers] = [await docker(['ps', '-aq', '--filter', `label=com.docker.compose.project=${stack.env.COMPOSE_PROJECT_NAME}`, '--filter', 'label=com.docker.compose.service=api']),
      await docker(['ps', '-aq', '--filter', `label=com.docker.compose.project=${stack.env.COMPOSE_PROJECT_NAME}`, '--filter', 'label=com.docker.compose.service=consumers'])];
    if (api && consumers) {
      const health = await docker(['inspect', '--format', '{{.State.Health.Status}}', api]);
      const consumersHealth = await docker(['inspect', '--format', '{{.State.Health.Status}}', consumers]);
      if (health === 'unhealthy') throw new Error('the api container reports unhealthy');
      if (consumersHealth === 'unhealthy') throw new Error('the consumers container reports unhealthy');
      if (health === 'healthy' && consumersHealth === 'healthy') return;
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
  // Read once the packages are in: installing docker.io brings iptables, whose first listing of
  // a machine that had none shows the kernel's default chains, which is not a change of the run.
  let networkBefore: string | undefined;
  const work = mkdtempSync(join(tmpdir(), 'catalog-containers-'));
  let daemon: Daemon | undefined;
  let stack: Stack | undefined;
  let failed: unknown;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { interruptedBy = signal; });
  try {
    await step('engine', installEngine);
    networkBefore = hostNetworking();
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
  const networkAfter = networkBefore === undefined ? undefined : hostNetworking();
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
