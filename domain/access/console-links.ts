// The console_links store: single-use links an operator mints, redeemed once for a console session (an expiring api_keys row), listed and revoked.
import type { ConsoleLink, ConsoleSession, ConsoleSessionList, ConsoleSessionRecord, CatalogScope } from '../../generated/client.ts';
import type { Actor } from '../../platform/actor.ts';
import type { Environment } from '../../platform/config/config.ts';
import { query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { ProductError, notFound, validationError } from '../../platform/errors.ts';
import type { ErrorDetail } from '../../platform/errors.ts';
import { isId, newId } from '../../platform/ids.ts';
import { changedFields, recordAudit } from '../audit/audit-log.ts';
import { afterCursor, encodeCursor, keysetPage } from '../pagination.ts';
import { isoTime } from '../items/view.ts';
import { findCatalog } from './catalogs.ts';
import { CATALOG_SCOPES, findApiKey, hashKey, keyPrefixOf, newKeyToken, randomToken } from './key-store.ts';

/** The token's prefix: a link is told from a key at a glance (and by secret scanners). */
export const LINK_PREFIX = 'cl_';
// A session is a key of the middle tier: a person at a browser, not an integration.
const SESSION_TIER = 'pro';

export interface LinkRequest {
  /** The catalog's name or id. */
  readonly catalog: string;
  readonly scopes: readonly string[];
  readonly redeemWithinMinutes?: number | undefined;
  readonly sessionMinutes?: number | undefined;
  readonly label?: string | undefined;
}

// The contract's bounds (CreateConsoleLinkRequest), checked here too for the command line.
function checkLinkRequest(request: LinkRequest): { scopes: string[]; redeemWithinMinutes: number; sessionMinutes: number; label: string | null } {
  const scopes = [...new Set(request.scopes.map((s) => s.trim()).filter((s) => s !== ''))];
  const redeemWithinMinutes = request.redeemWithinMinutes ?? 15;
  const sessionMinutes = request.sessionMinutes ?? 480;
  const label = request.label?.trim() || null;
  const details: ErrorDetail[] = [];
  const unknown = scopes.filter((s) => !(CATALOG_SCOPES as readonly string[]).includes(s));
  if (scopes.length === 0) details.push({ path: 'scopes', message: `must name at least one of ${CATALOG_SCOPES.join(', ')}` });
  if (unknown.length > 0) details.push({ path: 'scopes', message: `not a catalog scope: ${unknown.join(', ')}; known: ${CATALOG_SCOPES.join(', ')}` });
  const within = (value: number, min: number) => Number.isInteger(value) && value >= min && value <= 1440;
  if (!within(redeemWithinMinutes, 1)) details.push({ path: 'redeemWithinMinutes', message: 'must be a whole number of minutes from 1 to 1440' });
  if (!within(sessionMinutes, 5)) details.push({ path: 'sessionMinutes', message: 'must be a whole number of minutes from 5 to 1440' });
  if (label !== null && label.length > 200) details.push({ path: 'label', message: 'must be at most 200 characters' });
  if (details.length > 0) throw validationError(details);
  return { scopes, redeemWithinMinutes, sessionMinutes, label };
}

/**
 * Mints a link: the token goes only into the URL's fragment, which browsers never send to a
 * server, so no access log or proxy sees it; only its SHA-256 is stored.
 */
export async function mintConsoleLink(db: Db, request: LinkRequest, publicBaseUrl: string, actor: Actor): Promise<ConsoleLink> {
  const checked = checkLinkRequest(request);
  const catalog = await findCatalog(db, request.catalog);
  const token = `${LINK_PREFIX}${randomToken()}`;
  const id = newId();
  return db.transactional(async (tx) => {
    const [row] = await query<{ redeem_by: string; created_at: string }>(tx, 'access.mint_console_link', sql`
      INSERT INTO console_links (id, catalog_id, token_hash, scopes, label, session_minutes, redeem_by)
      VALUES (${id}::uuid, ${catalog.id}::uuid, ${hashKey(token)}, ${checked.scopes}::text[], ${checked.label}, ${checked.sessionMinutes}::int,
        now() + ${checked.redeemWithinMinutes}::int * interval '1 minute')
      RETURNING ${sql.raw(isoTime('redeem_by'))} AS redeem_by, ${sql.raw(isoTime('created_at'))} AS created_at`);
    const link = {
      id,
      catalogId: catalog.id,
      catalogName: catalog.name,
      scopes: checked.scopes as CatalogScope[],
      label: checked.label,
      redeemBy: row!.redeem_by,
      sessionMinutes: checked.sessionMinutes,
      createdAt: row!.created_at,
    };
    // The link's URL carries its token: never in the audit log.
    await recordAudit(tx, actor, { catalogId: catalog.id, action: 'console_link.created', resourceType: 'console_link', resourceId: id, before: null, after: link });
    return { ...link, url: `${publicBaseUrl}/console/#link=${token}` };
  });
}

const REFUSALS = {
  used: 'This console link was already used; ask for a new one.',
  expired: 'This console link has expired; ask for a new one.',
  revoked: 'This console link was revoked; ask for a new one.',
  unknown: 'This is not a console link this service issued; check that the whole link was copied, or ask for a new one.',
} as const;

/** Why a link cannot be redeemed, as a 401 whose detail names it for the console's page. */
function refusedLink(reason: keyof typeof REFUSALS): ProductError {
  return new ProductError('unauthorized', REFUSALS[reason], [{ path: 'link', message: reason }]);
}

interface SessionRow { id: string; catalog_id: string; catalog_name: string; scopes: string[]; expires_at: string }

/**
 * Redeems a link once. The UPDATE's condition and its row lock make the use single: of two
 * redeems at once, the second waits, then finds the link redeemed. The session's key row is
 * inserted by the same statement, with the link's id, or not at all.
 */
export async function redeemConsoleLink(db: Db, link: string, environment: Environment, actor: Actor): Promise<ConsoleSession> {
  const tokenHash = hashKey(link.trim());
  const token = newKeyToken(environment);
  const session = await db.transactional(async (tx) => {
    const [row] = await query<SessionRow>(tx, 'access.redeem_console_link', sql`
      WITH link AS (
        UPDATE console_links SET redeemed_at = now()
         WHERE token_hash = ${tokenHash} AND redeemed_at IS NULL AND redeem_by > now() AND revoked_at IS NULL
        RETURNING id, catalog_id, scopes, label, session_minutes
      ), session AS (
        INSERT INTO api_keys (id, catalog_id, key_hash, key_prefix, scopes, tier, kind, expires_at, label, created_at)
        SELECT id, catalog_id, ${hashKey(token)}, ${keyPrefixOf(token)}, scopes, ${SESSION_TIER}, 'console',
          now() + session_minutes * interval '1 minute', label, now()
          FROM link
        RETURNING id, catalog_id, scopes, expires_at
      )
      SELECT s.id, s.catalog_id, c.name AS catalog_name, s.scopes, ${sql.raw(isoTime('s.expires_at'))} AS expires_at
        FROM session s JOIN catalogs c ON c.id = s.catalog_id`);
    if (!row) return undefined;
    const started = { id: row.id, catalogId: row.catalog_id, catalogName: row.catalog_name, scopes: row.scopes as CatalogScope[], expiresAt: row.expires_at };
    // The session is its own actor: the browser that redeemed the link, from its address.
    await recordAudit(tx, { ...actor, kind: 'console', keyId: row.id }, {
      catalogId: row.catalog_id, action: 'console_session.started', resourceType: 'console_session', resourceId: row.id, before: null, after: started,
  });
  return started;
  });
  if (!session) throw refusedLink(await whyRefused(db, tokenHash));
  return { token, ...session };
}

async function whyRefused(db: Db, tokenHash: string): Promise<keyof typeof REFUSALS> {
  const [link] = await query<{ revoked: boolean; used: boolean }>(db, 'access.console_link_state', sql`
    SELECT revoked_at IS NOT NULL AS revoked, redeemed_at IS NOT NULL AS used FROM console_links WHERE token_hash = ${tokenHash}`);
  if (!link) return 'unknown';
  return link.revoked ? 'revoked' : link.used ? 'used' : 'expired';
}

interface RecordRow {
  id: string; catalog_id: string; catalog_name: string; scopes: string[]; label: string | null; state: ConsoleSessionRecord['state'];
  redeem_by: string; redeemed_at: string | null; expires_at: string | null; revoked_at: string | null; created_at: string; created_at_text: string;
}

// A link and the session it opened (the api_keys row of the same id), with its state.
const RECORD = sql`
  SELECT l.id, l.catalog_id, c.name AS catalog_name, l.scopes, l.label,
    CASE WHEN l.revoked_at IS NOT NULL OR k.revoked_at IS NOT NULL THEN 'revoked'
         WHEN l.redeemed_at IS NULL THEN CASE WHEN l.redeem_by > now() THEN 'pending' ELSE 'expired' END
         WHEN k.expires_at <= now() THEN 'expired'
         ELSE 'active' END AS state,
    ${sql.raw(isoTime('l.redeem_by'))} AS redeem_by, ${sql.raw(isoTime('l.redeemed_at'))} AS redeemed_at,
    ${sql.raw(isoTime('k.expires_at'))} AS expires_at, ${sql.raw(isoTime('coalesce(l.revoked_at, k.revoked_at)'))} AS revoked_at,
    ${sql.raw(isoTime('l.created_at'))} AS created_at, l.created_at::text AS created_at_text
    FROM console_links l
    JOIN catalogs c ON c.id = l.catalog_id
    LEFT JOIN api_keys k ON k.id = l.id AND k.kind = 'console'`;

const recordView = (row: RecordRow): ConsoleSessionRecord => ({
  id: row.id, catalogId: row.catalog_id, catalogName: row.catalog_name, scopes: row.scopes as CatalogScope[], label: row.label,
  state: row.state, redeemBy: row.redeem_by, redeemedAt: row.redeemed_at, expiresAt: row.expires_at, revokedAt: row.revoked_at,
  createdAt: row.created_at,
});

/** Every link (one catalog's, when named) with its session's state, newest first. */
export async function listConsoleSessions(
  db: Db,
  options: { catalog?: string | undefined; limit: number; cursor?: string | undefined },
): Promise<ConsoleSessionList> {
  const catalogId = options.catalog === undefined ? null : (await findCatalog(db, options.catalog)).id;
  const rows = await query<RecordRow>(db, 'access.list_console_sessions', sql`${RECORD}
     WHERE (${catalogId}::uuid IS NULL OR l.catalog_id = ${catalogId}::uuid)
       AND ${options.cursor ? afterCursor(options.cursor, sql`l.created_at, l.id`, 'desc') : sql`true`}
     ORDER BY l.created_at DESC, l.id DESC LIMIT ${options.limit + 1}`);
  const page = keysetPage(rows, options.limit, (row) => encodeCursor({ at: row.created_at_text, id: row.id }));
  return { sessions: page.rows.map(recordView), nextCursor: page.nextCursor };
}

/**
 * Revokes a link not redeemed yet, and the session of one that was; a revoked one keeps its
 * first revocation time. `action` tells the operator's revocation from a session's own sign-out.
 */
export async function revokeConsoleSession(
  db: Db, id: string, actor: Actor, action: 'console_session.revoked' | 'console_session.ended' = 'console_session.revoked',
): Promise<ConsoleSessionRecord> {
  if (!isId(id)) throw notFound('Console session');
  return db.transactional(async (tx) => {
    // The link's row locked first: of two revocations at once, the second finds the first's.
    const [was] = await query<RecordRow>(tx, 'access.lock_console_session', sql`${RECORD} WHERE l.id = ${id.toLowerCase()}::uuid FOR UPDATE OF l`);
    if (!was) throw notFound('Console session');
    await query(tx, 'access.revoke_console_link', sql`
      UPDATE console_links SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id.toLowerCase()}::uuid`);
    await query(tx, 'access.revoke_console_session', sql`
      UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id.toLowerCase()}::uuid AND kind = 'console'`);
    const [row] = await query<RecordRow>(tx, 'access.console_session', sql`${RECORD} WHERE l.id = ${id.toLowerCase()}::uuid`);
    const before = recordView(was);
    const after = recordView(row!);
    const change = changedFields(before, after);
    if (change) await recordAudit(tx, actor, { catalogId: after.catalogId, action, resourceType: 'console_session', resourceId: after.id, ...change });
    return after;
  });
}

/** The console's "Sign out": revokes the calling session; a key is not a session (403). */
export async function endConsoleSession(db: Db, keyId: string, actor: Actor): Promise<ConsoleSessionRecord> {
  const key = await findApiKey(db, keyId);
  if (key.kind !== 'console') {
    throw new ProductError('forbidden', 'This credential is an API key, not a console session: revoke keys with DELETE /keys/{keyId}.');
  }
  return revokeConsoleSession(db, keyId, actor, 'console_session.ended');
}
