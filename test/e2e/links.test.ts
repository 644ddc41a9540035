/**
 * Contract §6: create-link and the signature of its links, against a real origin.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { signPath, verifyLink } from '../../src/core/signing.js';
import { nodeHmac } from '../../src/core/hmac-node.js';
import { expectError } from '../helpers/api.js';
import { ManualClock } from '../kit/index.js';

const CDN = 'http://cdn.test';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** The origins' time: the expiry of a link is known to the second. */
const clock = new ManualClock(Date.now());
const nowSeconds = () => Math.floor(clock.now() / 1000);

async function upload(o: TestOrigin, fields: Record<string, unknown> = {}): Promise<any> {
  return uploadBytes(o, randomBytes(32), { name: 'pic.png', file_type: 'image', ...fields });
}

/** The path and raw query of a link, as an edge would see them. */
function split(url: string): { path: string; query: string } {
  const q = url.indexOf('?');
  const u = new URL(url);
  expect(u.origin).toBe(CDN);
  return { path: url.slice(CDN.length, q), query: url.slice(q + 1) };
}

const LINK = /^http:\/\/cdn\.test\/files\/([A-Za-z0-9_-]+)\?X-Expires=(\d+)&X-Issued=(\d+)&X-Sig=([A-Za-z0-9_-]{43})$/;

