// Two processes (two clones: two data folders) starting one port's broker at the same moment: one launches it, both get it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { kafkaAnswers, stopKafka } from '../../scripts/kafka.ts';
import type { KafkaOptions } from '../../scripts/kafka.ts';
import { freePortPair } from '../helpers/kafka.ts';

const run = promisify(execFile);
const script = new URL('../../scripts/kafka.ts', import.meta.url).href;
const folders = [mkdtempSync(join(tmpdir(), 'catalog-kafka-a-')), mkdtempSync(join(tmpdir(), 'catalog-kafka-b-'))];
let port = 0;
const optionsOf = (dataDir: string): KafkaOptions => ({ dataDir, port, controllerPort: port + 1 });

after(async () => {
  for (const dataDir of folders) await stopKafka(optionsOf(dataDir)).catch(() => undefined);
  for (const dataDir of folders) rmSync(dataDir, { recursive: true, force: true });
});

test('two processes with their own data folders start the broker of one port at once: one launches it, both use it', async () => {
  port = await freePortPair();
  const start = (dataDir: string) => run(process.execPath, ['--input-type=module', '-e',
    `import { ensureKafka } from ${JSON.stringify(script)};
     console.log(JSON.stringify(await ensureKafka(${JSON.stringify(optionsOf(dataDir))})));`]);
  const outcomes = await Promise.allSettled(folders.map(start));
  const handles = outcomes.map((o, i) => {
    assert.equal(o.status, 'fulfilled', `process ${i + 1}: ${o.status === 'rejected' ? String((o.reason as { stderr?: string }).stderr ?? o.reason).slice(-2000) : ''}`);
    return JSON.parse((o as PromiseFulfilledResult<{ stdout: string }>).value.stdout.trim().split('\n').at(-1)!) as { brokers: string[]; started: boolean };
  });
  assert.deepEqual(handles.map((h) => h.brokers), [[`127.0.0.1:${port}`], [`127.0.0.1:${port}`]]);
  assert.deepEqual(handles.map((h) => h.started).sort(), [false, true], 'exactly one process launched a broker');
  assert.ok(await kafkaAnswers([`127.0.0.1:${port}`]));
});
