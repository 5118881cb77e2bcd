// Where an item write comes from, as its version records it: the API request (key, request id, Idempotency-Key) or the import line.
import type { ItemVersionSource } from '../../generated/client.ts';

export type VersionSource = NonNullable<ItemVersionSource>;

/** A request's source: the key that made it, its X-Request-Id, and its Idempotency-Key when it sent one. */
export function requestSource(apiKeyId: string, requestId: string, headers: Readonly<Record<string, string | string[] | undefined>>, restoredFrom?: number): VersionSource {
  const key = headers['idempotency-key'];
  return {
    kind: 'api', apiKeyId, requestId,
    ...(typeof key === 'string' ? { idempotencyKey: key } : {}),
    ...(restoredFrom === undefined ? {} : { restoredFromVersion: restoredFrom }),
  };
}

/** An import line's source: the job and the line's number in its file. */
export const importSource = (importJobId: string, lineNumber: number): VersionSource => ({ kind: 'import', importJobId, lineNumber });
