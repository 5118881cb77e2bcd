// Restoring a version: the upsert of the item as that version left it, and its audit entry, in one transaction.
import type { Actor } from '../../platform/actor.ts';
import type { Db } from '../../platform/db/sql.ts';
import { recordAudit } from '../audit/audit-log.ts';
import { upsertItems } from './upsert.ts';
import type { UpsertEntry } from './upsert-round.ts';
import type { VersionSource } from './version-source.ts';
import { restorePayload } from './versions.ts';

export interface RestoreOptions {
  readonly retentionDays: number;
  readonly mediaRefreshAgeHours: number;
  readonly source: VersionSource;
}

/**
 * Writes `version` back as an upsert (outside the group commit of single upserts: the audit entry
 * must share its transaction); a restore that changes nothing, the item already as that version
 * left it, records nothing. A refused write throws, leaving nothing behind.
 */
export async function restoreVersion(
  db: Db, catalogId: string, externalSystem: string, externalId: string, version: number, options: RestoreOptions, actor: Actor,
): Promise<Exclude<UpsertEntry, { status: 'error' }>> {
  return db.transactional(async (tx) => {
    const payload = await restorePayload(tx, catalogId, externalSystem, externalId, version, options.retentionDays);
    const [entry] = await upsertItems(tx, catalogId, [payload], {
      mediaRefreshAgeHours: options.mediaRefreshAgeHours, returnStored: true, sourceOf: () => options.source,
    });
    if (entry!.status === 'error') throw entry!.error;
    if (entry!.status !== 'unchanged') {
      await recordAudit(tx, actor, {
        catalogId, action: 'item.version_restored', resourceType: 'item', resourceId: `${externalSystem}/${externalId}`,
        before: null, after: { restoredFromVersion: version, outcome: entry!.status, contentHash: entry!.item.contentHash },
      });
    }
    return entry!;
  });
}
