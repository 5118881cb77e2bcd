// Media source URL normalization and sourceUrlHash (spec "Media source", docs/media.md, "Lifecycle").
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { normalizeMediaUrl, sourceUrlHash } from '../../domain/media/source-url.ts';

const cases: Array<[string, string, string]> = [
  ['lower-cases scheme and host, keeps path case', 'HTTPS://CDN.Example.COM/Img/A.JPG', 'https://cdn.example.com/Img/A.JPG'],
  ['drops the https default port', 'https://cdn.example.com:443/a.jpg', 'https://cdn.example.com/a.jpg'],
  ['drops the http default port', 'http://cdn.example.com:80/a.jpg', 'http://cdn.example.com/a.jpg'],
  ['keeps another port', 'https://cdn.example.com:8443/a.jpg', 'https://cdn.example.com:8443/a.jpg'],
  ['keeps port 80 on https', 'https://cdn.example.com:80/a.jpg', 'https://cdn.example.com:80/a.jpg'],
  ['drops the fragment', 'https://cdn.example.com/a.jpg#zoom', 'https://cdn.example.com/a.jpg'],
  ['drops a bare #', 'https://cdn.example.com/a.jpg#', 'https://cdn.example.com/a.jpg'],
  ['drops a bare ?', 'https://cdn.example.com/a.jpg?', 'https://cdn.example.com/a.jpg'],
  ['sorts query parameters', 'https://x.example/a.jpg?b=2&a=1', 'https://x.example/a.jpg?a=1&b=2'],
  ['keeps repeated parameters, by name then value', 'https://x.example/a?t=2&s=1&t=1', 'https://x.example/a?s=1&t=1&t=2'],
  ['removes utm_*, fbclid, gclid', 'https://x.example/a?utm_source=n&w=800&fbclid=x&gclid=y&utm_medium=e', 'https://x.example/a?w=800'],
  ['tracking names are matched case-insensitively', 'https://x.example/a?UTM_Source=n&FBCLID=x&GClid=y&w=1', 'https://x.example/a?w=1'],
  ['a similar name is not tracking', 'https://x.example/a?utm=1&xutm_a=2', 'https://x.example/a?utm=1&xutm_a=2'],
  ['no trailing ? when only tracking parameters were there', 'https://x.example/a.jpg?utm_source=n#f', 'https://x.example/a.jpg'],
  ['adds the root path', 'https://x.example', 'https://x.example/'],
  ['trims surrounding whitespace', '  https://x.example/a.jpg \n', 'https://x.example/a.jpg'],
  ['query encoding is made canonical', 'https://x.example/a?q=a%20b&r=%7e', 'https://x.example/a?q=a+b&r=%7E'],
  ['path percent-encoding is kept as given', 'https://x.example/a%2fb/c%C3%A9.jpg', 'https://x.example/a%2fb/c%C3%A9.jpg'],
  ['dot segments are resolved by the URL parser', 'https://x.example/a/../b/./c.jpg', 'https://x.example/b/c.jpg'],
];

for (const [name, input, expected] of cases) {
  test(`normalizeMediaUrl ${name}`, () => assert.equal(normalizeMediaUrl(input), expected));
}

test('?a=1&b=2 and ?b=2&a=1 have the same sourceUrlHash', () => {
  assert.equal(sourceUrlHash('https://x.example/i.jpg?a=1&b=2'), sourceUrlHash('https://x.example/i.jpg?b=2&a=1'));
  assert.notEqual(sourceUrlHash('https://x.example/i.jpg?a=1'), sourceUrlHash('https://x.example/i.jpg?a=2'));
});

test('sourceUrlHash is the lower-case hex SHA-256 of the normalized URL', () => {
  const expected = createHash('sha256').update('https://x.example/i.jpg?a=1').digest('hex');
  assert.equal(sourceUrlHash('HTTPS://X.example:443/i.jpg?utm_campaign=z&a=1#top'), expected);
  assert.match(expected, /^[0-9a-f]{64}$/);
});

test('a URL that is not absolute http(s) is refused', () => {
  for (const bad of ['ftp://x.example/a.jpg', '/relative.jpg', 'not a url', 'data:image/png;base64,AAAA', 'https://']) {
    assert.throws(() => normalizeMediaUrl(bad), TypeError, bad);
  }
});
