// Media test helpers: wait for an item's media to settle, read media jobs and events from the outbox, check events against the contract.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import type pg from 'pg';
import { parse } from 'yaml';
import * as api from '../../generated/client.ts';
import type { Item } from '../../generated/client.ts';
import { clientOptions, expectData } from './client.ts';

/** Polls the item until no media entry is `pending` (or `until` holds), through the contract-checked client. */
export async function settledItem(serviceUrl: string, key: string, externalId: string, until?: (item: Item) => boolean, timeoutMs = 30_000): Promise<Item> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const item = expectData(await api.getItem('erp', externalId, clientOptions(serviceUrl, key)), 200);
    if (until ? until(item) : item.media.every((m) => m.status !== 'pending')) return item;
    if (Date.now() > deadline) throw new Error(`media of ${externalId} did not settle: ${JSON.stringify(item.media)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until `check` returns a value other than undefined. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
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
    `SELECT key, payload FROM outbox WHERE topic = 'catalog.media.v1' AND payload::jsonb ->> 'catalogId' = $1 ORDER BY id`, [catalogId]);
  return rows.map((r) => ({ key: r.key, body: JSON.parse(r.payload) }));
}

/** media.* events of a catalog as written to the outbox (what the relay publishes unchanged). */
export async function mediaEvents(sql: pg.Client, catalogId: string, sourceUrlHash?: string): Promise<any[]> {
  const { rows } = await sql.query(
    `SELECT payload FROM outbox WHERE topic = 'catalog.events.v1' AND headers ->> 'event-type' LIKE 'media.%'
      AND payload::jsonb ->> 'catalogId' = $1 AND ($2::text IS NULL OR key = $2) ORDER BY id`, [catalogId, sourceUrlHash ?? null]);
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
