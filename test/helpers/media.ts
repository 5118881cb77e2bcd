// Media test helpers: the service with an image origin, wait for an item's media to settle, read media jobs and events from the outbox, check events against the contract.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import type pg from 'pg';
import { parse } from 'yaml';
import * as api from '../../generated/client.ts';
import type { Item } from '../../generated/client.ts';
import type { MediaConfig } from '../../platform/config/config.ts';
import { clientOptions, expectData } from './client.ts';
import { sqlClient } from './database.ts';
import { startImageOrigin } from './image-origin.ts';
import type { ImageOrigin } from './image-origin.ts';
import { startImportService } from './imports.ts';
import type { Tenant, TestService } from './service.ts';

export interface MediaBed {
  readonly origin: ImageOrigin;
  readonly service: TestService;
  readonly tenant: Tenant;
  readonly sql: pg.Client;
  /** The local storage driver's folder, this file's own. */
  readonly storageDir: string;
  close(): Promise<void>;
}

/**
 * An image origin on loopback, the service on the import service's fixed port (an import's
 * signed upload address needs one) with local storage in a folder of its own, a tenant and a SQL
 * client. Downloads may reach loopback (media-guard.test.ts shows the refusals); MEDIA_TIMEOUT_MS
 * is many times what the largest body here takes over loopback (20 MB, under a second on a busy
 * 2-core machine), so only a route that never answers times out, and waits derive from it.
 */
export async function startMediaBed(file: string, overrides: Record<string, string> = {}): Promise<MediaBed> {
  const origin = await startImageOrigin();
  const storageDir = mkdtempSync(join(tmpdir(), 'catalog-media-'));
  const service = await startImportService(file, {
    OUTBOUND_ALLOW_PRIVATE: 'true', STORAGE_DIR: storageDir, MEDIA_TIMEOUT_MS: '5000', ...overrides,
  });
  const tenant = await service.newTenant();
  const sql = await sqlClient(service.databaseUrl);
  return {
    origin, service, tenant, sql, storageDir,
    async close() {
      await sql.end();
      await service.close();
      await origin.close();
    },
  };
}

/**
 * How long a media job may take to reach the consumer and settle when its download is quick:
 * outbox, relay, Kafka and one consumer batch, the first after the consumer group's join (which
 * beside other CPU-bound test processes on 2 cores takes tens of seconds). A deadline for polling,
 * not a measured assertion: a pass never waits for it. Waits on downloads that run to their timeout add downloadBudgetMs.
 */
export const SETTLE_MS = 60_000;

/**
 * The longest one download can take by configuration: every attempt running to MEDIA_TIMEOUT_MS,
 * with the backoff between attempts (ky's default 0.3 s × 2^n, capped at 10 s in image-fetcher.ts).
 */
export function downloadBudgetMs(media: Pick<MediaConfig, 'timeoutMs' | 'retries'>): number {
  let ms = (media.retries + 1) * media.timeoutMs;
  for (let retry = 1; retry <= media.retries; retry++) ms += Math.min(300 * 2 ** (retry - 1), 10_000);
  return ms;
}

/** Polls the item until no media entry is `pending` (or `until` holds), through the contract-checked client. */
export async function settledItem(serviceUrl: string, key: string, externalId: string, until?: (item: Item) => boolean, timeoutMs = SETTLE_MS): Promise<Item> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const item = expectData(await api.getItem('erp', externalId, clientOptions(serviceUrl, key)), 200);
    if (until ? until(item) : item.media.every((m) => m.status !== 'pending')) return item;
    if (Date.now() > deadline) throw new Error(`media of ${externalId} did not settle: ${JSON.stringify(item.media)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until `check` returns a value other than undefined. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = SETTLE_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Jobs put on catalog.media.v1 (through the outbox) for a catalog. */
export async function mediaJobs(sql: pg.Client, catalogId: string): Promise<Array<{ key: string; body: any }>> {
  const { rows } = await sql.query(
    `SELECT key, payload FROM outbox_events WHERE topic = 'catalog.media.v1' AND payload::jsonb ->> 'catalogId' = $1 ORDER BY batch_id, ord`, [catalogId]);
  return rows.map((r) => ({ key: r.key, body: JSON.parse(r.payload) }));
}

/** media.* events of a catalog as written to the outbox (what the relay publishes unchanged). */
export async function mediaEvents(sql: pg.Client, catalogId: string, sourceUrlHash?: string): Promise<any[]> {
  const { rows } = await sql.query(
    `SELECT payload FROM outbox_events WHERE topic = 'catalog.events.v1' AND type LIKE 'media.%'
      AND payload::jsonb ->> 'catalogId' = $1 AND ($2::text IS NULL OR payload::jsonb ->> 'resourceId' = $2) ORDER BY batch_id, ord`, [catalogId, sourceUrlHash ?? null]);
  return rows.map((r) => JSON.parse(r.payload));
}

let validators: Record<string, ValidateFunction> | undefined;

/** Asserts that an event matches the contract's MediaIngestedEvent / MediaIngestionFailedEvent schema. */
export function assertMediaEvent(event: { type: string }): void {
  if (!validators) {
    const document = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as { components: { schemas: object } };
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    formats.default(ajv);
    const compile = (name: string) => ajv.compile({ $id: `urn:test:${name}`, $ref: `#/components/schemas/${name}`, components: document.components });
    validators = { 'media.ingested': compile('MediaIngestedEvent'), 'media.ingestion_failed': compile('MediaIngestionFailedEvent') };
  }
  const validate = validators[event.type];
  assert.ok(validate, `not a media event: ${event.type}`);
  assert.ok(validate(event), `${event.type} does not match the contract: ${JSON.stringify(validate.errors)}\n${JSON.stringify(event)}`);
}