describe('create-link', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin({}, { clock }); });
  afterAll(async () => { await o.close(); });

  it('answers {file_id, file_type, expiry, presigned_url, expires_at} with a default expiry of 3600', async () => {
    const f = await upload(o, { visibility: 'Private' });
    const before = nowSeconds();
    const r = await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image' });
    const after = nowSeconds();
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['expires_at', 'expiry', 'file_id', 'file_type', 'presigned_url']);
    expect(r.body).toMatchObject({ file_id: f.file_id, file_type: 'image', expiry: 3600 });
    const m = LINK.exec(r.body.presigned_url);
    expect(m, r.body.presigned_url).not.toBeNull();
    expect(m![1]).toBe(f.file_id);
    const expires = Number(m![2]);
    expect(expires).toBeGreaterThanOrEqual(before + 3600);
    expect(expires).toBeLessThanOrEqual(after + 3600);
    expect(r.body.expires_at).toMatch(ISO_MS);
    expect(r.body.expires_at).toBe(new Date(expires * 1000).toISOString());

    // The signature is the contract's formula, computed here on its own.
    const path = `/files/${f.file_id}`;
    const issued = Number(m![3]);
    expect(issued).toBeGreaterThanOrEqual(before * 1000);
    expect(issued).toBeLessThanOrEqual((after + 1) * 1000);
    const want = createHmac('sha256', o.secret).update(`${path}\nX-Expires=${expires}&X-Issued=${issued}`).digest('base64url');
    expect(m![4]).toBe(want);
    const { path: p, query } = split(r.body.presigned_url);
    expect(p).toBe(path);
    expect(verifyLink(p, query, [o.secret], nowSeconds(), nodeHmac)).toEqual({ kind: 'valid', expires, download: false, issuedMs: issued });
  });

  it('takes any whole expiry from 1 to 86400', async () => {
    const f = await upload(o);
    for (const expiry of [1, 60, 86400]) {
      const r = await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image', expiry });
      expect(r.status).toBe(200);
      expect(r.body.expiry).toBe(expiry);
      const expires = Number(LINK.exec(r.body.presigned_url)![2]);
      expect(expires).toBe(nowSeconds() + expiry);
      expect(Date.parse(r.body.expires_at)).toBe(expires * 1000);
    }
  });

  it('answers 400 invalid_expiry outside 1–86400 or for a fraction', async () => {
    const f = await upload(o);
    for (const expiry of [0, 86401, 1.5, -1, 100000000]) {
      expectError(await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image', expiry }), 400, 'invalid_expiry', { field: 'expiry' });
    }
    expectError(await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image', expiry: '60' }), 400, 'invalid_request', { field: 'expiry' });
    expectError(await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image', expiry: null }), 400, 'invalid_request', { field: 'expiry' });
  });

  it('answers 400 file_type_mismatch when file_type is not the file\'s', async () => {
    const f = await upload(o);
    for (const file_type of ['video', 'document', 'other', 'nonsense']) {
      expectError(await o.post('/collections/create-link', { file_id: f.file_id, file_type }), 400, 'file_type_mismatch', { field: 'file_type' });
    }
    expectError(await o.post('/collections/create-link', { file_id: f.file_id }), 400, 'invalid_request', { field: 'file_type' });
  });

  it('answers 404 for an unknown file and 409 upload_not_complete while uploading, in the order of contract §2', async () => {
    expectError(await o.post('/collections/create-link', { file_id: 'nope', file_type: 'image' }), 404, 'file_not_found', { file_id: 'nope' });
    expectError(await o.post('/collections/create-link', { file_id: 'nope', file_type: 'image', expiry: 0 }), 404, 'file_not_found');
    expectError(await o.post('/collections/create-link', { file_id: 'nope', file_type: 'video', expiry: 86401 }), 404, 'file_not_found');

    const init = await o.post('/collections/upload/file', { name: 'wip.png', visibility: 'Private', size: 5, file_type: 'image' });
    expect(init.status).toBe(200);
    const id = init.body.fileId;
    expectError(await o.post('/collections/create-link', { file_id: id, file_type: 'image' }), 409, 'upload_not_complete', { file_id: id });
    expectError(await o.post('/collections/create-link', { file_id: id, file_type: 'image', expiry: 0 }), 409, 'upload_not_complete');
    expectError(await o.post('/collections/create-link', { file_id: id, file_type: 'video' }), 409, 'upload_not_complete');

    // Among the field rules, file_type comes before expiry.
    const f = await upload(o);
    expectError(await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'video', expiry: 0 }), 400, 'file_type_mismatch');
  });

  it('makes links for Public files too, and for files in Private folders', async () => {
    const pub = await upload(o, { visibility: 'Public' });
    const folder = await o.post('/collections/folder/create', { name: 'vault', visibility: 'Private' });
    const inPrivate = await upload(o, { folder_id: folder.body.folder_id, file_type: 'document', name: 'doc.pdf' });
    for (const [f, type] of [[pub, 'image'], [inPrivate, 'document']] as const) {
      const r = await o.post('/collections/create-link', { file_id: f.file_id, file_type: type, expiry: 30 });
      expect(r.status).toBe(200);
      expect(r.body.presigned_url).toMatch(LINK);
      const { path, query } = split(r.body.presigned_url);
      expect(path).toBe(`/files/${f.file_id}`);
      expect(verifyLink(path, query, [o.secret], nowSeconds(), nodeHmac).kind).toBe('valid');
    }
  });

  it('a rename or a move keeps the link path, so issued links keep working', async () => {
    const f = await upload(o, { visibility: 'Private' });
    const r = await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image' });
    const folder = await o.post('/collections/folder/create', { name: 'elsewhere', visibility: 'Private' });
    await o.post('/collections/file/update', { file_id: f.file_id, name: 'renamed.png', folder_id: folder.body.folder_id });
    const again = await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image' });
    expect(split(again.body.presigned_url).path).toBe(split(r.body.presigned_url).path);
    const { path, query } = split(r.body.presigned_url);
    expect(verifyLink(path, query, [o.secret], nowSeconds(), nodeHmac).kind).toBe('valid');
  });

  it('any change to the link breaks its signature', async () => {
    const f = await upload(o, { visibility: 'Private' });
    const g = await upload(o, { visibility: 'Private' });
    const r = await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image' });
    const { path, query } = split(r.body.presigned_url);
    const now = nowSeconds();
    const verify = (p: string, q: string) => verifyLink(p, q, [o.secret], now, nodeHmac).kind;
    expect(verify(path, query)).toBe('valid');

    const [, expires, issued, sig] = /^X-Expires=(\d+)&X-Issued=(\d+)&X-Sig=(.+)$/.exec(query)!;
    // Another file's path.
    expect(verify(`/files/${g.file_id}`, query)).toBe('invalid');
    expect(verify(`${path}x`, query)).toBe('invalid');
    // X-Expires moved either way.
    expect(verify(path, `X-Expires=${Number(expires) + 1}&X-Issued=${issued}&X-Sig=${sig}`)).toBe('invalid');
    expect(verify(path, `X-Expires=${Number(expires) - 1}&X-Issued=${issued}&X-Sig=${sig}`)).toBe('invalid');
    // X-Issued moved, doubled or dropped.
    expect(verify(path, `X-Expires=${expires}&X-Issued=${Number(issued) + 1}&X-Sig=${sig}`)).toBe('invalid');
    expect(verify(path, `X-Expires=${expires}&X-Sig=${sig}`)).toBe('invalid');
    expect(verify(path, `${query}&X-Issued=${issued}`)).toBe('invalid');
    // A parameter added, anywhere.
    expect(verify(path, `${query}&download=1`)).toBe('invalid');
    expect(verify(path, `a=b&${query}`)).toBe('invalid');
    // Every character of the signature matters.
    for (const i of [0, 10, 21, 41]) {
      const c = sig![i]!;
      const flipped = sig!.slice(0, i) + (c === 'A' ? 'B' : 'A') + sig!.slice(i + 1);
      expect(verify(path, `X-Expires=${expires}&X-Issued=${issued}&X-Sig=${flipped}`), `char ${i}`).toBe('invalid');
    }
    // Signature removed, truncated, doubled.
    expect(verify(path, `X-Expires=${expires}&X-Issued=${issued}`)).toBe('invalid');
    expect(verify(path, `X-Expires=${expires}&X-Issued=${issued}&X-Sig=${sig!.slice(0, -2)}`)).toBe('invalid');
    expect(verify(path, `${query}&X-Sig=${sig}`)).toBe('invalid');
    // The parameters in another order still carry the same signed content.
    expect(verify(path, `X-Sig=${sig}&X-Issued=${issued}&X-Expires=${expires}`)).toBe('valid');
  });

  it('is expired only once the current time is past X-Expires', async () => {
    const f = await upload(o);
    const r = await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image', expiry: 5 });
    const { path, query } = split(r.body.presigned_url);
    const expires = Number(/X-Expires=(\d+)/.exec(query)![1]);
    expect(verifyLink(path, query, [o.secret], expires, nodeHmac)).toMatchObject({ kind: 'valid', expires });
    expect(verifyLink(path, query, [o.secret], expires + 1, nodeHmac)).toEqual({ kind: 'expired', expires });
    expect(verifyLink(path, query, [o.secret], expires + 100000, nodeHmac).kind).toBe('expired');
    // A wrong signature is refused as such, expired or not.
    expect(verifyLink('/files/other', query, [o.secret], expires + 1, nodeHmac).kind).toBe('invalid');
  });
});

