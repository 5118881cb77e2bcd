// The subscription store: every statement on webhooks a caller makes (create, read, change, delete, rotate, resume, secrets re-sealed).
import { LockMode } from '@mikro-orm/core';
import type { EventSubscription, Webhook as WebhookView, WebhookCreated, WebhookFilter } from '../../generated/client.ts';
import { SecretKeyError, sealedKeyIdSql } from '../../platform/crypto/secret-box.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import type { Actor } from '../../platform/actor.ts';
import { Webhook } from '../../platform/db/entities/webhooks.ts';
import { query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { notFound, validationError } from '../../platform/errors.ts';
import { changedFields, recordAudit } from '../audit/audit-log.ts';
import { decodeCursor, encodeCursor, keysetPage } from '../pagination.ts';
import { resumePaused } from './delivery-store.ts';
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
}

export type WebhookPatch = Partial<Pick<WebhookInput, 'url' | 'events' | 'description' | 'filter' | 'ordered'>>;

/** The wire shape; the secrets never leave through it. */
export function webhookView(webhook: Webhook): WebhookView {
  return {
    id: webhook.id,
    url: webhook.url,
    events: [...webhook.events] as EventSubscription[],
    description: webhook.description ?? null,
    ownerEmail: webhook.ownerEmail ?? null,
    filter: (webhook.filter as WebhookFilter | null) ?? null,
    ordered: webhook.ordered,
    status: webhook.status,
    consecutiveFailures: webhook.consecutiveFailures,
    lastSuccessAt: webhook.lastSuccessAt?.toISOString() ?? null,
    disabledAt: webhook.disabledAt?.toISOString() ?? null,
    createdAt: webhook.createdAt.toISOString(),
    updatedAt: webhook.updatedAt.toISOString(),
  };
}

/** `*` means every type and then stands alone (the contract's EventSubscription). */
function checkEvents(events: readonly string[]): string[] {
  if (events.includes('*') && events.length > 1) {
    throw validationError([{ path: 'events', message: "'*' subscribes to every event and must be the only entry" }]);
  }
  return [...events];
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

/** A new webhook; its secret is shown in the answer alone, and stored sealed. */
export async function createWebhook(
  db: Db, secrets: SecretBox, rules: TargetRules, catalogId: string, input: WebhookInput, actor: Actor,
): Promise<WebhookCreated> {
  const events = checkEvents(input.events);
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
    return { ...view, secret };
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
  return { webhooks: cut.rows.map(webhookView), nextCursor: cut.nextCursor };
}

export async function updateWebhook(db: Db, rules: TargetRules, catalogId: string, id: string, patch: WebhookPatch, actor: Actor): Promise<WebhookView> {
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
    const change = changedFields(before, webhookView(webhook));
    if (change === undefined) return before;
    webhook.updatedAt = new Date();
    await tx.flush();
    await recordAudit(tx, actor, { catalogId, action: 'webhook.updated', resourceType: 'webhook', resourceId: id, ...change });
    return webhookView(webhook);
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
    if (webhook.status === 'active') return before;
    webhook.status = 'active';
    webhook.consecutiveFailures = 0;
    webhook.disabledAt = null;
    webhook.disabledNoticeSentAt = null;
    webhook.updatedAt = new Date();
    await tx.flush();
    await resumePaused(tx, id);
    const after = webhookView(webhook);
    await recordAudit(tx, actor, { catalogId, action: 'webhook.resumed', resourceType: 'webhook', resourceId: id, ...changedFields(before, after)! });
    return after;
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

/** How many webhook secrets each key seals (`catalog secrets status`); the key id read by sealedKeyIdSql. */
export async function webhookSecretKeys(db: Db): Promise<Array<{ column: string; keyId: string; values: number }>> {
  const rows = await query<{ col: string; key_id: string; n: string }>(db, 'webhooks.secret_keys',
    `SELECT 'webhooks.secret' AS col, ${sealedKeyIdSql('secret')} AS key_id, count(*) AS n FROM webhooks GROUP BY 2
     UNION ALL
     SELECT 'webhooks.previous_secret', ${sealedKeyIdSql('previous_secret')}, count(*) FROM webhooks WHERE previous_secret IS NOT NULL GROUP BY 2
     ORDER BY 1, 2`);
  return rows.map((r) => ({ column: r.col, keyId: r.key_id, values: Number(r.n) }));
}

/**
 * Re-seals with the current key up to `limit` webhooks' secrets sealed with another, in one
 * transaction (`catalog secrets rotate`); an expired previous secret signs nothing and is dropped
 * instead. Returns how many values changed. The rows stay locked until it commits: a rotation
 * through the API waits, and then writes values of its own.
 */
export async function resealWebhookSecrets(db: Db, secrets: SecretBox, limit: number): Promise<number> {
  return db.transactional(async (tx) => {
    const rows = await query<{ id: string; secret: string; previous_secret: string | null; previous_live: boolean }>(tx, 'webhooks.secrets_to_reseal',
      `SELECT id, secret, previous_secret, previous_secret_expires_at > now() AS previous_live FROM webhooks
        WHERE ${sealedKeyIdSql('secret')} <> $1 OR ${sealedKeyIdSql('previous_secret')} <> $1
        LIMIT $2 FOR UPDATE`, [secrets.currentKeyId, limit]);
    if (rows.length === 0) return 0;
    let changed = 0;
    const reseal = (sealed: string, context: string) => {
      if (secrets.keyIdOf(sealed) === secrets.currentKeyId) return sealed;
      changed += 1;
      return secrets.seal(secrets.open(sealed, context), context);
    };
    const current = rows.map((r) => reseal(r.secret, secretContext(r.id)));
    const previous = rows.map((r) => {
      if (r.previous_secret === null) return null;
      if (r.previous_live) return reseal(r.previous_secret, previousSecretContext(r.id));
      changed += 1;
      return null;
    });
    await query(tx, 'webhooks.reseal_secrets', `UPDATE webhooks w SET secret = v.secret, previous_secret = v.previous_secret
      FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v(id, secret, previous_secret) WHERE w.id = v.id`, [rows.map((r) => r.id), current, previous]);
    return changed;
  });
}
