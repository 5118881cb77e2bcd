// How items, categories and brands are told apart within a catalog: identity keys and name keys.

/** An item's identity within its catalog: its external system and external id. */
export const identityKey = (externalSystem: string, externalId: string) => `${externalSystem}\u0000${externalId}`;

/** Categories and brands match per catalog on the trimmed name, case-insensitively (docs/rest-api.md, "Payload rules"). */
export const nameKey = (name: string) => name.toLowerCase();

/** The identity a key was made of: an external system never holds the NUL character, so the first one splits. */
export function identityOf(key: string): { externalSystem: string; externalId: string } {
  const at = key.indexOf('\u0000');
  return { externalSystem: key.slice(0, at), externalId: key.slice(at + 1) };
}
