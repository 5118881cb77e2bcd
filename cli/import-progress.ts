// The import's progress on stderr: a bar with rate, ETA and failed lines that fits 80 columns, or plain lines when stderr is not a terminal.
import cliProgress from 'cli-progress';

export interface Progress {
  readonly processed: number;
  readonly total: number;
  readonly failed: number;
  /** The jobs' statuses, e.g. `processing` or `queued, processing`. */
  readonly status: string;
  /** When the first job began processing (epoch ms, the job's `startedAt`), if one has. */
  readonly startedAt?: number | undefined;
}

export interface ProgressView {
  update(progress: Progress): void;
  stop(): void;
}

const MAX_COLUMNS = 80;
// `importing [` + bar + `] 100% ` around the figures, which take up to about 47 columns
// (a million lines, five-digit rates, an ETA in hours).
const AROUND_BAR = 18;
const FIGURES = 47;
// A plain line at most this often, and at every change of status.
const PLAIN_EVERY_MS = 5000;

/** `1h02m`, `3m05s`, `42s`: how long the rest takes at the rate so far; `?` before there is one. */
export function duration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

/** The figures beside the bar: lines, rate, ETA, failed lines. */
export function figures(progress: Progress, rate: number): string {
  const eta = rate > 0 ? duration((progress.total - progress.processed) / rate) : '?';
  return `${progress.processed}/${progress.total} ${Math.round(rate)}/s ETA ${eta} ${progress.failed} failed`;
}

/** A plain progress line, for logs and pipes: before any line is processed there is no rate to show. */
export function plainLine(progress: Progress, rate: number): string {
  const percent = progress.total > 0 ? Math.floor((progress.processed / progress.total) * 100) : 0;
  const shown = rate > 0 ? figures(progress, rate) : `${progress.processed}/${progress.total} ${progress.failed} failed`;
  return `importing: ${shown} (${percent}%), ${progress.status}`;
}

/** The bar's width for a terminal of `columns`: the whole line stays within it, and within 80. */
export const barSize = (columns: number | undefined) => Math.max(10, Math.min(columns || MAX_COLUMNS, MAX_COLUMNS) - AROUND_BAR - FIGURES);

export function progressView(stream: NodeJS.WriteStream = process.stderr, now: () => number = Date.now): ProgressView {
  // Lines per second since the job began processing (time spent queued is no rate), so the first
  // line that shows lines processed has a rate; without a start time (a clock behind the
  // service's), from the first poll that saw lines processed.
  let first: { at: number; processed: number } | undefined;
  const rateOf = (progress: Progress) => {
    const sinceStart = progress.startedAt === undefined ? 0 : (now() - progress.startedAt) / 1000;
    if (progress.processed > 0 && sinceStart > 0) return progress.processed / sinceStart;
    if (!first) {
      if (progress.processed > 0) first = { at: now(), processed: progress.processed };
      return 0;
    }
    const seconds = (now() - first.at) / 1000;
    return seconds > 0 ? (progress.processed - first.processed) / seconds : 0;
  };
  if (!stream.isTTY) {
    let lastAt = 0;
    let lastStatus = '';
    return {
      update(progress) {
        const rate = rateOf(progress);
        if (progress.status === lastStatus && now() - lastAt < PLAIN_EVERY_MS) return;
        lastAt = now();
        lastStatus = progress.status;
        stream.write(`${plainLine(progress, rate)}\n`);
      },
      stop() {},
    };
  }
  const bar = new cliProgress.SingleBar({
    format: 'importing [{bar}] {percentage}% {figures}', stream, hideCursor: true, barsize: barSize(stream.columns),
  }, cliProgress.Presets.shades_classic);
  bar.start(1, 0, { figures: '' });
  return {
    update(progress) {
      bar.setTotal(Math.max(progress.total, 1));
      bar.update(progress.processed, { figures: figures(progress, rateOf(progress)) });
    },
    stop: () => bar.stop(),
  };
}
