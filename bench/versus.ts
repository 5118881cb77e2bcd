// `npm run bench:versus -- <git ref> [bench:items bench:import …]`: runs benchmarks of an earlier commit and of this work tree in turn, and prints their figures side by side.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '2' } },
});
const [ref, ...named] = positionals;
if (!ref) {
  console.error('usage: npm run bench:versus -- <git ref> [bench:items bench:import …] [--rounds N]');
  process.exit(2);
}
const benches = named.length > 0 ? named : ['bench:items', 'bench:import'];
const rounds = Number(values.rounds);
const here = resolve('.');

function git(...args: string[]): string {
  const run = spawnSync('git', args, { cwd: here, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')}: ${run.stderr}`);
  return run.stdout.trim();
}

/** Whether the checkout in `dir` asks for the same packages as this work tree (then it can share node_modules). */
function sameDependencies(dir: string): boolean {
  const wanted = (root: string) => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
    return JSON.stringify([manifest.dependencies, manifest.devDependencies, manifest.optionalDependencies]);
  };
  return wanted(dir) === wanted(here);
}

/** A checkout of `ref` beside this one, sharing node_modules when both ask for the same packages. */
function checkout(ref: string): { dir: string; remove(): void } {
  const commit = git('rev-parse', '--verify', `${ref}^{commit}`);
  const dir = mkdtempSync(join(tmpdir(), `catalog-versus-${commit.slice(0, 7)}-`));
  git('worktree', 'add', '--detach', dir, commit);
  const remove = () => {
    spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: here });
    rmSync(dir, { recursive: true, force: true });
  };
  if (sameDependencies(dir)) symlinkSync(join(here, 'node_modules'), join(dir, 'node_modules'), 'dir');
  else if (spawnSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' }).status !== 0) {
    remove();
    throw new Error(`npm install failed in the checkout of ${ref}`);
  }
  // One local Kafka broker for both: the checkout reuses the one that answers on its port.
  if (existsSync(join(here, '.data')) && !existsSync(join(dir, '.data'))) symlinkSync(join(here, '.data'), join(dir, '.data'), 'dir');
  return { dir, remove };
}

function run(dir: string, bench: string): string {
  const result = spawnSync('npm', ['run', '--silent', bench], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (result.status !== 0) throw new Error(`${bench} failed in ${dir}:\n${result.stdout}`);
  return result.stdout;
}

/**
 * Every figure printed: a number standing alone (not the 50 of `p50`), labelled by its line's
 * text before the line's first figure and its unit, and after the first by the word between it and
 * the figure before (`commit-to-receipt latency: p50 ms`, `… › p99 ms`), or its place
 * (`fresh import (end to end) › #2 lines/s`); numbered when a label repeats, as `unchanged` does
 * for single and bulk upserts.
 */
function figures(output: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of output.split('\n')) {
    const text = line.trim();
    const numbers = [...text.matchAll(/(?<![\w.])\d(?:,?\d)*(?:\.\d+)?(?![\w.])/g)];
    const lead = numbers.length === 0 ? '' : text.slice(0, numbers[0]!.index).trim().replace(/\s+/g, ' ');
    if (lead === '') continue;
    let previousUnit = '';
    numbers.forEach((number, n) => {
      const unit = /^\s*([^\s\d,:;()]+)/.exec(text.slice(number.index + number[0].length))?.[1] ?? '';
      const between = n === 0 ? [] : text.slice(numbers[n - 1]!.index + numbers[n - 1]![0].length, number.index)
        .split(/[\s,:;()]+/).filter((word) => word !== '' && word !== previousUnit);
      const name = n === 0 ? [lead, unit] : [lead, '›', between.at(-1) ?? `#${n + 1}`, unit];
      previousUnit = unit;
      const base = name.filter((part) => part !== '').join(' ');
      let label = base;
      for (let k = 2; found.has(label); k += 1) label = `${base} (${k})`;
      found.set(label, Number(number[0].replaceAll(',', '')));
    });
  }
  return found;
}

const base = checkout(ref);
try {
  for (const bench of benches) {
    const outputs: Record<'base' | 'head', Map<string, number>[]> = { base: [], head: [] };
    for (let round = 1; round <= rounds; round += 1) {
      // Alternate which goes first, so a machine warming up or slowing down favours neither.
      const order: Array<'base' | 'head'> = round % 2 === 1 ? ['base', 'head'] : ['head', 'base'];
      for (const side of order) {
        const output = run(side === 'base' ? base.dir : here, bench);
        console.log(`\n── ${bench}, round ${round}, ${side === 'base' ? ref : 'this work tree'} ──\n${output.trimEnd()}`);
        outputs[side].push(figures(output));
      }
    }
    console.log(`\n${bench}: every figure, ${ref} | this work tree, per round (ratio = this / ${ref}; for a time, lower is better)`);
    for (const label of outputs.head[0]!.keys()) {
      const pairs = outputs.head.map((head, i) => [outputs.base[i]!.get(label), head.get(label)] as const);
      if (pairs.some(([b]) => b === undefined)) continue;
      const cells = pairs.map(([b, h]) => `${b} | ${h} (${b === 0 ? '–' : (h! / b!).toFixed(2)})`);
      console.log(`${label.padEnd(36)} ${cells.join('   ')}`);
    }
  }
} finally {
  base.remove();
}
