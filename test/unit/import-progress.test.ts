// The import's progress on stderr: the figures, the plain lines for pipes, and a bar that fits 80 columns on a terminal.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { barSize, duration, figures, plainLine, progressView } from '../../cli/import-progress.ts';

test('durations, figures and plain lines say lines, rate, ETA and failed lines', () => {
  assert.deepEqual([duration(42.4), duration(185), duration(3725), duration(Number.NaN)], ['42s', '3m05s', '1h02m', '?']);
  const progress = { processed: 2500, total: 10_000, failed: 3, status: 'processing' };
  assert.equal(figures(progress, 500), '2500/10000 500/s ETA 15s 3 failed');
  assert.equal(figures(progress, 0), '2500/10000 0/s ETA ? 3 failed');
  assert.equal(plainLine(progress, 500), 'importing: 2500/10000 500/s ETA 15s 3 failed (25%), processing');
});

/** A stream that looks like a terminal of `columns`, keeping what is written to it. */
function terminal(columns: number): NodeJS.WriteStream & { text(): string } {
  const stream = new PassThrough() as unknown as NodeJS.WriteStream & { text(): string };
  const chunks: Buffer[] = [];
  (stream as unknown as PassThrough).on('data', (chunk: Buffer) => chunks.push(chunk));
  Object.assign(stream, { isTTY: true, columns, text: () => Buffer.concat(chunks).toString('utf8') });
  return stream;
}

test('on a terminal the bar with its figures fits 80 columns, and a narrower terminal', async () => {
  for (const columns of [200, 80, 70]) {
    const stream = terminal(columns);
    let clock = 0;
    const view = progressView(stream, () => clock);
    view.update({ processed: 10, total: 1_000_000, failed: 0, status: 'processing' });
    clock = 4000;
    view.update({ processed: 400_010, total: 1_000_000, failed: 12_345, status: 'processing' });
    view.stop();
    await new Promise((resolve) => setImmediate(resolve));
    // What is visible: the last frame, without the terminal's control sequences.
    const frames = stream.text().replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '\r').split(/[\r\n]+/).filter((line) => line.includes('importing ['));
    const last = frames.at(-1) ?? '';
    assert.match(last, /400010\/1000000 100000\/s ETA 6s 12345 failed/, `${columns}: ${JSON.stringify(frames)}`);
    assert.ok(last.length <= Math.min(columns, 80), `${last.length} columns on a terminal of ${columns}: ${last}`);
  }
  assert.equal(barSize(80), 15);
});

test('without a terminal: a plain line at every change of status, otherwise at most every 5 s', () => {
  const written: string[] = [];
  const stream = { isTTY: false, write: (line: string) => written.push(line) } as unknown as NodeJS.WriteStream;
  let clock = 0;
  const view = progressView(stream, () => clock);
  view.update({ processed: 0, total: 100, failed: 0, status: 'queued' });
  view.update({ processed: 10, total: 100, failed: 0, status: 'processing' });
  clock = 1000;
  view.update({ processed: 20, total: 100, failed: 1, status: 'processing' });
  clock = 6000;
  view.update({ processed: 70, total: 100, failed: 1, status: 'processing' });
  view.update({ processed: 100, total: 100, failed: 1, status: 'completed_with_errors' });
  assert.deepEqual(written, [
    'importing: 0/100 0 failed (0%), queued\n',
    'importing: 10/100 0 failed (10%), processing\n',
    'importing: 70/100 10/s ETA 3s 1 failed (70%), processing\n',
    'importing: 100/100 15/s ETA 0s 1 failed (100%), completed_with_errors\n',
  ]);
});

test('with the job\'s start time, the first plain line that shows lines processed gives a rate and an ETA', () => {
  const written: string[] = [];
  const stream = { isTTY: false, write: (line: string) => written.push(line) } as unknown as NodeJS.WriteStream;
  let clock = 10_000;
  const view = progressView(stream, () => clock);
  view.update({ processed: 0, total: 1000, failed: 0, status: 'queued' });
  view.update({ processed: 200, total: 1000, failed: 2, status: 'processing', startedAt: 8000 });
  clock = 16_000;
  view.update({ processed: 800, total: 1000, failed: 2, status: 'processing', startedAt: 8000 });
  assert.deepEqual(written, [
    'importing: 0/1000 0 failed (0%), queued\n',
    'importing: 200/1000 100/s ETA 8s 2 failed (20%), processing\n',
    'importing: 800/1000 100/s ETA 2s 2 failed (80%), processing\n',
  ]);
  assert.ok(written.every((line) => !line.includes('0/s ETA ?')));
});
