// The rules a webhook's address must meet when it is saved; the same guard runs again at every connect.
import { isIP } from 'node:net';
import { guardedLookup, isRefusedAddress } from '../../platform/outbound/network-guard.ts';
import { validationError } from '../../platform/errors.ts';

export interface TargetRules {
  readonly allowHttp: boolean;
  readonly allowPrivate: boolean;
}

// A save must not hang on a slow resolver; the connect-time guard still protects delivery.
const LOOKUP_TIMEOUT_MS = 2000;
// Each refusal names the setting that lifts it, so a developer with a local receiver knows where to look.
const REFUSED = 'must not point to a private, loopback, link-local or metadata address'
  + ' (the operator may allow it for development with OUTBOUND_ALLOW_PRIVATE=true)';
const HTTPS_ONLY = 'must use https (the operator may allow http for development with WEBHOOK_ALLOW_HTTP=true)';

function resolves(hostname: string, allowPrivate: boolean): Promise<'ok' | 'refused' | 'unknown'> {
  return new Promise((done) => {
    const timer = setTimeout(() => done('unknown'), LOOKUP_TIMEOUT_MS);
    guardedLookup(allowPrivate)(hostname, { all: true }, (error) => {
      clearTimeout(timer);
      if (!error) return done('ok');
      done((error as { code?: string }).code === 'EREFUSEDADDRESS' ? 'refused' : 'unknown');
    });
  });
}

/**
 * Returns the address to store, or throws a 400 on `url`: https only (http where the operator
 * allows it), no credentials, and no host that is, or resolves to, a refused address. A name
 * that does not resolve yet is accepted; its deliveries fail until it does.
 */
export async function checkTargetUrl(raw: string, rules: TargetRules, path = 'url'): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw validationError([{ path, message: 'must be an absolute URL' }]);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && rules.allowHttp)) {
    throw validationError([{ path, message: rules.allowHttp ? 'must use http or https' : HTTPS_ONLY }]);
  }
  if (url.username !== '' || url.password !== '') {
    throw validationError([{ path, message: 'must not contain credentials; authenticate deliveries by their signature' }]);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === '') throw validationError([{ path, message: 'must name a host' }]);
  if (!rules.allowPrivate) {
    if (isIP(host) !== 0 ? isRefusedAddress(host) : (await resolves(host, false)) === 'refused') {
      throw validationError([{ path, message: REFUSED }]);
    }
  }
  url.hash = '';
  return url.toString();
}
