// The operator's URL rules for webhook targets, read from the configuration.
import type { TargetRules } from '../../domain/webhooks/target-url.ts';
import type { Config } from '../../platform/config/config.ts';

export const targetRules = (config: Config): TargetRules => ({
  allowHttp: config.webhookAllowHttp,
  allowPrivate: config.outboundAllowPrivate,
});
