/**
 * Contract §6: the pure signing code shared by the origin, the edges and the SDK.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  EXPIRES_PARAM, SIG_PARAM, canonicalQuery, constantTimeEqual, deliveryPath, parseQuery, rfc3986, signPath, signPathAsync, stringToSign, verifyLink,
} from '../../src/core/signing.js';
import { nodeHmac } from '../../src/core/hmac-node.js';
import { bytesToBase64Url } from '../../src/core/ids.js';

/** The contract's formula, written out here without the code under test. */
function contractSignature(secret: string, path: string, canonical: string): string {
  return createHmac('sha256', secret).update(`${path}\n${canonical}`, 'utf8').digest('base64url');
}

describe('rfc3986', () => {
  it('keeps unreserved characters and escapes everything else, upper-case hex', () => {
    expect(rfc3986('AZaz09-._~')).toBe('AZaz09-._~');
    expect(rfc3986('a b')).toBe('a%20b');
    expect(rfc3986("!'()*")).toBe('%21%27%28%29%2A');
    expect(rfc3986('+/?#&=%')).toBe('%2B%2F%3F%23%26%3D%25');
    expect(rfc3986('é')).toBe('%C3%A9');
    expect(rfc3986('😀')).toBe('%F0%9F%98%80');
  });
});

describe('canonicalQuery', () => {
  it('sorts X-Expires before download (byte order, upper case first)', () => {
    expect(canonicalQuery([['download', '1'], ['X-Expires', '1700000000']])).toBe('X-Expires=1700000000&download=1');
    expect(canonicalQuery([['X-Expires', '1700000000'], ['download', '1']])).toBe('X-Expires=1700000000&download=1');
  });

  it('leaves out X-Sig and encodes names and values per RFC 3986', () => {
    expect(canonicalQuery([[SIG_PARAM, 'abc'], ['a b', "c!'()*d"], [EXPIRES_PARAM, '5']])).toBe("X-Expires=5&a%20b=c%21%27%28%29%2Ad");
    expect(canonicalQuery([['q', 'x+y z']])).toBe('q=x%2By%20z');
    expect(canonicalQuery([])).toBe('');
  });

  it('sorts by the encoded text, not the decoded one', () => {
    // "é" is above "A" decoded, but its encoding "%C3%A9" starts with "%" (0x25), below "A" (0x41).
    expect(canonicalQuery([['A', '1'], ['é', '2']])).toBe('%C3%A9=2&A=1');
    // Equal names order by the whole text, values included.
    expect(canonicalQuery([['a', '2'], ['a', '10'], ['a', '1']])).toBe('a=1&a=10&a=2');
    // "a=" sorts after "a-" and before "ab" in byte order.
    expect(canonicalQuery([['ab', '1'], ['a', '1'], ['a-', '1']])).toBe('a-=1&a=1&ab=1');
  });
});

describe('base64url', () => {
  it('uses the URL-safe alphabet without padding', () => {
    expect(bytesToBase64Url(new Uint8Array([0xfb, 0xff]))).toBe('-_8');
    expect(bytesToBase64Url(new Uint8Array([0xff]))).toBe('_w');
    expect(bytesToBase64Url(new Uint8Array([1, 2, 3]))).toBe('AQID');
    expect(bytesToBase64Url(new Uint8Array([]))).toBe('');
    for (let n = 0; n < 40; n++) {
      const bytes = new Uint8Array(Array.from({ length: n }, (_, i) => (i * 37 + 250) & 0xff));
      expect(bytesToBase64Url(bytes)).toBe(Buffer.from(bytes).toString('base64url'));
    }
  });
});

