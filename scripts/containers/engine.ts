// The Docker engine of `npm run test:containers`: Debian's packages, installed if missing, and a private dockerd that leaves the host's networking alone.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, sleep } from './command.ts';

// Debian's packages, called by path: a newer `docker` elsewhere on the PATH may shadow them.
export const DOCKER = '/usr/bin/docker';
export const COMPOSE = '/usr/bin/docker-compose';
export const DEBOOTSTRAP = '/usr/sbin/debootstrap';
const DOCKERD = '/usr/sbin/dockerd';
const PACKAGES = ['docker.io', 'docker-compose', 'debootstrap'];
// A safety net against a daemon that hangs for good, not a speed assumption: the wait ends as
// soon as it answers, or as soon as it exits.
const DAEMON_SAFETY_NET_MS = 5 * 60_000;

/** Why this machine cannot run the checks, or undefined when it can. */
export function cannotRun(): string | undefined {
  if (process.platform !== 'linux') return `it needs Linux, this is ${process.platform}`;
  if (process.getuid?.() !== 0) return 'it needs root to install and run a Docker engine';
  const missing = [DOCKER, DOCKERD, COMPOSE, DEBOOTSTRAP].some((tool) => !existsSync(tool));
  if (missing && spawnSync('apt-get', ['--version']).status !== 0) return 'the Docker engine is missing and there is no apt-get to install it';
  return undefined;
}

/** Debian's engine, Compose v1 and debootstrap, without letting the package start a daemon of its own. */
export async function installEngine(): Promise<void> {
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
export function hostNetworking(): string {
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

export interface Daemon {
  readonly host: string;
  stop(): Promise<void>;
}

/**
 * A dockerd of this run's own: its data, exec root, socket and bridge (a new one, so a Docker
 * already on the host keeps docker0), with iptables, masquerading and IP forwarding left alone.
 * Published ports go through docker-proxy; containers reach each other on their bridges.
 */
export async function startDaemon(work: string): Promise<Daemon> {
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
