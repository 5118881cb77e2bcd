// Whether a Kafka cluster answers, and whether it takes writes: throwaway admin clients, one per address, without retries or logs.
import { connect } from 'node:net';
import kafkajs, { Kafka, logLevel } from 'kafkajs';
import type { Admin } from 'kafkajs';
import { silenceKafkajsTimerWarning } from './kafkajs-quirks.ts';

// Not importable by name: Node's ESM view of kafkajs' CommonJS exports stops before them.
const { ConfigResourceTypes } = kafkajs;

/** A broker as the cluster's metadata names it. */
interface BrokerAddress { readonly nodeId: number; readonly host: string; readonly port: number }

/**
 * Runs `ask` on an admin client of the first address that answers a metadata request, with the
 * brokers that answer names; rejects when none does within the timeout. One client per address,
 * side by side: a kafkajs client without retries only ever tries the first address of its list,
 * so a cluster whose first broker is down would look down.
 */
async function askAnyBroker<T>(brokers: readonly string[], timeoutMs: number, ask: (admin: Admin, cluster: readonly BrokerAddress[]) => Promise<T>): Promise<T> {
  silenceKafkajsTimerWarning();
  const admins = brokers.map((broker) => new Kafka({
    clientId: 'catalog-kafka-probe', brokers: [broker], connectionTimeout: timeoutMs, requestTimeout: timeoutMs,
    // A probe fails often while a broker boots or is away; retries and logs would only add noise.
    retry: { retries: 0 }, logLevel: logLevel.NOTHING,
  }).admin());
  try {
    const { admin, cluster } = await Promise.any(admins.map(async (admin) => {
      await admin.connect();
      const { brokers: cluster } = await admin.describeCluster();
      if (cluster.length === 0) throw new Error('no brokers in the cluster');
      return { admin, cluster };
    }));
    return await ask(admin, cluster);
  } finally {
    await Promise.all(admins.map((admin) => admin.disconnect().catch(() => undefined)));
  }
}

/** Whether something accepts a TCP connection at the address within the timeout. */
export function accepts(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const finish = (open: boolean) => { socket.destroy(); done(open); };
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
    socket.once('timeout', () => finish(false));
  });
}

/** True when a broker at any of these addresses answers a real metadata request within the timeout. */
export async function brokersAnswer(brokers: readonly string[], timeoutMs = 3000): Promise<boolean> {
  return askAnyBroker(brokers, timeoutMs, async () => true).catch(() => false);
}

/**
 * True when the cluster answers from any of its addresses and every partition of `topics` has a
 * leader that accepts connections and at least its topic's min.insync.replicas in sync among the
 * brokers that do, so that a send with acks from every in-sync replica (the relay's) can
 * succeed. The brokers are asked themselves, not only the metadata: with a majority of the KRaft
 * controllers away nobody updates it, and it goes on naming dead leaders and replicas. Before the
 * topics exist, an answer is enough: the service creates them before it publishes.
 */
export async function clusterTakesWrites(brokers: readonly string[], topics: readonly string[], timeoutMs = 3000): Promise<boolean> {
  return askAnyBroker(brokers, timeoutMs, async (admin, cluster) => {
    const described = await admin.fetchTopicMetadata({ topics: [...topics] }).then(
      (metadata) => metadata.topics,
      (error: unknown) => {
        if ((error as { type?: unknown }).type === 'UNKNOWN_TOPIC_OR_PARTITION') return [];
        throw error;
      },
    );
    const answering = new Set((await Promise.all(cluster.map(async (broker) => (await accepts(broker.host, broker.port, timeoutMs)) ? [broker.nodeId] : []))).flat());
    const live = (nodes: readonly number[]) => nodes.filter((node) => answering.has(node)).length;
    if (described.some((topic) => topic.partitions.some((p) => !answering.has(p.leader)))) return false;
    // Only a partition short of replicas in sync needs its topic's minimum: the usual answer costs one request less.
    const shrunk = described.filter((topic) => topic.partitions.some((p) => live(p.isr) < p.replicas.length));
    if (shrunk.length === 0) return true;
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: shrunk.map((topic) => ({ type: ConfigResourceTypes.TOPIC, name: topic.name, configNames: ['min.insync.replicas'] })),
    });
    const minimum = new Map(resources.map((r) => [r.resourceName, Number(r.configEntries.find((e) => e.configName === 'min.insync.replicas')?.configValue ?? 1)]));
    return shrunk.every((topic) => topic.partitions.every((p) => live(p.isr) >= (minimum.get(topic.name) ?? 1)));
  }).catch(() => false);
}
