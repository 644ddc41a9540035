/** The edge's link and content rules, on the code every edge runs. */
import { describe, expect, test } from 'vitest';
import { LinkChecker, decide, isInlineSafe, sendableType } from '../../src/edge/delivery.js';
import { LINK_CLOCK_SKEW_SECONDS, MAX_EXPIRY_SECONDS, signPath, verifyLink, stringToSign, parseQuery } from '../../src/core/signing.js';
import { nodeHmac } from '../../src/core/hmac-node.js';
import { bytesToBase64Url } from '../../src/core/ids.js';
import type { EdgeFile } from '../../src/edge/state.js';
import { variantReader } from '../../src/edge/variants/serve.js';

const secret = 'test-secret';
const path = '/files/abc123';
const now = 1_800_000_000;

/** A link signed with the secret but with any expiry, as an attacker holding an old link cannot make, or a buggy signer might. */
function forge(expires: number): string {
  const pairs: Array<[string, string]> = [['X-Expires', String(expires)]];
  const sig = bytesToBase64Url(nodeHmac(secret, stringToSign(path, pairs)));
  return `X-Expires=${expires}&X-Sig=${sig}`;
}

describe('link lifetime', () => {
  test('a link expiring more than a day (plus the clock skew) ahead is refused, however well signed', () => {
    expect(verifyLink(path, forge(now + 3600), [secret], now, nodeHmac).kind).toBe('valid');
    expect(verifyLink(path, forge(now + MAX_EXPIRY_SECONDS + LINK_CLOCK_SKEW_SECONDS), [secret], now, nodeHmac).kind).toBe('valid');
    expect(verifyLink(path, forge(now + MAX_EXPIRY_SECONDS + LINK_CLOCK_SKEW_SECONDS + 1), [secret], now, nodeHmac).kind).toBe('invalid');
    // Thirty thousand years.
    expect(verifyLink(path, forge(now + 30_000 * 365 * 86_400), [secret], now, nodeHmac).kind).toBe('invalid');
  });

  test('the remembered-good cache does not let a far-future link through', () => {
    const links = new LinkChecker([secret], nodeHmac);
    const query = forge(now + 30_000 * 365 * 86_400);
    expect(links.check(path, query, now).kind).toBe('invalid');
    expect(links.check(path, query, now).kind).toBe('invalid');
  });

  test('nothing signs a link for longer than a day', () => {
    expect(() => signPath(path, secret, { expiresIn: MAX_EXPIRY_SECONDS + 1 }, nodeHmac)).toThrow(RangeError);
    expect(() => signPath(path, secret, { expiresIn: 0 }, nodeHmac)).toThrow(RangeError);
    expect(signPath(path, secret, { expiresIn: MAX_EXPIRY_SECONDS }, nodeHmac).pathAndQuery).toMatch(/X-Sig=/);
  });
});

describe('signature spelling', () => {
  test('only the canonical base64url spelling of the signature verifies', () => {
    const query = forge(now + 60);
    const sig = parseQuery(query)!.find(([k]) => k === 'X-Sig')![1];
    expect(sig).toHaveLength(43);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    let accepted = 0;
    for (const last of alphabet) {
      const spelled = sig.slice(0, 42) + last;
      const kind = verifyLink(path, `X-Expires=${now + 60}&X-Sig=${spelled}`, [secret], now, nodeHmac).kind;
      if (kind === 'valid') {
        accepted++;
        expect(spelled).toBe(sig);
      }
    }
    expect(accepted).toBe(1);
    for (const variant of [`${sig}=`, `${sig}%3D`, sig.replace(/-/g, '+').replace(/_/g, '/')]) {
      if (variant === sig) continue;
      expect(verifyLink(path, `X-Expires=${now + 60}&X-Sig=${variant}`, [secret], now, nodeHmac).kind, variant).toBe('invalid');
    }
  });
});

describe('how a type is shown', () => {
  test.each([
    ['image/png', true], ['image/jpeg', true], ['IMAGE/JPEG; charset=x', true], ['video/mp4', true], ['audio/mpeg', true],
    ['application/pdf', true], ['text/plain; charset=utf-8', true], ['text/csv', true], ['application/json', true],
    ['image/svg+xml', false], ['text/html', false], ['application/xhtml+xml', false], ['text/xml', false], ['application/xml', false],
    ['multipart/x-mixed-replace; boundary=x', false], ['text/javascript', false], ['application/javascript', false],
    ['application/octet-stream', false], ['application/x-shockwave-flash', false], ['text/vtt', false], ['message/rfc822', false],
    ['', false], ['image/png\u0000', false],
  ])('%s inline: %s', (type, inline) => {
    expect(isInlineSafe(type)).toBe(inline);
  });

  test('a stored type that cannot be sent as a header is sent as plain bytes, never a 502', () => {
    expect(sendableType('text/plain; charset=日本')).toBe('application/octet-stream');
    expect(sendableType('text/plain\r\nSet-Cookie: a=b')).toBe('application/octet-stream');
    expect(sendableType('image/png')).toBe('image/png');
  });

  test('a Private file needs a signature; a Public one with a forged far-future link is refused', () => {
    const file = { file_id: 'abc123', sha256: 'x', size: 1 } as EdgeFile;
    const links = new LinkChecker([secret], nodeHmac);
    expect(decide(file, 'Private', path, '', links, now)).toMatchObject({ kind: 'error', code: 'signature_required' });
    expect(decide(file, 'Public', path, forge(now + 10 * 86_400), links, now)).toMatchObject({ kind: 'error', code: 'invalid_signature' });
    expect(decide(file, 'Private', path, forge(now + 60), links, now)).toMatchObject({ kind: 'serve', signed: true });
  });
});

describe('remembered queries', () => {
  // A client sending distinct 16 KB queries must not pin memory in the edge's tables.
  const long = `pad=${'a'.repeat(600)}`;
  /** A good link whose query is long: the padding is signed with the rest. */
  const longSigned = (expires: number): string => {
    const pairs: Array<[string, string]> = [['X-Expires', String(expires)], ['pad', 'a'.repeat(600)]];
    return `X-Expires=${expires}&${long}&X-Sig=${bytesToBase64Url(nodeHmac(secret, stringToSign(path, pairs)))}`;
  };

  test('the link checker remembers short queries only', () => {
    const links = new LinkChecker([secret], nodeHmac);
    expect(links.check(path, 'w=320&format=auto', now).kind).toBe('unsigned');
    expect(links.check(path, forge(now + 60), now).kind).toBe('valid');
    expect(links.size).toBe(2);
    expect(links.check(path, long, now).kind).toBe('unsigned');
    expect(links.check(path, longSigned(now + 60), now).kind).toBe('valid');
    expect(links.size).toBe(2);
    // Not remembered, still judged every time.
    expect(links.check(path, longSigned(now - 1), now).kind).toBe('expired');
  });

  test('the variant reader remembers short queries only', () => {
    const read = variantReader();
    expect(read('w=320&format=auto')).toBe(read('w=320&format=auto'));
    const first = read(`w=320&${long}`);
    expect(first).toEqual(read(`w=320&${long}`));
    expect(first).not.toBe(read(`w=320&${long}`));
  });
});