describe('signPath', () => {
  const secret = 'test-vector-secret';
  const path = '/files/AbC-_123xyz';

  it('matches a fixed test vector computed from the contract formula', () => {
    const canonical = 'X-Expires=1700000000&X-Issued=1699996400000&download=1';
    const expected = contractSignature(secret, path, canonical);
    expect(expected).toHaveLength(43);
    expect(expected).toMatch(/^[A-Za-z0-9_-]+$/);
    const signed = signPath(path, secret, { expiresIn: 3600, now: 1_699_996_400, params: { download: '1' } }, nodeHmac);
    expect(signed.expires).toBe(1_700_000_000);
    expect(signed.pathAndQuery).toBe(`${path}?${canonical}&X-Sig=${expected}`);
    expect(stringToSign(path, [['download', '1'], ['X-Issued', '1699996400000'], ['X-Expires', '1700000000']])).toBe(`${path}\n${canonical}`);
  });

  it('pins literal signatures (also computed with openssl dgst -sha256 -hmac)', () => {
    expect(contractSignature('secret', '/files/abc', 'X-Expires=1')).toBe('YgasbBYdWUulCM1iEZRR0w7MSygKUkUnT68hybVZi1o');
    const signed = signPath('/files/abc', 'secret', { expiresIn: 1, now: 0 }, nodeHmac);
    // printf '/files/abc\nX-Expires=1&X-Issued=0' | openssl dgst -sha256 -hmac secret -binary | base64url
    expect(signed.pathAndQuery).toBe('/files/abc?X-Expires=1&X-Issued=0&X-Sig=UsPqG2TRgMYDWsqQ3ld9iZeC1vN1s_W0PpglPwXyiJs');
    const withDownload = signPath(path, secret, { expiresIn: 1, now: 1_699_999_999, params: { download: '1' } }, nodeHmac);
    const canonical = 'X-Expires=1700000000&X-Issued=1699999999000&download=1';
    expect(withDownload.pathAndQuery).toBe(`${path}?${canonical}&X-Sig=${contractSignature(secret, path, canonical)}`);
  });

  it('signs extra parameters along, encoded in the URL as they are signed', () => {
    const signed = signPath(path, secret, { expiresIn: 10, now: 100, params: { 'response name': "a b!'" } }, nodeHmac);
    const canonical = "X-Expires=110&X-Issued=100000&response%20name=a%20b%21%27";
    expect(signed.pathAndQuery).toBe(`${path}?${canonical}&X-Sig=${contractSignature(secret, path, canonical)}`);
    const query = signed.pathAndQuery.split('?')[1]!;
    expect(verifyLink(path, query, [secret], 100, nodeHmac)).toEqual({ kind: 'valid', expires: 110, download: false, issuedMs: 100_000 });
  });

  it('the async variant signs the same', async () => {
    const asyncHmac = async (s: string, m: string) => nodeHmac(s, m);
    const a = await signPathAsync(path, secret, { expiresIn: 60, now: 1000, params: { download: '1' } }, asyncHmac);
    const b = signPath(path, secret, { expiresIn: 60, now: 1000, params: { download: '1' } }, nodeHmac);
    expect(a).toEqual(b);
  });

  it('uses the current time by default', () => {
    const before = Math.floor(Date.now() / 1000);
    const signed = signPath(path, secret, { expiresIn: 3600 }, nodeHmac);
    expect(signed.expires).toBeGreaterThanOrEqual(before + 3600);
    expect(signed.expires).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600);
  });
});

