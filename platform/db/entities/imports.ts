// Entities of bulk imports: the job with its counters and resume cursor, and its line errors.
import { defineEntity, p } from '@mikro-orm/postgresql';
import type { InferEntity } from '@mikro-orm/postgresql';

export const IMPORT_STATUSES = [
  'awaiting_upload', 'queued', 'processing', 'completed', 'completed_with_errors', 'failed', 'cancelled',
] as const;

export const ImportJob = defineEntity({
  name: 'ImportJob',
  tableName: 'import_jobs',
  properties: {
    id: p.uuid().primary(),
    catalogId: p.uuid(),
    status: p.enum(IMPORT_STATUSES),
    dryRun: p.boolean(),
    fileSizeBytes: p.bigint('number'),
    storagePath: p.text(),
    uploadedAt: p.datetime().nullable(),
    uploadExpiresAt: p.datetime().nullable(),
    total: p.integer(),
    processed: p.integer(),
    succeeded: p.integer(),
    failed: p.integer(),
    unchanged: p.integer(),
    errorCount: p.integer(),
    dryRunCreated: p.integer(),
    dryRunUpdated: p.integer(),
    resumeLine: p.bigint('number'),
    resumeOffset: p.bigint('number'),
    failureReason: p.text().nullable(),
    retryOf: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    queuedAt: p.datetime().nullable(),
    startedAt: p.datetime().nullable(),
    finishedAt: p.datetime().nullable(),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type ImportJob = InferEntity<typeof ImportJob>;

export const ImportError = defineEntity({
  name: 'ImportError',
  tableName: 'import_errors',
  properties: {
    id: p.bigint('number').primary(),
    jobId: p.uuid(),
    lineNumber: p.integer(),
    externalId: p.text().nullable(),
    errorType: p.enum(['validation', 'database', 'conflict', 'reference'] as const),
    errorMessage: p.text(),
    rawLine: p.text(),
  },
});
export type ImportError = InferEntity<typeof ImportError>;
