// How the relay sends a claim's records: in chunks the broker takes, and which failures refuse a record for good.
import type { OutboxRecord } from '../../domain/events/outbox.ts';
import type { Refusal } from '../../domain/events/parked.ts';

// Kafka's default message.max.bytes (1 MB) caps one record batch, which kafkajs builds per
// partition per send; staying under it in total per send keeps large events from wedging the relay.
const MAX_SEND_BYTES = 900_000;

// The broker's answers that refuse a record itself, whatever the retries: too large, or not a
// valid record. Anything else (a broker away, a leader moving) is waited out and retried.
const REFUSED_FOR_GOOD = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE', 'INVALID_TIMESTAMP']);

/** The broker's error type when it refused the records for good; undefined for any other failure. */
export function refusedForGood(error: unknown): string | undefined {
  for (let e = error; e instanceof Error; e = (e as { cause?: unknown; originalError?: unknown }).cause ?? (e as { originalError?: unknown }).originalError) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && REFUSED_FOR_GOOD.has(type)) return type;
  }
  return undefined;
}

export function chunksBySize(rows: readonly OutboxRecord[]): OutboxRecord[][] {
  const chunks: OutboxRecord[][] = [];
  let current: OutboxRecord[] = [];
  let bytes = 0;
  for (const row of rows) {
    // An item event's changelog record is at most its payload again; each of the two carries
    // the five headers (about 170 bytes) and a record's framing.
    const size = 2 * (Buffer.byteLength(row.payload) + Buffer.byteLength(row.key)) + 400;
    if (current.length > 0 && bytes + size > MAX_SEND_BYTES) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(row);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Sends the records with `send`, chunk by chunk; returns those the broker refused for good. A
 * chunk it refused is sent again a record at a time, to find which: one tenant's record must not
 * hold up every later one.
 */
export async function publishInChunks(records: readonly OutboxRecord[], send: (records: readonly OutboxRecord[]) => Promise<void>): Promise<Refusal[]> {
  const refused: Refusal[] = [];
  for (const chunk of chunksBySize(records)) {
    try {
      await send(chunk);
    } catch (error) {
      if (refusedForGood(error) === undefined) throw error;
      for (const record of chunk) {
        try {
          await send([record]);
        } catch (alone) {
          const errorType = refusedForGood(alone);
          if (errorType === undefined) throw alone;
          refused.push({ record, errorType, reason: (alone as Error).message });
        }
      }
    }
  }
  return refused;
}
