// Prometheus' promtool, which checks and unit-tests the alerting rules: Debian's `prometheus` package, installed when missing.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';

// Debian's package, called by path: another promtool on the PATH may be of a different version.
export const PROMTOOL = '/usr/bin/promtool';

/**
 * The path of promtool, installing Debian's `prometheus` package first when it is missing (as
 * root, with apt-get: CI machines start without it). Throws, saying why, where it cannot.
 */
export function ensurePromtool(): string {
  if (existsSync(PROMTOOL)) return PROMTOOL;
  if (process.platform !== 'linux' || spawnSync('apt-get', ['--version']).status !== 0) {
    throw new Error(`${PROMTOOL} is missing and there is no apt-get to install it: install Prometheus' promtool (Debian: apt-get install prometheus)`);
  }
  if (process.getuid?.() !== 0) throw new Error(`${PROMTOOL} is missing: run \`sudo apt-get install -y prometheus\` (installing it needs root)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // Only the tool is wanted: the package's own daemon must not be started by its install script.
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !existsSync(policy);
  if (ownPolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  const install = () => execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'prometheus'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    install();
  } catch {
    execFileSync('apt-get', ['update'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    install();
  } finally {
    if (ownPolicy) rmSync(policy, { force: true });
  }
  if (!existsSync(PROMTOOL)) throw new Error(`installing Debian's prometheus package left no ${PROMTOOL}`);
  return PROMTOOL;
}
