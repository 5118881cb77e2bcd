// Debian's Chromium for the browser tests: found, or installed with apt-get where this process may; and how it is started here.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CHROMIUM = '/usr/bin/chromium';

/**
 * Flags for a machine without internet: without the background-networking ones Chromium keeps
 * opening connections that this network refuses. `--no-sandbox` because CI runs as root.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];

/** The browser's path, installing Debian's package when missing; or why it cannot be had here. */
export async function chromiumPath(): Promise<{ path: string } | { unavailable: string }> {
  if (existsSync(CHROMIUM)) return { path: CHROMIUM };
  if (process.platform !== 'linux') return { unavailable: `Debian's chromium package needs Linux, this is ${process.platform}` };
  if (process.getuid?.() !== 0) return { unavailable: `${CHROMIUM} is missing and installing Debian's chromium needs root` };
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // Another run may hold the package lock: wait for it rather than fail.
  const install = ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '--no-install-recommends', 'chromium'];
  const options = { env, maxBuffer: 64 * 1024 * 1024 };
  await run('apt-get', install, options).catch(async () => {
    await run('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'update'], options);
    await run('apt-get', install, options);
  });
  return existsSync(CHROMIUM) ? { path: CHROMIUM } : { unavailable: `apt-get installed chromium but ${CHROMIUM} is missing` };
}
