// A private Postgres primary and streaming standby for a test that fails it over: its folder and ports are this run's alone.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/free-port.ts';
import { promoteStandby, removeReplicatedPostgres, startReplicatedPostgres, stopPrimary, stopStandby, urlsOf } from '../../scripts/postgres-replica.ts';
import type { ReplicaOptions, ReplicaUrls } from '../../scripts/postgres-replica.ts';
import { runId } from './test-run.ts';

export interface PrivateReplicatedPostgres {
  readonly dataDir: string;
  /** The options the scripts take, for what the helper does not wrap (stopReplicatedPostgres, replicaStatus). */
  readonly options: ReplicaOptions;
  /** Both URLs are known once start() has picked the ports. */
  readonly primaryUrl: string;
  readonly standbyUrl: string;
  start(): Promise<ReplicaUrls>;
  stopPrimary(mode: 'fast' | 'immediate'): Promise<void>;
  /** Stops the standby alone; start() brings it back, streaming again. */
  stopStandby(mode: 'fast' | 'immediate'): Promise<void>;
  promote(): Promise<void>;
  /** Stops both and deletes the folder; safe to call twice. */
  remove(): Promise<void>;
}

export function privateReplicatedPostgres(name: string, { synchronous = false }: { synchronous?: boolean } = {}): PrivateReplicatedPostgres {
  // Under the system's tmp folder, not the repository's `.data`: the postgres user must be able to reach it.
  const dataDir = join(tmpdir(), `catalog-pg-${runId()}-${name}`);
  let options: ReplicaOptions | undefined;
  const started = (): ReplicaOptions => {
    if (!options) throw new Error(`replicated Postgres ${name}: start() it first`);
    return options;
  };
  return {
    dataDir,
    get options() { return started(); },
    get primaryUrl() { return urlsOf(started()).primaryUrl; },
    get standbyUrl() { return urlsOf(started()).standbyUrl; },
    async start() {
      if (!options) {
        const primaryPort = await freePort();
        let standbyPort = await freePort();
        while (standbyPort === primaryPort) standbyPort = await freePort();
        options = { dataDir, primaryPort, standbyPort, synchronous };
      }
      return startReplicatedPostgres(options);
    },
    stopPrimary: (mode) => stopPrimary(started(), mode),
    stopStandby: (mode) => stopStandby(started(), mode),
    promote: () => promoteStandby(started()),
    remove: async () => { if (options) await removeReplicatedPostgres(options); },
  };
}
