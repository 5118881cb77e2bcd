// One GET or HEAD behind the network guard, its body left unread: the caller sees status and headers first, then streams or drops the body.
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { assertHostAllowed, guardedLookup } from './network-guard.ts';

export interface GuardedGetOptions {
  readonly method?: 'GET' | 'HEAD';
  readonly headers?: Readonly<Record<string, string>>;
  /** OUTBOUND_ALLOW_PRIVATE: the guard is off. */
  readonly allowPrivate: boolean;
  /** Until the answer's headers; the caller bounds the body's time itself. */
  readonly timeoutMs: number;
}

/**
 * The answer's status, headers and unread body (destroy it when not reading). No redirect is
 * followed: the caller re-checks each hop. Refused addresses (checked at connect time, so also
 * on a name that resolves to one) reject with RefusedAddressError in the cause chain.
 */
export function guardedGet(url: URL, options: GuardedGetOptions): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return reject(new Error(`unsupported protocol ${url.protocol}`));
    try {
      assertHostAllowed(url.hostname, options.allowPrivate);
    } catch (error) {
      return reject(error);
    }
    const request = (url.protocol === 'https:' ? https : http).request(url, {
      method: options.method ?? 'GET', headers: options.headers ?? {}, lookup: guardedLookup(options.allowPrivate), agent: false,
    }, (response) => {
      clearTimeout(timer);
      resolve(response);
    });
    const timer = setTimeout(() => request.destroy(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' })), options.timeoutMs);
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.end();
  });
}
