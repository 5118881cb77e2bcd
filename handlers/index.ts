// operationId → handler: tsc refuses a map that is not exactly the contract's operations (Handlers), and start-up checks it again.
import type { Contract } from '../platform/http/contract.ts';
import type { ServedHandler } from '../platform/http/types.ts';
import { PLATFORM_OPERATIONS } from './handler.ts';
import type { Handlers } from './handler.ts';
import { listParkedRecords } from './admin/list-parked-records.ts';
import { resendParkedRecord } from './admin/resend-parked-record.ts';
import { createConsoleLink } from './console/create-console-link.ts';
import { endConsoleSession } from './console/end-console-session.ts';
import { listConsoleSessions } from './console/list-console-sessions.ts';
import { redeemConsoleLink } from './console/redeem-console-link.ts';
import { revokeConsoleSession } from './console/revoke-console-session.ts';
import { getEvent } from './events/get-event.ts';
import { getEventPublishing } from './events/get-event-publishing.ts';
import { listEvents } from './events/list-events.ts';
import { cancelImport } from './imports/cancel-import.ts';
import { createImport } from './imports/create-import.ts';
import { getImport } from './imports/get-import.ts';
import { getImportFailedLines } from './imports/get-import-failed-lines.ts';
import { getImportResults } from './imports/get-import-results.ts';
import { listImportErrors } from './imports/list-import-errors.ts';
import { listImports } from './imports/list-imports.ts';
import { retryImport } from './imports/retry-import.ts';
import { startImport } from './imports/start-import.ts';
import { listAuditLog } from './audit/list-audit-log.ts';
import { createKey } from './keys/create-key.ts';
import { getAccess } from './keys/get-access.ts';
import { listKeys } from './keys/list-keys.ts';
import { revokeKey } from './keys/revoke-key.ts';
import { updateKey } from './keys/update-key.ts';
import { bulkUpsertItems } from './items/bulk-upsert-items.ts';
import { deleteItem } from './items/delete-item.ts';
import { exportItems } from './items/export-items.ts';
import { getItem } from './items/get-item.ts';
import { listItems } from './items/list-items.ts';
import { upsertItem } from './items/upsert-item.ts';
import { listItemVersions } from './items/list-item-versions.ts';
import { restoreItemVersion } from './items/restore-item-version.ts';
import { getMediaAsset } from './media/get-media-asset.ts';
import { refreshMediaAsset } from './media/refresh-media-asset.ts';
import { getAsyncApi } from './meta/get-async-api.ts';
import { getOpenApi } from './meta/get-open-api.ts';
import { createStockMovement } from './stock/create-stock-movement.ts';
import { listStockMovements } from './stock/list-stock-movements.ts';
import { createWebhook } from './webhooks/create-webhook.ts';
import { listWebhooks } from './webhooks/list-webhooks.ts';
import { getWebhook } from './webhooks/get-webhook.ts';
import { updateWebhook } from './webhooks/update-webhook.ts';
import { deleteWebhook } from './webhooks/delete-webhook.ts';
import { rotateWebhookSecret } from './webhooks/rotate-webhook-secret.ts';
import { resumeWebhook } from './webhooks/resume-webhook.ts';
import { testWebhook } from './webhooks/test-webhook.ts';
import { recoverWebhook } from './webhooks/recover-webhook.ts';
import { listWebhookDeliveries } from './webhooks/list-webhook-deliveries.ts';
import { getWebhookDelivery } from './webhooks/get-webhook-delivery.ts';
import { retryWebhookDelivery } from './webhooks/retry-webhook-delivery.ts';

export const handlers: Handlers = Object.freeze({
  getOpenApi,
  getAsyncApi,
  // items
  upsertItem,
  bulkUpsertItems,
  listItems,
  exportItems,
  getItem,
  deleteItem,
  listItemVersions,
  restoreItemVersion,
  // stock
  createStockMovement,
  listStockMovements,
  // imports
  createImport,
  listImports,
  getImport,
  startImport,
  cancelImport,
  retryImport,
  listImportErrors,
  getImportResults,
  getImportFailedLines,
  // media
  getMediaAsset,
  refreshMediaAsset,
  // events
  listEvents,
  getEvent,
  getEventPublishing,
  // webhooks
  createWebhook,
  listWebhooks,
  getWebhook,
  updateWebhook,
  deleteWebhook,
  rotateWebhookSecret,
  resumeWebhook,
  testWebhook,
  recoverWebhook,
  listWebhookDeliveries,
  getWebhookDelivery,
  retryWebhookDelivery,
  // keys
  getAccess,
  listKeys,
  createKey,
  revokeKey,
  updateKey,
  // audit
  listAuditLog,
  // console
  redeemConsoleLink,
  endConsoleSession,
  // admin
  listParkedRecords,
  resendParkedRecord,
  createConsoleLink,
  listConsoleSessions,
  revokeConsoleSession,
} satisfies Handlers);

const platformOperations: ReadonlySet<string> = new Set(PLATFORM_OPERATIONS);

/** The handler map for the contract; throws when an operation lacks a handler or vice versa. */
export function bindHandlers(contract: Contract): Map<string, ServedHandler> {
  const operations = contract.backend.router.getOperations().map((op) => op.operationId ?? `${op.method} ${op.path}`);
  const missing = operations.filter((id) => !(id in handlers) && !platformOperations.has(id));
  const extra = Object.keys(handlers).filter((id) => !operations.includes(id));
  if (missing.length > 0 || extra.length > 0) {
    throw new Error(
      `handlers and contract differ: ${missing.length > 0 ? `no handler for ${missing.join(', ')}` : ''}` +
      `${missing.length > 0 && extra.length > 0 ? '; ' : ''}${extra.length > 0 ? `not in the contract: ${extra.join(', ')}` : ''}`,
    );
  }
  // The one place a handler's operation types are erased: the pipeline validates every request
  // against the contract before it calls the handler, which is what makes those types true.
  return new Map(Object.entries(handlers) as [string, ServedHandler][]);
}
