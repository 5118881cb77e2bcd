// A client team's program on the typescript-fetch client that openapi-generator makes from
// openapi.yaml (compiled beside it into ./client by test/generators/openapi-generator.ts): upsert,
// list, an answer from a newer service, import through the signed upload address with its results
// and failed lines (JSONL), events, and a stored image read back.
import { readFileSync } from 'node:fs';
import {
  Configuration, EventType, EventsApi, GetItem200ResponseFromJSON, ImportLineResultFromJSON, ImportsApi, ItemsApi, MediaStatus,
  StorageApi, ItemUpdatedDataFromJSON,
} from './client/index';
import type { EventEnvelope, ImportJob, Item } from './client/index';

const setting = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const run = setting('CATALOG_RUN');
const waitMs = Number(setting('CATALOG_WAIT_MS'));
const config = new Configuration({ basePath: setting('CATALOG_API_URL'), accessToken: setting('CATALOG_API_KEY') });
const items = new ItemsApi(config);
const imports = new ImportsApi(config);
const events = new EventsApi(config);

/** The signed address as the service returned it: its origin is the base, its last segment the path, its query unchanged. */
function signedAddress(address: string) {
  const url = new URL(address);
  const query = (name: string) => url.searchParams.get(name) ?? '';
  return {
    storage: new StorageApi(new Configuration({ basePath: url.origin })),
    storagePath: decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf('/') + 1)),
    expires: Number(query('expires')),
    type: query('type'),
    signature: query('signature'),
  };
}

/** Polls until `check` gives a value; the deadline only stops a wait that would never end. */
async function until<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`no ${what} within ${waitMs} ms`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

function expect(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

async function eventOf(type: EventType, resourceId: string): Promise<EventEnvelope | undefined> {
  const page = await events.listEvents({ type, resourceId, limit: 10 });
  return page.data.events[0];
}

const steps: Array<[string, () => Promise<void>]> = [];
const step = (name: string, work: () => Promise<void>) => steps.push([name, work]);
const itemId = `${run}-mug`;

step('upsertItem creates an item naming an image', async () => {
  const answer = await items.upsertItem({
    itemPayload: { externalSystem: 'erp', externalId: itemId, name: 'Mug', price: 9.5, media: [{ url: setting('CATALOG_IMAGE_URL') }] },
  });
  expect(answer.data.outcome === 'created', `outcome ${answer.data.outcome}`);
});

step('listItems lists it', async () => {
  const page = await items.listItems({ limit: 50 });
  expect(page.data.items.some((item) => item.externalId === itemId), 'the item is not listed');
});

step('an answer with fields and enum values added later still reads', async () => {
  const answer = await (await items.getItemRaw({ externalSystem: 'erp', externalId: itemId })).raw.json();
  answer.fieldAddedLater = true;
  answer.data.fieldAddedLater = 'a newer service sends it';
  answer.data.media[0].role = 'a-role-added-later';
  const item = GetItem200ResponseFromJSON(answer).data;
  expect(item.externalId === itemId, 'the item did not read back');
  expect((item.media[0]!.role as string) === 'a-role-added-later', `role ${item.media[0]!.role}`);
});

const importLines = [1, 2, 3].map((n) => JSON.stringify({ externalSystem: 'erp', externalId: `${run}-line-${n}`, name: `Line ${n}` }));
// Without `name`: the line fails, and comes back byte for byte from getImportFailedLines.
const badLine = JSON.stringify({ externalSystem: 'erp', externalId: `${run}-line-4` });
let finished: ImportJob | undefined;

step('an import uploaded to its uploadUrl completes, one line failed', async () => {
  const file = new TextEncoder().encode(`${[...importLines, badLine].join('\n')}\n`);
  const created = await imports.createImport({ createImportRequest: { fileSizeBytes: file.length } });
  const upload = signedAddress(created.data.uploadUrl);
  const stored = await upload.storage.uploadImportFile({
    storagePath: upload.storagePath, expires: upload.expires, signature: upload.signature, body: new Blob([file]),
  });
  expect(stored.data.sizeBytes === file.length, `stored ${stored.data.sizeBytes} bytes of ${file.length}`);
  await imports.startImport({ jobId: created.data.jobId });
  const job = await until('finished import', async () => {
    const current = (await imports.getImport({ jobId: created.data.jobId })).data;
    return ['queued', 'processing'].includes(current.status) ? undefined : current;
  });
  const { counts } = job;
  expect(job.status === 'completed_with_errors' && counts.succeeded === 3 && counts.failed === 1, `job ${job.status}, counts ${JSON.stringify(counts)}`);
  finished = job;
});

step('getImportResults and getImportFailedLines read as JSONL', async () => {
  expect(finished !== undefined, 'no finished import');
  const results = (await imports.getImportResults({ jobId: finished!.id })).split('\n').filter(Boolean).map((line) => ImportLineResultFromJSON(JSON.parse(line)));
  const statuses = results.map((result) => `${result.lineNumber}:${result.status}`).join(' ');
  expect(statuses === '1:created 2:created 3:created 4:failed', `results ${statuses}`);
  const failed = await imports.getImportFailedLines({ jobId: finished!.id });
  expect(failed === `${badLine}\n`, `failed lines ${JSON.stringify(failed)}`);
});

step("listEvents has item.created, and item.updated's data reads as ItemUpdatedData", async () => {
  await until('item.created event', () => eventOf(EventType.ItemCreated, itemId));
  await items.upsertItem({ itemPayload: { externalSystem: 'erp', externalId: itemId, name: 'Large mug', price: 9.5, media: [{ url: setting('CATALOG_IMAGE_URL') }] } });
  const updated = await until('item.updated event', () => eventOf(EventType.ItemUpdated, itemId));
  const data = ItemUpdatedDataFromJSON(updated.data);
  expect(data.changedFields.includes('name'), `changedFields ${JSON.stringify(data.changedFields)}`);
});

step('downloadStoredObject returns the stored image byte for byte', async () => {
  const item = await until<Item>('ingested image', async () => {
    const current = (await items.getItem({ externalSystem: 'erp', externalId: itemId })).data;
    const status = current.media[0]?.status;
    expect(status !== MediaStatus.Failed, `ingestion failed: ${JSON.stringify(current.media[0]?.failure)}`);
    return status === MediaStatus.Ingested ? current : undefined;
  });
  const download = signedAddress(item.media[0]!.storedUrl!);
  const image = await download.storage.downloadStoredObject({
    storagePath: download.storagePath, expires: download.expires, type: download.type, signature: download.signature,
  });
  const bytes = new Uint8Array(await image.arrayBuffer());
  const original = readFileSync(setting('CATALOG_IMAGE_FILE'));
  expect(Buffer.from(bytes).equals(original), `got ${bytes.length} bytes, the original has ${original.length}`);
});

async function main(): Promise<void> {
  let failed = 0;
  for (const [name, work] of steps) {
    try {
      await work();
      console.log(`ok - ${name}`);
    } catch (error) {
      failed += 1;
      const response = (error as { response?: Response }).response;
      const detail = response ? ` (HTTP ${response.status}: ${await response.text()})` : '';
      console.log(`not ok - ${name}: ${(error as Error).message}${detail}`);
    }
  }
  console.log(`typescript-fetch client: ${steps.length - failed} of ${steps.length} steps passed`);
  process.exitCode = failed === 0 ? 0 : 1;
}

void main();
