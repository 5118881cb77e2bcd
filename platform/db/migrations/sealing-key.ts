// The key a migration that seals stored values needs: given, or a refusal naming the migration and what it must seal.
import type { SecretBox } from '../../crypto/secret-box.ts';

/**
 * `key(count)` for a migration's class, made in the closure that holds the box (MikroORM makes the
 * instance itself): the box, or, when none was given and `count` values need it, an error saying how to apply it.
 */
export function sealingKey(secrets: SecretBox | undefined, migration: string, what: (count: number) => string): (count: number) => SecretBox {
  return (count) => {
    if (secrets) return secrets;
    throw new Error(`migration ${migration} must seal or open ${what(count)}, and needs the secrets key `
      + 'for it: apply it with `catalog migrate` or by starting the service, with SECRETS_KEY set as the service has it');
  };
}
