// The pino logger, configured once; credentials are redacted wherever they appear.
import { pino } from 'pino';
import type { DestinationStream, Logger } from 'pino';

export type { Logger };

/**
 * `destination` 2 sends logs to stderr, for commands whose stdout is their output; a stream
 * receives each line (a test that reads what the service logged).
 */
export function createLogger(level: string, destination: 1 | 2 | DestinationStream = 1): Logger {
  return pino({
    level,
    base: { service: 'catalog' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        'authorization',
        'apiKey',
        'secret',
        'previousSecret',
        'signingSecret',
        'secretsKey',
        '*.secret',
        '*.previousSecret',
        '*.apiKey',
        'config.signingSecret',
        // The keys that open what is sealed at rest (platform/config/secrets-key.ts).
        'config.secretsKey',
        'config.databaseUrl',
        'config.databaseRead.url',
      ],
      censor: '[redacted]',
    },
  }, typeof destination === 'number' ? pino.destination({ fd: destination, sync: destination === 2 }) : destination);
}
