// A webhook address refused for its scheme or its host names the setting that allows it in development.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkTargetUrl } from '../../domain/webhooks/target-url.ts';
import { ProductError } from '../../platform/errors.ts';

const strict = { allowHttp: false, allowPrivate: false };

async function refusal(url: string, rules = strict): Promise<string> {
  const error = await checkTargetUrl(url, rules).then(() => undefined, (caught: unknown) => caught);
  assert.ok(error instanceof ProductError, `${url} is refused`);
  assert.equal(error.code, 'validation_error');
  assert.equal(error.details?.[0]?.path, 'url');
  return error.details![0]!.message;
}

test('plain http is refused naming WEBHOOK_ALLOW_HTTP, and accepted with it', async () => {
  assert.match(await refusal('http://93.184.215.14/hook'), /must use https .*WEBHOOK_ALLOW_HTTP=true/);
  assert.equal(await checkTargetUrl('http://93.184.215.14/hook', { ...strict, allowHttp: true }), 'http://93.184.215.14/hook');
});

test('a private or loopback address is refused naming OUTBOUND_ALLOW_PRIVATE, and accepted with it', async () => {
  for (const url of ['https://127.0.0.1:4000/hook', 'https://10.1.2.3/hook', 'https://[::1]/hook']) {
    assert.match(await refusal(url), /private, loopback.*OUTBOUND_ALLOW_PRIVATE=true/, url);
  }
  const local = { allowHttp: true, allowPrivate: true };
  assert.equal(await checkTargetUrl('http://127.0.0.1:4000/hook#x', local), 'http://127.0.0.1:4000/hook');
});
