// Who makes a change, as the audit log records it (domain/audit/audit-log.ts): a credential through the API, the operator's CLI, or the service itself.
import { hostname, userInfo } from 'node:os';
import { newId } from './ids.ts';

export interface Actor {
  /** `key` and `console`: a credential of the API; `cli`: the operator's command line; `service`: the service on its own. */
  readonly kind: 'key' | 'console' | 'cli' | 'service';
  readonly keyId: string | null;
  /** The CLI's `user@host`. */
  readonly operator: string | null;
  readonly requestId: string | null;
  readonly clientAddress: string | null;
}

/** What the service does by itself (a webhook disabled after its failures). */
export const SERVICE_ACTOR: Actor = { kind: 'service', keyId: null, operator: null, requestId: null, clientAddress: null };

/** The operator running this CLI command: one request id for everything the command changes. */
export function cliActor(): Actor {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    // A container's uid without a passwd entry has no name.
    user = String(process.getuid?.() ?? 'unknown');
  }
  return { kind: 'cli', keyId: null, operator: `${user}@${hostname()}`, requestId: newId(), clientAddress: null };
}
