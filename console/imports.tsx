// Imports: start one from a file (dropped or chosen, with upload progress) or an address, and
// follow every job's status, counts, rate and time left as they change.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ImportJob } from '../generated/client.ts';
import { api, call } from './api.ts';
import { go, href } from './router.ts';
import { ErrorNotice } from './components/notice.tsx';
import { StatusBadge } from './components/status-badge.tsx';
import { useLoad } from './components/use-load.ts';
import { When } from './components/when.tsx';
import { ImportProgress, isRunning } from './components/import-progress.tsx';

const uploadTo = (url: string, file: File, onProgress: (sent: number) => void) => new Promise<void>((resolve, reject) => {
  // XMLHttpRequest, because fetch reports no upload progress; the address is signed and carries no key.
  const request = new XMLHttpRequest();
  request.open('PUT', url);
  request.setRequestHeader('content-type', 'application/x-ndjson');
  request.upload.onprogress = (event) => onProgress(event.loaded);
  request.onload = () => (request.status < 300 ? resolve() : reject(new Error(`The upload was refused (${request.status}): ${request.responseText.slice(0, 300)}`)));
  request.onerror = () => reject(new Error('The upload failed: the connection was lost.'));
  request.send(file);
});

function UploadForm() {
  const [file, setFile] = useState<File | undefined>(undefined);
  const [dryRun, setDryRun] = useState(false);
  const [sent, setSent] = useState<number | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [over, setOver] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    if (!file) { setError(new Error('Choose or drop a JSONL file first.')); return; }
    setError(undefined);
    try {
      const created = await call((opts) => api.createImport({ fileSizeBytes: file.size, dryRun }, {}, opts));
      if (!('uploadUrl' in created)) throw new Error('The service did not offer an upload address.');
      setSent(0);
      await uploadTo(created.uploadUrl, file, setSent);
      await call((opts) => api.startImport(created.jobId, opts));
      go('imports', created.jobId);
    } catch (caught) {
      setError(caught);
      setSent(undefined);
    }
  };
  const drop = (event: DragEvent) => {
    event.preventDefault();
    setOver(false);
    const dropped = event.dataTransfer?.files[0];
    if (dropped) setFile(dropped);
  };
  return (
    <form class="panel" onSubmit={(event) => void submit(event)} aria-labelledby="upload-heading">
      <h2 id="upload-heading">Import a file</h2>
      <div class={`dropzone${over ? ' over' : ''}`} onDragOver={(event) => { event.preventDefault(); setOver(true); }} onDragLeave={() => setOver(false)} onDrop={drop}>
        <label for="import-file">JSONL file (one item a line, up to 100 MB)</label>
        <input id="import-file" ref={input} type="file" accept=".jsonl,.ndjson,application/x-ndjson,text/plain"
          onChange={(event) => setFile((event.currentTarget as HTMLInputElement).files?.[0])} />
        <p class="hint">{file ? `${file.name}, ${file.size.toLocaleString()} bytes` : 'or drop the file here'}</p>
      </div>
      <label class="check"><input type="checkbox" checked={dryRun} onChange={(event) => setDryRun((event.currentTarget as HTMLInputElement).checked)} /> Dry run: report what would change, write nothing</label>
      {sent !== undefined && file && (
        <p><label for="upload-progress">Upload progress</label> <progress id="upload-progress" max={file.size} value={sent} /> {Math.round((sent / Math.max(file.size, 1)) * 100)}%</p>
      )}
      <ErrorNotice error={error} />
      <button type="submit" disabled={sent !== undefined}>Upload and import</button>
    </form>
  );
}

function AddressForm() {
  const [url, setUrl] = useState('');
  const [ifChanged, setIfChanged] = useState(true);
  const [error, setError] = useState<unknown>(undefined);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const created = await call((opts) => api.createImport({ source: { url, ifChanged } }, {}, opts));
      go('imports', 'uploadUrl' in created ? created.jobId : created.id);
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <form class="panel" onSubmit={(event) => void submit(event)} aria-labelledby="address-heading">
      <h2 id="address-heading">Import from an address</h2>
      <label for="import-url">Address of the JSONL file</label>
      <input id="import-url" type="url" required placeholder="https://erp.example/feeds/catalog.jsonl" value={url}
        onInput={(event) => setUrl((event.currentTarget as HTMLInputElement).value)} />
      <label class="check"><input type="checkbox" checked={ifChanged} onChange={(event) => setIfChanged((event.currentTarget as HTMLInputElement).checked)} /> Only if the file changed since the last import from it</label>
      <ErrorNotice error={error} />
      <button type="submit">Fetch and import</button>
    </form>
  );
}

export function ImportsScreen() {
  useEffect(() => { document.title = 'Imports · Catalog console'; }, []);
  const jobs = useLoad(async () => (await call((opts) => api.listImports({ limit: 50 }, opts))).imports, [], {
    everyMs: 2000, live: (rows) => (rows ?? []).some((job) => isRunning(job)),
  });
  return (
    <>
      <h1>Imports</h1>
      <div class="columns"><UploadForm /><AddressForm /></div>
      <h2>Jobs</h2>
      <ErrorNotice error={jobs.error} />
      <JobTable jobs={jobs.data ?? []} />
    </>
  );
}

function JobTable({ jobs }: { jobs: ImportJob[] }) {
  if (jobs.length === 0) return <p>No import yet.</p>;
  return (
    <table>
      <caption class="visually-hidden">Import jobs, newest first</caption>
      <thead>
        <tr><th scope="col">Job</th><th scope="col">Status</th><th scope="col">Progress</th><th scope="col">Failed lines</th><th scope="col">Created</th></tr>
      </thead>
      <tbody>
        {jobs.map((job) => (
          <tr key={job.id}>
            <td><a href={href('imports', job.id)}>{job.source ? new URL(job.source.url).pathname.split('/').pop() || job.id.slice(-8) : `File ${job.id.slice(-8)}`}</a>{job.dryRun && <span class="badge muted">dry run</span>}</td>
            <td><StatusBadge status={job.status} /></td>
            <td><ImportProgress job={job} /></td>
            <td class="number">{job.counts.failed.toLocaleString()}</td>
            <td><When at={job.createdAt} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
