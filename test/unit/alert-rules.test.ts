// The alerting rules and the dashboard: promtool checks and unit-tests the rules; every series they read is one the service exposes; every alert is documented.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { createMetrics } from '../../platform/metrics.ts';
import { ensurePromtool } from '../../scripts/promtool.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const MONITORING = join(ROOT, 'monitoring');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

interface Rule { alert: string; expr: string }
const rules: Rule[] = (parse(read('monitoring/alerts.yml')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((group) => group.rules);

/** The series names an expression reads (PromQL functions, keywords and the labels of a grouping such as `by (catalog_id)` are not series). */
function seriesOf(expr: string): string[] {
  return [...expr.replace(/\{[^}]*\}/g, '').replace(/"[^"]*"/g, '').replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '').matchAll(/\b(catalog_\w+|process_\w+|up)\b(?!\s*\()/g)].map((m) => m[1]!);
}

test('promtool accepts the Prometheus configuration and its rules, and the rules pass their unit tests', () => {
  const promtool = ensurePromtool();
  execFileSync(promtool, ['check', 'config', 'prometheus.yml'], { cwd: MONITORING, stdio: 'pipe' });
  try {
    execFileSync(promtool, ['test', 'rules', 'alerts.test.yml'], { cwd: MONITORING, stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout: Buffer; stderr: Buffer };
    assert.fail(`promtool test rules failed:\n${stdout.toString()}${stderr.toString()}`);
  }
});

test('every alert has unit tests and a section in the operations guide', () => {
  const tests = read('monitoring/alerts.test.yml');
  const guide = read('docs/operations.md');
  assert.ok(rules.length >= 10);
  for (const { alert } of rules) {
    assert.match(tests, new RegExp(`alertname: ${alert}\\n`), `${alert} has no test in alerts.test.yml`);
    assert.match(guide, new RegExp(`\\| \`${alert}\` \\|`), `${alert} is not in docs/operations.md's alert table`);
  }
});

test('the alerts and the dashboard read only series the service exposes', async () => {
  const metrics = createMetrics({
    outboxBacklog: async () => ({ pending: 0, lagSeconds: 0, parked: 0 }),
    dependencies: async () => ({ database: 'ok' }),
    consumerLag: async () => [{ group: 'g', topic: 't', messages: 0 }],
    webhookBacklogs: async () => [{ webhookId: 'w', catalogId: 'c', status: 'active', waiting: 1, oldestAgeSeconds: 1 }],
  });
  const exposed = new Set(['up']);
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    exposed.add(metric.name);
    if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) exposed.add(`${metric.name}${suffix}`);
  }
  const dashboard = JSON.parse(read('monitoring/grafana-dashboard.json')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
  const exprs = [
    ...rules.map((rule) => [`alert ${rule.alert}`, rule.expr] as const),
    ...dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => [`panel "${panel.title}"`, target.expr] as const)),
  ];
  for (const [where, expr] of exprs) {
    const series = seriesOf(expr);
    assert.ok(series.length > 0, `${where} reads no series`);
    for (const name of series) assert.ok(exposed.has(name), `${where} reads ${name}, which the service does not expose`);
  }
});
