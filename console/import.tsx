// One import job: what happened to every line, its errors grouped by kind with the raw line, the
// failed lines to download, and retry or cancel.
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ImportErrorType, ImportJob, ImportLineError } from '../generated/client.ts';
import { api, call, download, jsonLines } from './api.ts';
import { go, href } from './router.ts';
import { DoneNotice, ErrorNotice } from './components/notice.tsx';
import { StatusBadge } from './components/status-badge.tsx';
import { useLoad } from './components/use-load.ts';
import { When } from './components/when.tsx';
import { ImportProgress, isRunning } from './components/import-progress.tsx';

// The contract's ImportLineResult: a results file's line (a contentSchema, which oazapfts does not emit).
interface ImportLineResult {
  lineNumber: number;
  status: 'created' | 'updated' | 'unchanged' | 'failed';
  externalSystem?: string;
  externalId?: string;
  changedFields?: string[];
  errorType?: ImportErrorType;
  errorMessage?: string;
}

const OUTCOMES = ['all', 'failed', 'created', 'updated', 'unchanged'] as const;
const SHOWN = 100;

function Actions({ job, reload }: { job: ImportJob; reload: () => Promise<void> }) {
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const act = async (action: () => Promise<void>) => {
    setError(undefined);
    try { await action(); } catch (caught) { setError(caught); }
  };
  const cancel = () => act(async () => { await call((opts) => api.cancelImport(job.id, opts)); setDone('The job was cancelled.'); await reload(); });
  const retry = () => act(async () => { const created = await call((opts) => api.retryImport(job.id, opts)); go('imports', created.jobId); });
  const failedLines = () => act(async () => {
    download(await call((opts) => api.getImportFailedLines(job.id, opts)), `import-${job.id}-failed-lines.jsonl`);
    setDone('The failed lines were downloaded: fix them and import the file again.');
  });
  return (
    <div class="actions">
      {job.failedLinesUrl && <button type="button" onClick={() => void failedLines()}>Download the failed lines</button>}
      {!isRunning(job) && job.counts.failed > 0 && !job.dryRun && <button type="button" onClick={() => void retry()}>Retry the failed lines</button>}
      {isRunning(job) && <button type="button" class="danger" onClick={() => void cancel()}>Cancel the job</button>}
      <ErrorNotice error={error} />
      {done && <DoneNotice>{done}</DoneNotice>}
    </div>
  );
}

function ErrorsByKind({ jobId }: { jobId: string }) {
  const errors = useLoad(async () => {
    const all: ImportLineError[] = [];
    let cursor: string | undefined;
    // The first 500 line errors: enough to see every kind; the failed-lines file has them all.
    do {
      const page = await call((opts) => api.listImportErrors(jobId, { limit: 100, cursor }, opts));
      all.push(...page.errors);
      cursor = page.nextCursor ?? undefined;
    } while (cursor && all.length < 500);
    return all;
  }, [jobId]);
  const groups = useMemo(() => Map.groupBy(errors.data ?? [], (error) => error.errorType), [errors.data]);
  if (!errors.data || errors.data.length === 0) return <ErrorNotice error={errors.error} />;
  return (
    <section aria-labelledby="errors-heading">
      <h2 id="errors-heading">Errors by kind</h2>
      {[...groups].map(([kind, lines]) => (
        <details key={kind} open={groups.size === 1}>
          <summary><strong>{kind}</strong>: {lines.length} line{lines.length === 1 ? '' : 's'}</summary>
          <ul class="line-errors">
            {lines.map((line) => (
              <li key={line.lineNumber}>
                <p>Line {line.lineNumber}{line.externalId ? ` (${line.externalId})` : ''}: {line.errorMessage}</p>
                <pre tabIndex={0} aria-label={`Raw line ${line.lineNumber}`}>{line.rawLine}</pre>
              </li>
            ))}
          </ul>
        </details>
      ))}
    </section>
  );
}

