// The tests' broker from @testcontainers/kafka (TEST_KAFKA=testcontainers): started, answering, stopped and started again on the same address.
import { KafkaContainer } from '@testcontainers/kafka';
import { getContainerRuntimeClient } from 'testcontainers';
import { Kafka, logLevel } from 'kafkajs';
import { silenceKafkajsTimerWarning } from '../../platform/kafka/kafkajs-quirks.ts';

// Confluent's image by default, as Testcontainers users expect; `npm run test:containers` names the
// one it built from Maven Central's jars (tagged 8.x: Testcontainers runs KRaft for 8 and later).
const image = (): string => process.env.TEST_KAFKA_IMAGE ?? 'confluentinc/cp-kafka:8.0.0';
// KafkaContainer's listener for clients outside the container network.
const CLIENT_PORT = 9093;

export interface BrokerContainer {
  readonly brokers: string[];
  /** Stops the container, keeping it (and its address) for `restart`. */
  stop(): Promise<void>;
  restart(): Promise<void>;
  remove(): Promise<void>;
}

/** Waits until the broker answers a metadata request, within the client's own retries. */
async function answering(brokers: string[]): Promise<void> {
  silenceKafkajsTimerWarning();
  const admin = new Kafka({ clientId: 'test-container-check', brokers, logLevel: logLevel.NOTHING, retry: { retries: 20, maxRetryTime: 2000 } }).admin();
  await admin.connect();
  try {
    await admin.describeCluster();
  } finally {
    await admin.disconnect();
  }
}

/** KafkaContainer with its client port published on a given host port, in place of one Docker picks. */
class PinnedKafkaContainer extends KafkaContainer {
  private readonly hostPort: number;

  constructor(imageName: string, hostPort: number) {
    super(imageName);
    this.hostPort = hostPort;
  }

  // KafkaContainer exposes its client port again just before creating the container, which would
  // put back a port of Docker's choosing: the pin goes on after it.
  protected override async beforeContainerCreated(): Promise<void> {
    await super.beforeContainerCreated();
    this.withExposedPorts({ container: CLIENT_PORT, host: this.hostPort });
  }
}

/**
 * A broker in a container of its own. With `hostPort` its client port is published on that host
 * port, so a stop and restart keep its address (what a test of an outage needs); else Docker picks.
 */
export async function startBrokerContainer(hostPort?: number): Promise<BrokerContainer> {
  const container = await (hostPort === undefined ? new KafkaContainer(image()) : new PinnedKafkaContainer(image(), hostPort)).start();
  const brokers = [`${container.getHost()}:${container.getMappedPort(CLIENT_PORT)}`];
  await answering(brokers);
  const runtime = await getContainerRuntimeClient();
  const handle = runtime.container.getById(container.getId());
  return {
    brokers,
    stop: () => runtime.container.stop(handle, { timeout: 10_000 }),
    async restart() {
      await runtime.container.start(handle);
      await answering(brokers);
    },
    // Whether it runs or was stopped (Testcontainers takes an already stopped container as stopped).
    async remove() {
      await container.stop({ remove: true, removeVolumes: true });
    },
  };
}
