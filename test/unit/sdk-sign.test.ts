/**
 * signLink (src/sdk/sign.ts) offline: the signature of contract §6 made with Web Crypto
 * must be exactly the origin's (signPath with Node's HMAC), in every form it accepts.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CofferError, signLink } from '../../src/sdk/index.js';
import { nodeHmac } from '../../src/core/hmac-node.js';
import { signPath, verifyLink } from '../../src/core/signing.js';

const SECRET = 'unit-secret-1';
const OTHER = 'unit-secret-2';
const ID = 'AbCdEf0123456789_-xyzQ';
const PATH = `/files/${ID}`;
const NOW = 1_800_000_000;

/** The contract's formula written out by hand. */
const manualSig = (secret: string, path: string, canonical: string): string =>
  createHmac('sha256', secret).update(`${path}\n${canonical}`).digest('base64url');

function splitLink(link: string): { path: string; query: string } {
  const q = link.indexOf('?');
  return { path: link.slice(0, q), query: link.slice(q + 1) };
}

async function rejection(p: Promise<unknown>): Promise<CofferError> {
  const err = await p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e);
  expect(err).toBeInstanceOf(CofferError);
  return err as CofferError;
}

describe('signLink', () => {
  it('signs a bare path exactly as signPath with Node HMAC and the contract formula', async () => {
    const link = await signLink(PATH, { expiresIn: 600, secret: SECRET, now: NOW });
    expect(link).toBe(signPath(PATH, SECRET, { expiresIn: 600, now: NOW }, nodeHmac).pathAndQuery);
    const canonical = `X-Expires=${NOW + 600}&X-Issued=${NOW * 1000}`;
    expect(link).toBe(`${PATH}?${canonical}&X-Sig=${manualSig(SECRET, PATH, canonical)}`);
    const { path, query } = splitLink(link);
    expect(verifyLink(path, query, [SECRET], NOW + 600, nodeHmac)).toEqual({ kind: 'valid', expires: NOW + 600, download: false, issuedMs: NOW * 1000 });
    expect(verifyLink(path, query, [SECRET], NOW + 601, nodeHmac)).toEqual({ kind: 'expired', expires: NOW + 600 });
  });

  it('signs a whole delivery URL: same origin kept, same signature as for the path', async () => {
    const bare = await signLink(PATH, { expiresIn: 60, secret: SECRET, now: NOW });
    expect(await signLink(`http://cdn.test${PATH}`, { expiresIn: 60, secret: SECRET, now: NOW })).toBe(`http://cdn.test${bare}`);
    expect(await signLink(`https://cdn.example.com:8443${PATH}`, { expiresIn: 60, secret: SECRET, now: NOW })).toBe(`https://cdn.example.com:8443${bare}`);
  });

  it('keeps a {cdn_url} path prefix outside the signature, as the origin does', async () => {
    const bare = await signLink(PATH, { expiresIn: 60, secret: SECRET, now: NOW });
    expect(await signLink(`https://example.com/cdn${PATH}`, { expiresIn: 60, secret: SECRET, now: NOW })).toBe(`https://example.com/cdn${bare}`);
  });

  it('download: true adds download=1, sorted after X-Expires and signed along', async () => {
    const link = await signLink(PATH, { expiresIn: 60, secret: SECRET, now: NOW, download: true });
    const canonical = `X-Expires=${NOW + 60}&X-Issued=${NOW * 1000}&download=1`;
    expect(link).toBe(`${PATH}?${canonical}&X-Sig=${manualSig(SECRET, PATH, canonical)}`);
    expect(link).toBe(signPath(PATH, SECRET, { expiresIn: 60, now: NOW, params: { download: '1' } }, nodeHmac).pathAndQuery);
    const { path, query } = splitLink(link);
    expect(verifyLink(path, query, [SECRET], NOW, nodeHmac)).toEqual({ kind: 'valid', expires: NOW + 60, download: true, issuedMs: NOW * 1000 });
    // Dropping download=1 from the signed link breaks it.
    expect(verifyLink(path, query.replace('&download=1', ''), [SECRET], NOW, nodeHmac)).toEqual({ kind: 'invalid' });
  });

  it('re-signs a signed URL: its old X-Expires and X-Sig are replaced, other parameters kept', async () => {
    const first = await signLink(`http://cdn.test${PATH}`, { expiresIn: 60, secret: SECRET, now: NOW, download: true });
    const again = await signLink(first, { expiresIn: 120, secret: SECRET, now: NOW });
    expect(again).toBe(`http://cdn.test${signPath(PATH, SECRET, { expiresIn: 120, now: NOW, params: { download: '1' } }, nodeHmac).pathAndQuery}`);
    expect(again.match(/X-Sig=/g)).toHaveLength(1);
    expect(again.match(/X-Expires=/g)).toHaveLength(1);
  });

  it('a comma-separated secret list signs with its first entry (white space trimmed)', async () => {
    const opts = { expiresIn: 60, now: NOW };
    const first = await signLink(PATH, { ...opts, secret: SECRET });
    expect(await signLink(PATH, { ...opts, secret: `${SECRET},${OTHER}` })).toBe(first);
    expect(await signLink(PATH, { ...opts, secret: ` ${SECRET} , ${OTHER}` })).toBe(first);
    expect(await signLink(PATH, { ...opts, secret: OTHER })).not.toBe(first);
    const { path, query } = splitLink(first);
    expect(verifyLink(path, query, [OTHER], NOW, nodeHmac).kind).toBe('invalid');
    expect(verifyLink(path, query, [OTHER, SECRET], NOW, nodeHmac).kind).toBe('valid');
  });

  it('counts from the current time by default', async () => {
    const before = Math.floor(Date.now() / 1000);
    const link = await signLink(PATH, { expiresIn: 3600, secret: SECRET });
    const after = Math.floor(Date.now() / 1000);
    const expires = Number(/X-Expires=(\d+)/.exec(link)![1]);
    expect(expires).toBeGreaterThanOrEqual(before + 3600);
    expect(expires).toBeLessThanOrEqual(after + 3600);
  });

  it('accepts expiresIn 1 and 86400 and refuses 0, 86401, 1.5, -1 and NaN', async () => {
    for (const expiresIn of [1, 86_400]) {
      expect(await signLink(PATH, { expiresIn, secret: SECRET, now: NOW })).toContain(`X-Expires=${NOW + expiresIn}&`);
    }
    for (const expiresIn of [0, 86_401, 1.5, -1, Number.NaN]) {
      const err = await rejection(signLink(PATH, { expiresIn, secret: SECRET, now: NOW }));
      expect(err.code, String(expiresIn)).toBe('invalid_argument');
      expect(err.message).toMatch(/expiresIn/);
    }
  });

  it('refuses an empty secret and a path that is neither absolute nor a URL', async () => {
    expect((await rejection(signLink(PATH, { expiresIn: 60, secret: '' }))).code).toBe('invalid_argument');
    expect((await rejection(signLink(PATH, { expiresIn: 60, secret: ' ,x' }))).code).toBe('invalid_argument');
    expect((await rejection(signLink(`files/${ID}`, { expiresIn: 60, secret: SECRET }))).code).toBe('invalid_argument');
  });
});
