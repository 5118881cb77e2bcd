// An import line's fingerprint: the SHA-256 of its exact bytes, under the version of the rules that make an item of it.
import { hash } from 'node:crypto';

/**
 * The rules that turn a line into a stored item: validation, normalization and the content hash
 * (domain/items/payload.ts, content-hash.ts). A release that changes what any line becomes bumps
 * this, so no line matches a fingerprint left under the old rules: each goes through the full
 * path once and leaves a new fingerprint.
 */
const RULES_VERSION = Buffer.from('catalog item rules 1\n');

/** Hex SHA-256 of the rules version and the line's bytes (without LF, trailing CR or BOM). */
export function lineFingerprint(bytes: Buffer): string {
  // The one-shot form: a Hash object per line costs noticeably more.
  return hash('sha256', Buffer.concat([RULES_VERSION, bytes]), 'hex');
}
