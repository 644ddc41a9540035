/**
 * The edge's hot path keeps its rules while it allocates less: a remembered signed link
 * is keyed by its query alone but serves only the path it was signed for, verdicts that
 * serve are shared objects, and a target in origin form is read without a pattern.
 */
import { describe, expect, it } from 'vitest';
import { LinkChecker, decide, originForm, parseTarget } from '../../src/edge/delivery.js';
import { stringToSign } from '../../src/core/signing.js';
import { bytesToBase64Url } from '../../src/core/ids.js';
import { nodeHmac } from '../../src/core/hmac-node.js';
import type { EdgeFile } from '../../src/edge/state.js';

const secret = 'hot-path-secret';
const now = 1_800_000_000;
const file = { file_id: 'abc123', sha256: 'x', size: 1, links_revoked_at: null } as unknown as EdgeFile;
/** The query of a link to `path` expiring at `expires`, signed as the origin signs it. */
const signed = (path: string, expires: number): string =>
  `X-Expires=${expires}&X-Sig=${bytesToBase64Url(nodeHmac(secret, stringToSign(path, [['X-Expires', String(expires)]])))}`;

describe('remembered links', () => {
  it('serve only the path they were signed for, before and after they are remembered', () => {
    const links = new LinkChecker([secret], nodeHmac);
    const query = signed('/files/abc123', now + 600);
    // Another path with the same query, first while nothing is remembered, then after.
    expect(links.check('/files/other1', query, now).kind).toBe('invalid');
    expect(links.check('/files/abc123', query, now).kind).toBe('valid');
    expect(links.check('/files/abc123', query, now).kind).toBe('valid');
    expect(links.check('/files/other1', query, now).kind).toBe('invalid');
    // The remembered link still expires.
    expect(links.check('/files/abc123', query, now + 601)).toMatchObject({ kind: 'expired', expires: now + 600 });
    expect(links.size).toBe(1);
  });

  it('decide the same as before: shared verdicts for plain and signed answers', () => {
    const links = new LinkChecker([secret], nodeHmac);
    const plain = decide(file, 'Public', '/files/abc123', '', links, now);
    expect(plain).toEqual({ kind: 'serve', signed: false, download: false });
    expect(decide(file, 'Public', '/files/abc123', '', links, now)).toBe(plain);
    expect(decide(file, 'Public', '/files/abc123', 'download=1', links, now)).toEqual({ kind: 'serve', signed: false, download: true });
    const query = signed('/files/abc123', now + 600);
    expect(decide(file, 'Private', '/files/abc123', query, links, now)).toEqual({ kind: 'serve', signed: true, download: false });
  });
});

describe('request targets', () => {
  it('read origin-form and absolute-form targets alike', () => {
    expect(originForm('/files/abc?x=1')).toBe('/files/abc?x=1');
    expect(originForm('http://edge.example/files/abc?x=1')).toBe('/files/abc?x=1');
    expect(parseTarget('/files/abc123?x=1')).toEqual({ path: '/files/abc123', query: 'x=1', id: 'abc123' });
    expect(parseTarget('HTTP://h:1/files/abc123')).toEqual({ path: '/files/abc123', query: '', id: 'abc123' });
    expect(parseTarget('/files/..%2fetc')).toEqual({ error: 'The path is not a delivery path.' });
  });
});
