// The `node scripts/kafka.ts` command line: start, stop and report the single broker, or with --nodes a cluster and its nodes one by one.
import {
  CLUSTER_PORT, DEFAULT_PORT, KAFKA_VERSION, kafkaClusterStatus, kafkaStatus, killKafkaNode, startKafka, startKafkaCluster,
  startKafkaNode, stopKafka, stopKafkaCluster, stopKafkaNode, wipeKafkaNode,
} from '../kafka.ts';
import type { KafkaClusterOptions, KafkaOptions } from '../kafka.ts';

const USAGE = `usage: node scripts/kafka.ts start|stop|status [--port ${DEFAULT_PORT}]
       node scripts/kafka.ts start|stop|status --nodes N [--port ${CLUSTER_PORT}]
       node scripts/kafka.ts start|stop|kill|restart|wipe --node ID [--nodes 3] [--port ${CLUSTER_PORT}]`;

function numberFlag(argv: string[], name: string, fallback: number, valid: (n: number) => boolean, what: string): number {
  const at = argv.indexOf(name);
  if (at < 0) return fallback;
  const value = Number(argv[at + 1]);
  if (!Number.isInteger(value) || !valid(value)) throw new Error(`${name} must be ${what}, got "${argv[at + 1]}"`);
  return value;
}

async function singleCli(command: string | undefined, opts: KafkaOptions): Promise<number> {
  switch (command) {
    case 'start': {
      const { brokers, started } = await startKafka(opts);
      console.log(started ? `Kafka ${KAFKA_VERSION} started on ${brokers.join(',')}` : `Kafka already running on ${brokers.join(',')}`);
      return 0;
    }
    case 'stop': {
      const { stopped } = await stopKafka(opts);
      console.log(stopped ? 'Kafka stopped' : 'no Kafka broker from this data folder is running');
      return 0;
    }
    case 'status': {
      const status = await kafkaStatus(opts);
      console.log(JSON.stringify(status, null, 2));
      return status.ready ? 0 : 1;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

async function clusterCli(command: string | undefined, opts: KafkaClusterOptions): Promise<number> {
  const count = opts.nodes ?? 3;
  switch (command) {
    case 'start': {
      const { brokers, started } = await startKafkaCluster(opts);
      console.log(started ? `Kafka ${KAFKA_VERSION} cluster of ${count} started on ${brokers.join(',')}` : `Kafka cluster of ${count} already running on ${brokers.join(',')}`);
      return 0;
    }
    case 'stop': {
      const { stopped } = await stopKafkaCluster(opts);
      console.log(stopped ? 'Kafka cluster stopped' : 'no Kafka cluster node from this data folder is running');
      return 0;
    }
    case 'status': {
      const status = await kafkaClusterStatus(opts);
      console.log(JSON.stringify(status, null, 2));
      return status.ready ? 0 : 1;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

async function nodeCli(command: string | undefined, id: number, opts: KafkaClusterOptions): Promise<number> {
  const print = (stopped: boolean, verb: string) => console.log(stopped ? `Kafka node ${id} ${verb}` : `Kafka node ${id} is not running`);
  switch (command) {
    case 'kill':
      print((await killKafkaNode(opts, id)).stopped, 'killed');
      return 0;
    case 'stop':
      print((await stopKafkaNode(opts, id)).stopped, 'stopped');
      return 0;
    case 'wipe':
      await wipeKafkaNode(opts, id);
      console.log(`Kafka node ${id} wiped (log folders deleted, formatted again); start it to copy its partitions back`);
      return 0;
    case 'start':
    case 'restart': {
      if (command === 'restart') await stopKafkaNode(opts, id);
      const { brokers, started } = await startKafkaNode(opts, id);
      console.log(`Kafka node ${id} ${started ? 'started' : 'already running'} on ${brokers.join(',')}`);
      return 0;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

async function cli(argv: string[]): Promise<number> {
  const { loadConfig } = await import('../../platform/config/config.ts');
  const { createLogger } = await import('../../platform/log/logger.ts');
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  if (!argv.includes('--nodes') && !argv.includes('--node')) {
    const port = numberFlag(argv, '--port', DEFAULT_PORT, (n) => n >= 1 && n <= 65534, 'a port number');
    return singleCli(argv[0], { dataDir: config.dataDir, port, logger });
  }
  const nodes = numberFlag(argv, '--nodes', 3, (n) => n >= 2 && n <= 100, 'a number of nodes, 2 or more');
  const port = numberFlag(argv, '--port', CLUSTER_PORT, (n) => n >= 1 && n + 2 * nodes - 1 <= 65535, `the first of ${2 * nodes} ports`);
  const opts: KafkaClusterOptions = { dataDir: config.dataDir, nodes, port, logger };
  if (!argv.includes('--node')) return clusterCli(argv[0], opts);
  return nodeCli(argv[0], numberFlag(argv, '--node', 0, (n) => n >= 1 && n <= nodes, `a node id from 1 to ${nodes}`), opts);
}

/** Runs the command and exits with its code; an error is printed as its message alone. */
export async function main(argv: string[]): Promise<void> {
  await cli(argv).then((code) => process.exit(code), (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
