// Every relative link and anchor in the repository's Markdown resolves, by GitHub's rules, and every section a code comment cites exists, so nothing points nowhere.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../..');
// Installed packages, local state and caches are not the project's pages.
const SKIPPED = new Set(['node_modules', '.git', '.cache', '.data']);

function filesEndingWith(folder: string, endings: readonly string[]): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    if (SKIPPED.has(entry.name)) return [];
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return filesEndingWith(path, endings);
    return endings.some((ending) => entry.name.endsWith(ending)) ? [path] : [];
  });
}

const markdownFiles = (folder: string) => filesEndingWith(folder, ['.md']);

/** The lines outside fenced code blocks, with their numbers: as written, and with inline code spans blanked. */
function proseLines(text: string): Array<{ line: number; raw: string; text: string }> {
  const lines: Array<{ line: number; raw: string; text: string }> = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, index) => {
    const opening = /^\s{0,3}(`{3,}|~{3,})/.exec(raw);
    if (opening) {
      if (fence === undefined) fence = opening[1]![0]!.repeat(opening[1]!.length);
      else if (raw.trim().startsWith(fence)) fence = undefined;
      return;
    }
    if (fence === undefined) lines.push({ line: index + 1, raw, text: raw.replace(/(`+)[\s\S]*?\1/g, (span) => ' '.repeat(span.length)) });
  });
  return lines;
}

/** GitHub's heading anchor: the rendered text lower-cased, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`/g, '')
    .replace(/(\*+|\b_+|_+\b)(?=\S)|(?<=\S)(\*+)/g, ''); // emphasis markers
  return rendered.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

const anchorCache = new Map<string, Set<string>>();

/** Every anchor a Markdown file offers: its headings' slugs (repeats numbered) and explicit ids. */
function anchorsOf(file: string): Set<string> {
  const cached = anchorCache.get(file);
  if (cached) return cached;
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { raw, text } of proseLines(readFileSync(file, 'utf8'))) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (heading) {
      const base = slug(heading[1]!);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const id of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id[1]!);
  }
  anchorCache.set(file, anchors);
  return anchors;
}

/** The link targets of a line: inline links and images, reference definitions, HTML href and src. */
function targetsOf(text: string): string[] {
  const targets = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)/.exec(text);
  if (definition) targets.push(definition[1]!);
  for (const attribute of text.matchAll(/\b(?:href|src)="([^"]+)"/g)) targets.push(attribute[1]!);
  return targets;
}

/** Why a target does not resolve from `file`, or undefined when it does. */
function brokenBecause(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto: and the like: not ours to check
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const path = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
  if (!path.startsWith(ROOT)) return 'points outside the repository';
  if (!existsSync(path)) return 'no such file';
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(path).isDirectory() || !path.endsWith('.md')) return 'an anchor into a file that is not Markdown';
  return anchorsOf(path).has(decodeURIComponent(anchor).toLowerCase()) ? undefined : 'no such anchor';
}

test('GitHub heading slugs: punctuation dropped, spaces to hyphens, code and links as their text', () => {
  assert.equal(slug('bench:items — single and bulk upserts'), 'benchitems--single-and-bulk-upserts');
  assert.equal(slug('A request: `POST /api/v1/catalog/items/upsert`'), 'a-request-post-apiv1catalogitemsupsert');
  assert.equal(slug('Why the fresh import cannot reach 20,000 lines/s here'), 'why-the-fresh-import-cannot-reach-20000-liness-here');
  assert.equal(slug('[Verifying](x.md) in **two** languages'), 'verifying-in-two-languages');
  assert.equal(slug('The item changelog: mirroring the catalog'), 'the-item-changelog-mirroring-the-catalog');
  assert.equal(slug('snake_case stays'), 'snake_case-stays');
});

test('every relative link and anchor in the Markdown files resolves', () => {
  const files = markdownFiles(ROOT);
  assert.ok(files.some((file) => file.endsWith('README.md')), 'the README is among the files checked');
  const broken: string[] = [];
  for (const file of files) {
    for (const { line, text } of proseLines(readFileSync(file, 'utf8'))) {
      for (const target of targetsOf(text)) {
        const why = brokenBecause(file, target);
        if (why) broken.push(`${relative(ROOT, file)}:${line}: ${target} (${why})`);
      }
    }
  }
  assert.deepEqual(broken, [], `broken links:\n${broken.join('\n')}`);
});

test('every section a code comment cites as (docs/<page>.md, "Heading") is a heading of that page', () => {
  const broken: string[] = [];
  let citations = 0;
  for (const file of filesEndingWith(ROOT, ['.ts', '.js', '.yaml'])) {
    readFileSync(file, 'utf8').split('\n').forEach((text, index) => {
      for (const [, page, heading] of text.matchAll(/\b(docs\/[\w.-]+\.md), "([^"]+)"/g)) {
        citations += 1;
        const path = join(ROOT, page!);
        if (!existsSync(path)) broken.push(`${relative(ROOT, file)}:${index + 1}: ${page} (no such file)`);
        else if (!anchorsOf(path).has(slug(heading!))) broken.push(`${relative(ROOT, file)}:${index + 1}: ${page}, "${heading}" (no such heading)`);
      }
    });
  }
  assert.ok(citations > 10, 'the code cites sections of the docs');
  assert.deepEqual(broken, [], `citations of missing sections:\n${broken.join('\n')}`);
});
