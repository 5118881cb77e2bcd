// The operator's URL rules for webhook targets, read from the configuration.
import type { TargetRules } from '../../domain/webhooks/target-url.ts';
import type { Config } from '../../platform/config/config.ts';

export const targetRules = (config: Config): TargetRules => ({
  allowHttp: config.webhookAllowHttp,
  allowPrivate: config.outboundAllowPrivate,
});

/** `limit` as validated by the contract (1–200), 50 when absent. */
export const pageLimit = (query: Record<string, unknown>): number => (query.limit === undefined ? 50 : Number(query.limit));

export const optionalString = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