function Results({ jobId }: { jobId: string }) {
  const results = useLoad(async () => jsonLines<ImportLineResult>(await call((opts) => api.getImportResults(jobId, opts))), [jobId]);
  const [outcome, setOutcome] = useState<(typeof OUTCOMES)[number]>('all');
  const [search, setSearch] = useState('');
  const [limit, setLimit] = useState(SHOWN);
  const matching = useMemo(() => (results.data ?? []).filter((line) => (outcome === 'all' || line.status === outcome)
    && (search === '' || (line.externalId ?? '').toLowerCase().includes(search.toLowerCase()))), [results.data, outcome, search]);
  return (
    <section aria-labelledby="results-heading">
      <h2 id="results-heading">Every line's result</h2>
      <ErrorNotice error={results.error} />
      <div class="filters">
        <label>Outcome <select value={outcome} onChange={(event) => setOutcome((event.currentTarget as HTMLSelectElement).value as typeof outcome)}>
          {OUTCOMES.map((value) => <option key={value} value={value}>{value}</option>)}
        </select></label>
        <label>External id contains <input type="search" value={search} onInput={(event) => setSearch((event.currentTarget as HTMLInputElement).value)} /></label>
        <span role="status">{matching.length.toLocaleString()} line{matching.length === 1 ? '' : 's'}</span>
      </div>
      <table>
        <caption class="visually-hidden">Line results</caption>
        <thead><tr><th scope="col">Line</th><th scope="col">Outcome</th><th scope="col">Item</th><th scope="col">Detail</th></tr></thead>
        <tbody>
          {matching.slice(0, limit).map((line) => (
            <tr key={line.lineNumber}>
              <td class="number">{line.lineNumber}</td>
              <td><StatusBadge status={line.status} /></td>
              <td>{line.externalSystem && line.externalId && line.status !== 'failed'
                ? <a href={href('items', line.externalSystem, line.externalId)}>{line.externalId}</a> : (line.externalId ?? '—')}</td>
              <td>{line.status === 'failed' ? `${line.errorType}: ${line.errorMessage}` : (line.changedFields ?? []).join(', ')}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {matching.length > limit && <button type="button" onClick={() => setLimit(limit + SHOWN)}>Show more lines</button>}
    </section>
  );
}

export function ImportScreen({ jobId }: { jobId: string }) {
  const job = useLoad(() => call((opts) => api.getImport(jobId, opts)), [jobId], { everyMs: 1500, live: (data) => data !== undefined && isRunning(data) });
  const current = job.data;
  useEffect(() => { document.title = `Import ${jobId.slice(-8)} · Catalog console`; }, [jobId]);
  if (!current) return <><h1>Import</h1><ErrorNotice error={job.error} />{!job.error && <p>Loading…</p>}</>;
  return (
    <>
      <p><a href={href('imports')}>← All imports</a></p>
      <h1>Import {jobId.slice(-8)} <StatusBadge status={current.status} /></h1>
      <dl class="facts">
        <dt>Progress</dt><dd><ImportProgress job={current} /></dd>
        <dt>Lines</dt><dd>{current.counts.succeeded.toLocaleString()} created or updated, {current.counts.unchanged.toLocaleString()} unchanged, {current.counts.failed.toLocaleString()} failed</dd>
        <dt>From</dt><dd>{current.source ? current.source.url : `an uploaded file of ${current.fileSizeBytes.toLocaleString()} bytes`}{current.dryRun ? ' (dry run)' : ''}</dd>
        {current.source?.unchanged && <><dt>Unchanged</dt><dd>The file had not changed since the last import from this address: nothing was read.</dd></>}
        {current.retryOf && <><dt>Retries</dt><dd><a href={href('imports', current.retryOf)}>the failed lines of {current.retryOf.slice(-8)}</a></dd></>}
        <dt>Created</dt><dd><When at={current.createdAt} /></dd>
        <dt>Finished</dt><dd><When at={current.finishedAt} /></dd>
        {current.failureReason && <><dt>Why</dt><dd>{current.failureReason}</dd></>}
      </dl>
      <Actions job={current} reload={job.reload} />
      {current.errorCount > 0 && <ErrorsByKind jobId={jobId} />}
      {current.resultsUrl && <Results jobId={jobId} />}
    </>
  );
}
