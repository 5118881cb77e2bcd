// `npm run bench:versus -- <git ref> [bench:items bench:import …]`: runs benchmarks of an earlier commit and of this work tree in turn, and prints their figures side by side.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { figures } from './figures.ts';

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
