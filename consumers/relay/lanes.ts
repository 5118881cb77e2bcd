// The outbox lanes a relay holds: session locks on a connection of its own, a fair share of them for each relay that runs (docs/design.md, "The outbox").
import { randomInt } from 'node:crypto';
import { LEGACY_LANE, OUTBOX_LANES } from '../../domain/events/outbox.ts';
import { openSession } from '../../platform/db/connections.ts';
import type { Session } from '../../platform/db/connections.ts';
import type { Logger } from '../../platform/log/logger.ts';

// Any constants work as long as every relay uses the same ones.
export const LANE_LOCK_SPACE = 0x6f75746c;
const PRESENCE_LOCK_SPACE = 0x6f757470;
/** Every lane, the one from before lanes first. */
const ALL_LANES = [LEGACY_LANE, ...Array.from({ length: OUTBOX_LANES }, (_, i) => i)];

export interface LaneHolder {
  /** The lanes held now, for the next claim. */
  held(): number[];
  /**
   * Takes or gives up lanes so that each running relay holds its share; called between claims, so
   * that a lane given up has nothing of this relay's in flight. A lost connection loses every lane
   * (its locks die with it): the next call opens another.
   */
  rebalance(): Promise<void>;
  /** Gives up every lane. */
  close(): Promise<void>;
}

/** Each relay holds a presence lock: their number sets every relay's share of the lanes. */
const RELAYS = `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
  AND classid = ${PRESENCE_LOCK_SPACE}::int4::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

export function createLaneHolder(options: { databaseUrl: string; logger: Logger }): LaneHolder {
  const log = options.logger;
  const held = new Set<number>();
  let session: Session | undefined;
  // Where this relay starts looking for free lanes, so that relays starting together spread out.
  const offset = randomInt(ALL_LANES.length);

  // The locks die with the connection: from that moment another relay may take the lanes, so this
  // one must claim none of them, not even until its next rebalance.
  const drop = (error: unknown) => {
    if (held.size > 0) log.warn({ err: error, lanes: [...held] }, 'outbox lanes lost with their connection; taken again when it is back');
    held.clear();
    const dead = session;
    session = undefined;
    return dead?.close();
  };

  return {
    held: () => [...held],
    async rebalance() {
      try {
        if (!session) {
          let opened: Session | undefined;
          opened = await openSession(options.databaseUrl, log, 'outbox lanes', { onLost: (error) => { if (session === opened) void drop(error); } });
          session = opened;
          await session.query('SELECT pg_advisory_lock($1, $2)', [PRESENCE_LOCK_SPACE, randomInt(2 ** 31)]);
        }
        const [relays] = await session.query<{ n: number }>(RELAYS);
        const share = Math.ceil(ALL_LANES.length / Math.max(1, relays?.n ?? 1));
        for (const lane of [...held].sort((a, b) => b - a).slice(0, Math.max(0, held.size - share))) {
          await session.query('SELECT pg_advisory_unlock($1, $2)', [LANE_LOCK_SPACE, lane]);
          held.delete(lane);
        }
        for (let i = 0; i < ALL_LANES.length && held.size < share; i++) {
          const lane = ALL_LANES[(offset + i) % ALL_LANES.length]!;
          if (held.has(lane)) continue;
          const [row] = await session.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS locked', [LANE_LOCK_SPACE, lane]);
          if (row?.locked) held.add(lane);
        }
      } catch (error) {
        await drop(error);
      }
    },
    async close() {
      held.clear();
      await session?.close();
      session = undefined;
    },
  };
}
