// The shapes a handler sees and returns: the door between HTTP and the domain.
import type { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../actor.ts';
import type { Orm } from '../db/orm.ts';
import type { ReadReplica } from '../db/read-replica.ts';
import type { Config } from '../config/config.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { Logger } from '../log/logger.ts';
import type { ObjectStorage } from '../storage/storage.ts';
import type { Contract } from './contract.ts';
import type { Metrics } from '../metrics.ts';
import type { RateLimitState } from './rate-limit.ts';
import type { Readiness } from './ops.ts';

export type Scope = 'catalog:read' | 'catalog:write' | 'bulk_import:manage' | 'webhooks:manage' | 'stock:write' | 'keys:manage' | 'audit:read';

export interface Auth {
  keyId: string;
  /** An API key, or a session a console link was redeemed for. */
  kind: 'key' | 'console';
  catalogId: string;
  scopes: readonly string[];
  tier: string;
}

/** A known key, counted, with the address ranges it is fenced to (`null`: any); or one past its expiry, not counted. */
export type KeyLookup =
  | { auth: Auth; rateLimit: RateLimitState; allowedCidrs: readonly string[] | null }
  | { expiredAt: string };

export interface Services {
  config: Config;
  logger: Logger;
  orm: Orm;
  /** The replica the contract's lag-tolerant reads go to while it is well (api-invoke.ts); undefined without DATABASE_READ_URL. */
  readReplica?: ReadReplica | undefined;
  /** Import files and media: the one storage client of the process. */
  storage: ObjectStorage;
  /** Seals what is kept secret at rest (webhook secrets, import source headers) and opens it where it is used. */
  secrets: SecretBox;
  contract: Contract;
  metrics: Metrics;
  /** Looks an API key up and counts one request against its budget; undefined when unknown or revoked. */
  countKey: (token: string) => Promise<KeyLookup | undefined>;
  /** Whether the Kafka cluster answers; used by /readyz. */
  kafkaReachable: () => Promise<boolean>;
  /** The dependency checks /readyz answers with, cached for a second (ops.ts). */
  readiness: () => Promise<Readiness>;
}

/** What the pipeline knows of a request before a handler's operation types it (operation-types.ts). */
export interface UntypedRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

export interface HandlerContext<Request extends { params: unknown; query: unknown; body: unknown } = UntypedRequest> {
  operationId: string;
  requestId: string;
  /** Present on every operation that requires a key; the catalog always comes from the key. */
  auth: Auth;
  /** Who makes the request, as the audit log records it: the credential, the request id, the client's address. */
  actor: Actor;
  params: Request['params'];
  query: Request['query'];
  headers: Record<string, string | string[] | undefined>;
  body: Request['body'];
  services: Services;
  logger: Logger;
  /**
   * A request-scoped entity manager, made on first use. With an Idempotency-Key it is already
   * inside the transaction that records the key: domain code must do its writes through it.
   */
  em: EntityManager;
}

/** `data` is wrapped in the success envelope; `raw` and `stream` are sent as they are. */
export type HandlerResult =
  | { status: number; data: unknown; headers?: Record<string, string> }
  | { status: number; raw: string | Buffer; contentType: string; headers?: Record<string, string> }
  | { status: number; stream: Readable; contentType: string; headers?: Record<string, string> };

/** A handler as the pipeline calls it, its operation's types erased (handlers/handler.ts binds them). */
export type ServedHandler = (context: HandlerContext) => Promise<HandlerResult>;
