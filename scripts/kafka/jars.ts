// Collects the pinned Apache Kafka broker jars from Maven Central into .cache/kafka/<version>/libs, once.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../platform/log/logger.ts';
import { ensureMavenJars } from '../maven-jars.ts';

// Newest 4.x whose dependency tree resolves on Maven Central: kafka_2.13 4.4.0 is published but its
// kafka-tools-api 4.4.0 is not, so Maven cannot collect it. kafkajs 2.2.4 was verified against 4.3.1
// (produce, group consume with offset commit, admin topic creation, metadata): no need for 3.9.x.
export const KAFKA_VERSION = '4.3.1';
// log4j-slf4j-impl must match the log4j-core that kafka_2.13 4.3.1 pulls in.
const LOG4J_VERSION = '2.25.4';
const HERE = dirname(fileURLToPath(import.meta.url));

/** The broker jars, collected by Maven once into .cache/kafka/<version>/libs. */
export function ensureJars(logger?: Logger): string {
  return ensureMavenJars({
    name: 'kafka',
    version: KAFKA_VERSION,
    pom: join(HERE, 'pom.xml'),
    properties: { 'kafka.version': KAFKA_VERSION, 'log4j.version': LOG4J_VERSION },
    mainJar: `kafka_2.13-${KAFKA_VERSION}.jar`,
    ...(logger ? { logger } : {}),
  });
}