describe('verifyLink', () => {
  const secret = 's3cret';
  const path = deliveryPath('file1');
  const query = (expires: number, extra = '') => {
    const canonical = `X-Expires=${expires}${extra}`;
    return `${canonical}&X-Sig=${contractSignature(secret, path, canonical)}`;
  };

  it('accepts a link made by the formula alone and reports download=1', () => {
    // Without X-Issued (links from before it): counted as issued a day before expiry.
    const dayBefore = (2000 - 86_400) * 1000;
    expect(verifyLink(path, query(2000), [secret], 1000, nodeHmac)).toEqual({ kind: 'valid', expires: 2000, download: false, issuedMs: dayBefore });
    expect(verifyLink(path, query(2000, '&download=1'), [secret], 1000, nodeHmac)).toEqual({ kind: 'valid', expires: 2000, download: true, issuedMs: dayBefore });
    expect(verifyLink(path, query(2000, '&X-Issued=1000000'), [secret], 1000, nodeHmac)).toEqual({ kind: 'valid', expires: 2000, download: false, issuedMs: 1_000_000 });
    // X-Issued twice, or not a number: refused like any tampering.
    expect(verifyLink(path, query(2000, '&X-Issued=1&X-Issued=2'), [secret], 1000, nodeHmac).kind).toBe('invalid');
    expect(verifyLink(path, query(2000, '&X-Issued=soon'), [secret], 1000, nodeHmac).kind).toBe('invalid');
  });

  it('answers unsigned without X-Sig and X-Expires', () => {
    expect(verifyLink(path, '', [secret], 0, nodeHmac)).toEqual({ kind: 'unsigned', download: false });
    expect(verifyLink(path, 'download=1', [secret], 0, nodeHmac)).toEqual({ kind: 'unsigned', download: true });
  });

  it('refuses a malformed or partial signature', () => {
    const sig = contractSignature(secret, path, 'X-Expires=2000');
    for (const q of [
      'X-Expires=2000', `X-Sig=${sig}`, `X-Expires=2000&X-Sig=${sig}=`, `X-Expires=2000&X-Sig=${sig.slice(1)}`,
      `X-Expires=abc&X-Sig=${sig}`, `X-Expires=-5&X-Sig=${sig}`, `X-Expires=2000&X-Expires=2000&X-Sig=${sig}`,
      `X-Expires=2000&X-Sig=${sig.replace(/[A-Za-z0-9]/, (c) => (c === 'a' ? 'b' : 'a'))}`, 'X-Expires=2000&X-Sig=%E0%A4%A', `X-Expires=2000&X-Sig=${'+'.repeat(43)}`,
    ]) {
      expect(verifyLink(path, q, [secret], 1000, nodeHmac).kind, q).toBe('invalid');
    }
  });

  it('is expired only when now is greater than X-Expires, and a bad signature is invalid first', () => {
    expect(verifyLink(path, query(2000), [secret], 2000, nodeHmac).kind).toBe('valid');
    expect(verifyLink(path, query(2000), [secret], 2001, nodeHmac)).toEqual({ kind: 'expired', expires: 2000 });
    expect(verifyLink('/files/file2', query(2000), [secret], 2001, nodeHmac).kind).toBe('invalid');
  });

  it('tries every secret', () => {
    expect(verifyLink(path, query(2000), ['other', secret], 1000, nodeHmac).kind).toBe('valid');
    expect(verifyLink(path, query(2000), [secret, 'other'], 1000, nodeHmac).kind).toBe('valid');
    expect(verifyLink(path, query(2000), ['other'], 1000, nodeHmac).kind).toBe('invalid');
    expect(verifyLink(path, query(2000), [], 1000, nodeHmac).kind).toBe('invalid');
  });

  it('verifies parameters encoded per RFC 3986 in the URL', () => {
    const canonical = 'X-Expires=2000&note=a%20b%21';
    const sig = contractSignature(secret, path, canonical);
    expect(verifyLink(path, `note=a%20b%21&X-Expires=2000&X-Sig=${sig}`, [secret], 1000, nodeHmac).kind).toBe('valid');
    expect(verifyLink(path, `note=a%20c%21&X-Expires=2000&X-Sig=${sig}`, [secret], 1000, nodeHmac).kind).toBe('invalid');
  });
});

describe('parseQuery and deliveryPath', () => {
  it('decodes pairs and refuses undecodable text', () => {
    expect(parseQuery('')).toEqual([]);
    expect(parseQuery('a=1&b=x%20y&c&d=')).toEqual([['a', '1'], ['b', 'x y'], ['c', ''], ['d', '']]);
    expect(parseQuery('a=%ZZ')).toBeNull();
  });

  it('the delivery path depends on the id alone', () => {
    expect(deliveryPath('AbC-_9')).toBe('/files/AbC-_9');
  });
});

describe('constantTimeEqual', () => {
  it('compares bytes', () => {
    const a = new Uint8Array([1, 2, 3, 4]);
    expect(constantTimeEqual(a, new Uint8Array([1, 2, 3, 4]))).toBe(true);
    expect(constantTimeEqual(a, new Uint8Array([1, 2, 3, 5]))).toBe(false);
    expect(constantTimeEqual(a, new Uint8Array([0, 2, 3, 4]))).toBe(false);
    expect(constantTimeEqual(a, new Uint8Array([1, 2, 3]))).toBe(false);
    expect(constantTimeEqual(a, new Uint8Array([1, 2, 3, 4, 5]))).toBe(false);
    expect(constantTimeEqual(new Uint8Array([]), new Uint8Array([]))).toBe(true);
    const x = nodeHmac('k', 'm');
    expect(constantTimeEqual(x, createHmac('sha256', 'k').update('m').digest())).toBe(true);
    expect(constantTimeEqual(x, nodeHmac('k', 'n'))).toBe(false);
  });
});
