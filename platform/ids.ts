// Every id the service makes (a UUIDv7 from the uuid package, its random bits drawn from a pool), and the one test of an id it is given.
import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

// uuid asks the system for 16 random bytes per id (crypto.getRandomValues), a call into the system's
// random source each time, where an import makes two ids per line. One call fills the pool for 256
// ids, as Node's own randomUUID() does for its entropy cache.
const POOL_IDS = 256;
const pool = new Uint8Array(16 * POOL_IDS);
let drawn = POOL_IDS;

// Given its random bytes, uuid leaves the timestamp and the counter to the caller, so the state it
// otherwise keeps is kept here, the same way: within a millisecond the 32-bit counter goes up by one
// from a random start, and its overflow moves the timestamp on, so ids made by this process sort in
// the order they were made (RFC 9562, §6.2, method 1).
let msecs = -Infinity;
let seq = 0;

/** A new UUIDv7 (lower-case, hyphenated), later in sort order than any this process made before. */
export function newId(): string {
  if (drawn === POOL_IDS) {
    randomFillSync(pool);
    drawn = 0;
  }
  const random = pool.subarray(drawn * 16, drawn * 16 + 16);
  drawn += 1;
  const now = Date.now();
  if (now > msecs) {
    msecs = now;
    seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    seq = (seq + 1) | 0;
    if (seq === 0) msecs += 1;
  }
  return v7({ random, msecs, seq });
}

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `text` is an id as the service prints them: a hyphenated UUID, in either case. */
export const isId = (text: string): boolean => ID.test(text);
