// Collects a Java program's runtime jars from Maven Central into .cache/<name>/<version>/libs, once.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../platform/log/logger.ts';

const PROJECT_ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

export interface MavenJars {
  /** Cache folder name and the program's name in messages, e.g. `kafka`. */
  name: string;
  version: string;
  /** The tiny pom whose runtime dependencies are the program. */
  pom: string;
  /** -D properties for the pom (versions). */
  properties: Record<string, string>;
  /** A jar that must be among the collected ones, or the download is incomplete. */
  mainJar: string;
  logger?: Logger;
}

/** The jars' folder; the marker file says the last download finished, so a half one is redone. */
export function ensureMavenJars(spec: MavenJars): string {
  const cache = join(PROJECT_ROOT, '.cache', spec.name, spec.version);
  const libs = join(cache, 'libs');
  const marker = join(cache, 'complete');
  if (existsSync(marker) && existsSync(libs)) return libs;
  // A per-process folder, renamed at the end, so two concurrent downloads never mix their files.
  const partial = join(cache, `libs.partial-${process.pid}`);
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(cache, { recursive: true });
  spec.logger?.info({ name: spec.name, version: spec.version }, 'downloading jars from Maven Central');
  const began = Date.now();
  const properties = Object.entries(spec.properties).map(([key, value]) => `-D${key}=${value}`);
  const mvn = spawnSync('mvn', ['-q', '-B', '-Dstyle.color=never', '-f', spec.pom, ...properties,
    'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${partial}`], { encoding: 'utf8' });
  const jars = existsSync(partial) ? readdirSync(partial).filter((f) => f.endsWith('.jar')) : [];
  if (mvn.error || mvn.status !== 0 || !jars.includes(spec.mainJar)) {
    rmSync(partial, { recursive: true, force: true });
    const detail = mvn.error ? String(mvn.error) : `${mvn.stdout}${mvn.stderr}`.replace(/\x1b\[[0-9;]*m/g, '').trim();
    throw new Error(`Maven could not fetch ${spec.name} ${spec.version} jars:\n${detail}`);
  }
  rmSync(libs, { recursive: true, force: true });
  renameSync(partial, libs);
  writeFileSync(marker, `${jars.sort().join('\n')}\n`);
  spec.logger?.info({ name: spec.name, version: spec.version, jars: jars.length, ms: Date.now() - began }, 'jars ready');
  return libs;
}
