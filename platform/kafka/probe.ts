// Whether a Kafka cluster answers: one metadata request from a throwaway admin client, without retries or logs.
import { Kafka, logLevel } from 'kafkajs';
import { silenceKafkajsTimerWarning } from './kafkajs-quirks.ts';

/** True when a broker on these addresses answers a real metadata request within the timeout. */
export async function brokersAnswer(brokers: readonly string[], timeoutMs = 3000): Promise<boolean> {
  silenceKafkajsTimerWarning();
  // A probe fails often while a broker boots or is away; retries and logs would only add noise.
  const kafka = new Kafka({ clientId: 'catalog-kafka-probe', brokers: [...brokers], connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs, retry: { retries: 0 }, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