describe('signing secret rotation', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin({ COFFER_SIGNING_SECRET: 'new-secret,old-secret' }, { clock }); });
  afterAll(async () => { await o.close(); });

  it('signs with the first secret; every listed secret verifies', async () => {
    expect(o.origin.credentials.signingSecrets).toEqual(['new-secret', 'old-secret']);
    const f = await upload(o, { visibility: 'Private' });
    const r = await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'image' });
    expect(r.status).toBe(200);
    const { path, query } = split(r.body.presigned_url);
    const now = nowSeconds();
    expect(verifyLink(path, query, ['new-secret'], now, nodeHmac).kind).toBe('valid');
    expect(verifyLink(path, query, ['old-secret'], now, nodeHmac).kind).toBe('invalid');
    expect(verifyLink(path, query, o.origin.credentials.signingSecrets, now, nodeHmac).kind).toBe('valid');

    const dl = await o.post('/collections/file/download', { file_id: f.file_id });
    const d = split(dl.body.download_url);
    expect(verifyLink(d.path, d.query, ['new-secret'], now, nodeHmac)).toMatchObject({ kind: 'valid', download: true });

    // A link signed earlier with the old secret still verifies against the list; one with an unknown secret does not.
    const old = signPath(path, 'old-secret', { expiresIn: 600 }, nodeHmac);
    const oldQuery = old.pathAndQuery.slice(old.pathAndQuery.indexOf('?') + 1);
    expect(verifyLink(path, oldQuery, o.origin.credentials.signingSecrets, now, nodeHmac).kind).toBe('valid');
    expect(verifyLink(path, oldQuery, ['new-secret'], now, nodeHmac).kind).toBe('invalid');
    const stranger = signPath(path, 'other-secret', { expiresIn: 600 }, nodeHmac);
    expect(verifyLink(path, stranger.pathAndQuery.split('?')[1]!, o.origin.credentials.signingSecrets, now, nodeHmac).kind).toBe('invalid');
    // The secret order does not matter to verification.
    expect(verifyLink(path, query, ['old-secret', 'new-secret'], now, nodeHmac).kind).toBe('valid');
  });
});
