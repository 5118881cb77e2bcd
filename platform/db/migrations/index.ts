// The ordered list of committed migrations; `catalog migrate` and every start apply what is pending.
import type { MigrationObject } from '@mikro-orm/core';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { InitialSchema } from './0001-initial-schema.ts';
import { Webhooks } from './0003-webhooks.ts';
import { Imports } from './0004-imports.ts';
import { RateLimitStatement } from './0005-rate-limit-statement.ts';
import { RateLimitGroups } from './0006-rate-limit-groups.ts';
import { ImportFingerprints } from './0007-import-fingerprints.ts';
import { ImportProcessingFailures } from './0008-import-processing-failures.ts';
import { EventLog } from './0009-event-log.ts';
import { ItemChangelog } from './0010-item-changelog.ts';
import { BatchedOutbox } from './0011-batched-outbox.ts';
import { MediaRenditions } from './0012-media-renditions.ts';
import { DeliveryIds } from './0013-delivery-ids.ts';
import { ItemForeignKeys } from './0014-item-foreign-keys.ts';
import { ParkedRecords } from './0015-parked-records.ts';
import { TraceContext } from './0016-trace-context.ts';
import { OutboxLanes } from './0017-outbox-lanes.ts';
import { ImportResults } from './0018-import-results.ts';
import { ItemVersions } from './0019-item-versions.ts';
import { WebhookFilters } from './0020-webhook-filters.ts';
import { OrderedWebhooks } from './0021-ordered-webhooks.ts';
import { CompactImportResults } from './0022-compact-import-results.ts';
import { ConsoleAccess } from './0023-console-access.ts';
import { WebhookLastSuccess } from './0024-webhook-last-success.ts';
import { SEALED_SECRETS, sealedSecrets } from './0025-sealed-secrets.ts';
import { KeyLimits } from './0026-key-limits.ts';
import { AuditLog } from './0027-audit-log.ts';
import { SEALED_SOURCE_URL, sealedSourceUrl } from './0028-sealed-source-url.ts';
import { WebhookRateLimits } from './0029-webhook-rate-limits.ts';
import { WebhookSendPaces } from './0030-webhook-send-paces.ts';

const schemaOnly: MigrationObject[] = [
  { name: '0001-initial-schema', class: InitialSchema },
  { name: '0003-webhooks', class: Webhooks },
  { name: '0004-imports', class: Imports },
  { name: '0005-rate-limit-statement', class: RateLimitStatement },
  { name: '0006-rate-limit-groups', class: RateLimitGroups },
  { name: '0007-import-fingerprints', class: ImportFingerprints },
  { name: '0008-import-processing-failures', class: ImportProcessingFailures },
  { name: '0009-event-log', class: EventLog },
  { name: '0010-item-changelog', class: ItemChangelog },
  { name: '0011-batched-outbox', class: BatchedOutbox },
  { name: '0012-media-renditions', class: MediaRenditions },
  { name: '0013-delivery-ids', class: DeliveryIds },
  { name: '0014-item-foreign-keys', class: ItemForeignKeys },
  { name: '0015-parked-records', class: ParkedRecords },
  { name: '0016-trace-context', class: TraceContext },
  { name: '0017-outbox-lanes', class: OutboxLanes },
  { name: '0018-import-results', class: ImportResults },
  { name: '0019-item-versions', class: ItemVersions },
  { name: '0020-webhook-filters', class: WebhookFilters },
  { name: '0021-ordered-webhooks', class: OrderedWebhooks },
  { name: '0022-compact-import-results', class: CompactImportResults },
  { name: '0023-console-access', class: ConsoleAccess },
  { name: '0024-webhook-last-success', class: WebhookLastSuccess },
];

// Applied after the sealing migration, which every database from 0025 on has already run; those that seal get the box too.
const afterSealing = (secrets: SecretBox | undefined): MigrationObject[] => [
  { name: '0026-key-limits', class: KeyLimits },
  { name: '0027-audit-log', class: AuditLog },
  { name: SEALED_SOURCE_URL, class: sealedSourceUrl(secrets) },
  { name: '0029-webhook-rate-limits', class: WebhookRateLimits },
  { name: '0030-webhook-send-paces', class: WebhookSendPaces },
];

/** Every migration, in order; those that seal stored secrets do it with `secrets` (platform/db/orm.ts, `secrets`). */
export function migrationsFor(secrets: SecretBox | undefined): MigrationObject[] {
  return [...schemaOnly, { name: SEALED_SECRETS, class: sealedSecrets(secrets) }, ...afterSealing(secrets)];
}

/** The list without a key: its names and order (`catalog doctor`), and a new database's schema. */
export const migrations: MigrationObject[] = migrationsFor(undefined);
