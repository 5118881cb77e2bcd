// The subscription store: every statement on webhooks a caller makes (create, read, change, delete, rotate, resume); their secrets' re-sealing is secret-seals.ts.
import { LockMode } from '@mikro-orm/core';
import type { EventSubscription, Webhook as WebhookView, WebhookCreated, WebhookFilter, WebhookRateLimit } from '../../generated/client.ts';
import { SecretKeyError } from '../../platform/crypto/secret-box.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import type { Actor } from '../../platform/actor.ts';
import { Webhook } from '../../platform/db/entities/webhooks.ts';
import { query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { isId, newId } from '../../platform/ids.ts';
import { notFound, validationError } from '../../platform/errors.ts';
import { changedFields, recordAudit } from '../audit/audit-log.ts';
import { decodeCursor, encodeCursor, keysetPage } from '../pagination.ts';
import { notifyDue, resumePaused } from './delivery-store.ts';
import { backlogs, respaceWaiting } from './pacing.ts';
import { ROTATION_OVERLAP_MS, newSecret, previousSecretContext, secretContext } from './signing.ts';
import { compileFilter } from './filter.ts';
import { checkTargetUrl } from './target-url.ts';
import type { TargetRules } from './target-url.ts';

export interface WebhookInput {
  readonly url: string;
  readonly events: readonly string[];
  readonly description?: string | null;
  readonly ownerEmail?: string;
  readonly filter?: WebhookFilter | null;
  readonly ordered?: boolean;
  readonly rateLimit?: WebhookRateLimit | null;
}

export type WebhookPatch = Partial<Pick<WebhookInput, 'url' | 'events' | 'description' | 'filter' | 'ordered' | 'rateLimit'>>;

/** What the owner set: the wire shape but its backlog (the audit log's before and after). */
export type WebhookSettings = Omit<WebhookView, 'backlog'>;

const NO_BACKLOG: WebhookView['backlog'] = { waiting: 0, oldestWaitingSince: null, pausedUntil: null };

function rateLimitOf(webhook: Webhook): WebhookRateLimit | null {
  if (webhook.ratePerSecond === null || webhook.ratePerSecond === undefined) return null;
  return { perSecond: webhook.ratePerSecond, ...(webhook.maxInFlight == null ? {} : { maxInFlight: webhook.maxInFlight }) };
}

/** The wire shape without its backlog; the secrets never leave through it. */
export function webhookView(webhook: Webhook): WebhookSettings {
  return {
    id: webhook.id,
    url: webhook.url,
    events: [...webhook.events] as EventSubscription[],
    description: webhook.description ?? null,
    ownerEmail: webhook.ownerEmail ?? null,
    filter: (webhook.filter as WebhookFilter | null) ?? null,
    ordered: webhook.ordered,
    rateLimit: rateLimitOf(webhook),
    status: webhook.status,
    consecutiveFailures: webhook.consecutiveFailures,
    lastSuccessAt: webhook.lastSuccessAt?.toISOString() ?? null,
    disabledAt: webhook.disabledAt?.toISOString() ?? null,
    createdAt: webhook.createdAt.toISOString(),
    updatedAt: webhook.updatedAt.toISOString(),
  };
}

/** The webhooks as the API answers them: each with its backlog, read in one statement. */
export async function withBacklog(db: Db, views: readonly WebhookSettings[]): Promise<WebhookView[]> {
  const found = await backlogs(db, views.map((v) => v.id));
  return views.map((v) => ({ ...v, backlog: found.get(v.id) ?? NO_BACKLOG }));
}

/** One webhook of the catalog, with its backlog (a 404 as `findWebhook`). */
export async function getWebhook(db: Db, catalogId: string, id: string): Promise<WebhookView> {
  const [view] = await withBacklog(db, [webhookView(await findWebhook(db, catalogId, id))]);
  return view!;
}

/** `*` means every type and then stands alone (the contract's EventSubscription). */
function checkEvents(events: readonly string[]): string[] {
  if (events.includes('*') && events.length > 1) {
    throw validationError([{ path: 'events', message: "'*' subscribes to every event and must be the only entry" }]);
  }
  return [...events];
}

/** The contract's bounds, again for callers that do not come through it (the CLI, benchmarks). */
export function checkRateLimit(limit: WebhookRateLimit): void {
  if (!(Number.isFinite(limit.perSecond) && limit.perSecond > 0 && limit.perSecond <= 10_000)) {
    throw validationError([{ path: 'rateLimit.perSecond', message: 'must be a number above 0 and at most 10000' }]);
  }
  const cap = limit.maxInFlight;
  if (cap !== undefined && !(Number.isInteger(cap) && cap >= 1 && cap <= 1000)) {
    throw validationError([{ path: 'rateLimit.maxInFlight', message: 'must be an integer from 1 to 1000' }]);
  }
}

/**
 * The catalog's webhook, or a 404 (also for another catalog's webhook: ids do not leak across
 * tenants); `forUpdate` locks its row until the caller's transaction ends, so a change's `before` is what it changed.
 */
export async function findWebhook(db: Db, catalogId: string, id: string, forUpdate = false): Promise<Webhook> {
  const webhook = await db.findOne(Webhook, { id, catalogId }, forUpdate ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
  if (!webhook) throw notFound('Webhook');
  return webhook;
}

/** A webhook of any catalog, by id alone (the operator's CLI), or a 404. */
export async function findAnyWebhook(db: Db, id: string): Promise<Webhook> {
  const webhook = isId(id) ? await db.findOne(Webhook, { id: id.toLowerCase() }) : null;
  if (!webhook) throw notFound(`Webhook "${id}"`);
  return webhook;
}

/** A new webhook; its secret is shown in the answer alone, and stored sealed. */
export async function createWebhook(
  db: Db, secrets: SecretBox, rules: TargetRules, catalogId: string, input: WebhookInput, actor: Actor,
): Promise<WebhookCreated> {
  const events = checkEvents(input.events);
  if (input.rateLimit) checkRateLimit(input.rateLimit);
  const filterPath = input.filter ? compileFilter(input.filter) : null;
  const url = await checkTargetUrl(input.url, rules);
  const now = new Date();
  const id = newId();
  const secret = newSecret();
  return db.transactional(async (tx) => {
    const webhook = tx.create(Webhook, {
      id,
      catalogId,
      url,
      events,
      description: input.description ?? null,
      ownerEmail: input.ownerEmail ?? null,
      filter: input.filter ?? null,
      filterPath,
      ordered: input.ordered ?? false,
      ratePerSecond: input.rateLimit?.perSecond ?? null,
      maxInFlight: input.rateLimit?.maxInFlight ?? null,
      status: 'active',
      secret: secrets.seal(secret, secretContext(id)),
      previousSecret: null,
      previousSecretExpiresAt: null,
      consecutiveFailures: 0,
      lastSuccessAt: null,
      disabledAt: null,
      disabledNoticeSentAt: null,
      createdAt: now,
      updatedAt: now,
    });
    await tx.flush();
    const view = webhookView(webhook);
    await recordAudit(tx, actor, { catalogId, action: 'webhook.created', resourceType: 'webhook', resourceId: id, before: null, after: view });
    return { ...view, backlog: NO_BACKLOG, secret };
  });
}

export async function listWebhooks(
  db: Db,
  catalogId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ webhooks: WebhookView[]; nextCursor: string | null }> {
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
  const where = after
    ? { catalogId, $or: [{ createdAt: { $gt: new Date(after.at) } }, { createdAt: new Date(after.at), id: { $gt: after.id } }] }
    : { catalogId };
  const rows = await db.find(Webhook, where, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.limit + 1 });
  const cut = keysetPage(rows, page.limit, (last) => encodeCursor({ at: last.createdAt.toISOString(), id: last.id }));
  return { webhooks: await withBacklog(db, cut.rows.map(webhookView)), nextCursor: cut.nextCursor };
}

export async function updateWebhook(db: Db, rules: TargetRules, catalogId: string, id: string, patch: WebhookPatch, actor: Actor): Promise<WebhookView> {
  // Within the contract's bounds, but a pace must be a positive finite number whatever the caller.
  if (patch.rateLimit) checkRateLimit(patch.rateLimit);
  return db.transactional(async (tx) => {
    const webhook = await findWebhook(tx, catalogId, id, true);
    const before = webhookView(webhook);
    if (patch.events !== undefined) webhook.events = checkEvents(patch.events);
    if (patch.filter !== undefined) {
      webhook.filterPath = patch.filter === null ? null : compileFilter(patch.filter);
      webhook.filter = patch.filter;
    }
    if (patch.url !== undefined) webhook.url = await checkTargetUrl(patch.url, rules);
    if (patch.description !== undefined) webhook.description = patch.description;
    if (patch.ordered !== undefined) webhook.ordered = patch.ordered;
    if (patch.rateLimit !== undefined) {
      webhook.ratePerSecond = patch.rateLimit?.perSecond ?? null;
      webhook.maxInFlight = patch.rateLimit?.maxInFlight ?? null;
    }
    const change = changedFields(before, webhookView(webhook));
    if (change === undefined) return (await withBacklog(tx, [before]))[0]!;
    webhook.updatedAt = new Date();
    await tx.flush();
    // A new pace applies to the deliveries already waiting, not only to the next ones.
    if ((webhook.ratePerSecond ?? null) !== (before.rateLimit?.perSecond ?? null)) {
      await respaceWaiting(tx, id);
      await notifyDue(tx);
    }
    await recordAudit(tx, actor, { catalogId, action: 'webhook.updated', resourceType: 'webhook', resourceId: id, ...change });
    return (await withBacklog(tx, [webhookView(webhook)]))[0]!;
  });
}

/** Deletes the webhook; its deliveries and their attempts go with it (ON DELETE CASCADE). */
export async function deleteWebhook(db: Db, catalogId: string, id: string, actor: Actor): Promise<void> {
  await db.transactional(async (tx) => {
    const webhook = await findWebhook(tx, catalogId, id, true);
    await tx.nativeDelete(Webhook, { id, catalogId });
    await recordAudit(tx, actor, { catalogId, action: 'webhook.deleted', resourceType: 'webhook', resourceId: id, before: webhookView(webhook), after: null });
  });
}

/**
 * A new secret; the one it replaces keeps signing beside it for 24 h (two `v1=` entries). When
 * the current secret cannot be opened (its key is gone), rotating is the way out: the new secret
 * signs alone at once, as nothing could sign with the old one.
 */
export async function rotateSecret(
  db: Db, secrets: SecretBox, catalogId: string, id: string, actor: Actor,
): Promise<{ secret: string; previousSecretExpiresAt: string }> {
  return db.transactional(async (tx) => {
    const webhook = await findWebhook(tx, catalogId, id, true);
    const before = { previousSecretExpiresAt: webhook.previousSecretExpiresAt?.toISOString() ?? null };
    const now = new Date();
    let previous: string | null = null;
    try {
      previous = secrets.open(webhook.secret, secretContext(webhook.id));
    } catch (error) {
      if (!(error instanceof SecretKeyError)) throw error;
    }
    const secret = newSecret();
    webhook.previousSecret = previous === null ? null : secrets.seal(previous, previousSecretContext(webhook.id));
    webhook.previousSecretExpiresAt = previous === null ? now : new Date(now.getTime() + ROTATION_OVERLAP_MS);
    webhook.secret = secrets.seal(secret, secretContext(webhook.id));
    webhook.updatedAt = now;
    await tx.flush();
    const after = { previousSecretExpiresAt: webhook.previousSecretExpiresAt.toISOString() };
    await recordAudit(tx, actor, { catalogId, action: 'webhook.secret_rotated', resourceType: 'webhook', resourceId: id, before, after });
    return { secret, ...after };
  });
}

/**
 * Active again with a zero counter; the deliveries paused while it was disabled become due now.
 * Resuming an active webhook changes nothing.
 */
export async function resumeWebhook(db: Db, catalogId: string, id: string, actor: Actor): Promise<WebhookView> {
  return db.transactional(async (tx) => {
    const webhook = await findWebhook(tx, catalogId, id, true);
    const before = webhookView(webhook);
    if (webhook.status === 'active') return (await withBacklog(tx, [before]))[0]!;
    webhook.status = 'active';
    webhook.consecutiveFailures = 0;
    webhook.disabledAt = null;
    webhook.disabledNoticeSentAt = null;
    webhook.updatedAt = new Date();
    await tx.flush();
    await resumePaused(tx, id);
    const after = webhookView(webhook);
    await recordAudit(tx, actor, { catalogId, action: 'webhook.resumed', resourceType: 'webhook', resourceId: id, ...changedFields(before, after)! });
    return (await withBacklog(tx, [after]))[0]!;
  });
}

/**
 * The catalogs among `catalogIds` with an active webhook, in lower case (Postgres prints a uuid
 * so; an event's text may not be).
 */
export async function catalogsWithActiveWebhooks(db: Db, catalogIds: readonly string[]): Promise<Set<string>> {
  const rows = await query<{ catalog_id: string }>(db,
    `SELECT DISTINCT catalog_id FROM webhooks WHERE catalog_id = ANY($1::uuid[]) AND status = 'active'`, [catalogIds]);
  return new Set(rows.map((r) => r.catalog_id));
}
