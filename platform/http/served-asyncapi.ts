// The AsyncAPI document as a deployment serves it (GET /asyncapi.json): its brokers, its topic names and the configuration its topics are kept at.
import type { Config } from '../config/config.ts';
import { LOGICAL_TOPICS, topicConfigs } from '../kafka/topics.ts';

/** What the served document says of the deployment. */
export type AsyncApiDeployment = Pick<Config, 'kafkaPublicBrokers' | 'kafkaTopicPrefix' | 'kafkaTopics' | 'eventRetentionDays'>;

interface Channel {
  address: string;
  parameters?: unknown;
  bindings?: { kafka?: Record<string, unknown> };
}

interface AsyncApiDocument {
  info: { description?: string };
  servers?: Record<string, unknown>;
  channels: Record<string, Channel>;
  components?: { parameters?: Record<string, unknown> };
}

/** A binding's topicConfiguration: Kafka's entries with the binding's types (cleanup.policy a list, durations numbers). */
function bindingConfiguration(entries: Readonly<Record<string, string>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(entries).map(([name, value]) =>
    [name, name === 'cleanup.policy' ? value.split(',') : /^\d+$/.test(value) ? Number(value) : value]));
}

/**
 * The served document: JSON, its references to `./openapi.yaml#…` pointing at `./openapi.json#…`
 * (which resolves against the served URL to GET /openapi.json); its servers this deployment's
 * brokers as readers reach them (KAFKA_PUBLIC_BROKERS), or the file's local broker when the
 * service runs its own; each channel's address the real topic name (the prefix put in, the
 * parameter gone); each Kafka binding the partitions, replicas and configuration the service
 * gives its topics here.
 */
export function servedAsyncApi(document: object, deployment: AsyncApiDeployment): string {
  const served = JSON.parse(JSON.stringify(document, (key, value: unknown) =>
    key === '$ref' && typeof value === 'string' && value.startsWith('./openapi.yaml#') ? `./openapi.json${value.slice('./openapi.yaml'.length)}` : value)) as AsyncApiDocument;
  served.info.description = `This copy describes the deployment that served it: its brokers (\`servers\`), its topics' names `
    + `(the prefix \`${deployment.kafkaTopicPrefix}\` in each channel's address) and their configuration (each channel's Kafka binding).\n\n`
    + (served.info.description ?? '');
  if (deployment.kafkaPublicBrokers) {
    served.servers = Object.fromEntries(deployment.kafkaPublicBrokers.map((host, n) => [`broker-${n + 1}`, {
      host, protocol: 'kafka', description: 'A broker of this deployment (`KAFKA_PUBLIC_BROKERS`): give any of them as a bootstrap address.',
    }]));
  }
  const configs = topicConfigs(deployment);
  const { partitions, replicationFactor } = deployment.kafkaTopics;
  for (const channel of Object.values(served.channels)) {
    const topic = LOGICAL_TOPICS.find((logical) => channel.address.endsWith(logical));
    channel.address = channel.address.replace('{prefix}', deployment.kafkaTopicPrefix);
    delete channel.parameters;
    if (!topic || !channel.bindings?.kafka) continue;
    channel.bindings.kafka = {
      ...channel.bindings.kafka, partitions, ...(replicationFactor > 0 ? { replicas: replicationFactor } : {}),
      topicConfiguration: bindingConfiguration(configs[topic]),
    };
  }
  delete served.components?.parameters;
  return JSON.stringify(served);
}
