// The process's secret box, built from the configured keys: it seals webhook secrets and import headers at rest (docs/design.md, "Secrets at rest").
import type { Config } from '../platform/config/config.ts';
import { createSecretBox, secretKey } from '../platform/crypto/secret-box.ts';
import type { SecretBox } from '../platform/crypto/secret-box.ts';

/** Seals with SECRETS_KEY; opens with it and SECRETS_OLD_KEYS. */
export function secretBoxOf(config: Pick<Config, 'secretsKey'>): SecretBox {
  return createSecretBox({ current: secretKey(config.secretsKey.current), readable: config.secretsKey.old.map(secretKey) });
}
