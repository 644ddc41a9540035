/**
 * Contract §3 and §5: file records, effective visibility, update, delete and download links.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { ManualClock } from '../kit/index.js';
import { expectGone, storedObjectExists, uploadHeld } from '../helpers/stored-object.js';
import { verifyLink } from '../../src/core/signing.js';
import { nodeHmac } from '../../src/core/hmac-node.js';
import { expectError } from '../helpers/api.js';

const CDN = 'http://cdn.test';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let seq = 0;
const unique = (prefix: string) => `${prefix}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

async function mkdir(o: TestOrigin, name: string, parentId: string | null = null, visibility = 'Public'): Promise<any> {
  const r = await o.post('/collections/folder/create', { name, visibility, parent_id: parentId });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

async function upload(o: TestOrigin, fields: Record<string, unknown> = {}, size = 16): Promise<any> {
  return uploadBytes(o, randomBytes(size), { name: 'file.txt', ...fields });
}

async function initiate(o: TestOrigin, fields: Record<string, unknown> = {}): Promise<any> {
  const r = await o.post('/collections/upload/file', { name: 'pending.bin', visibility: 'Public', size: 10, file_type: 'other', ...fields });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

async function getFile(o: TestOrigin, fileId: string): Promise<any> {
  const r = await o.post('/collections/file/get', { file_id: fileId });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

describe('files', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('get answers the record of contract §3', async () => {
    const bytes = randomBytes(1234);
    const up = await uploadBytes(o, bytes, { name: 'photo.jpg', visibility: 'public', file_type: 'image' });
    const f = await getFile(o, up.file_id);
    // The record, and what edges reported serving (contract §11): nothing yet.
    expect(f).toEqual({ ...up, downloads: 0, bytes_served: 0 });
    expect(f).toMatchObject({
      name: 'photo.jpg', visibility: 'Public', effective_visibility: 'Public', size: 1234, file_type: 'image', content_type: 'image/jpeg',
      folder_id: null, status: 'ready', delivery_url: `${CDN}/files/${up.file_id}`,
    });
    expect(f.file_id).toMatch(/^[A-Za-z0-9_-]{16,}$/);
    expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(f.created_at).toMatch(ISO_MS);
    expect(f.updated_at).toMatch(ISO_MS);
  });

  it('an uploading file has status uploading, no sha256 and no delivery_url', async () => {
    const s = await initiate(o, { name: 'wip.bin' });
    const f = await getFile(o, s.fileId);
    expect(f).toMatchObject({ file_id: s.fileId, status: 'uploading', sha256: null, delivery_url: null });
    expect(s.delivery_url).toBeNull();
  });

  it('get answers 404 file_not_found for an unknown id', async () => {
    expectError(await o.post('/collections/file/get', { file_id: 'nope' }), 404, 'file_not_found', { file_id: 'nope' });
    expectError(await o.post('/collections/file/get', {}), 400, 'invalid_request', { field: 'file_id' });
  });

  it('renames a file, trimming the name; invalid names are 400 invalid_name', async () => {
    const f = await upload(o, { name: 'before.txt' });
    const r = await o.post('/collections/file/update', { file_id: f.file_id, name: '  after.txt  ' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ file_id: f.file_id, name: 'after.txt', delivery_url: f.delivery_url, sha256: f.sha256 });
    expect((await getFile(o, f.file_id)).name).toBe('after.txt');
    for (const name of ['', '  ', 'a/b', '.', '..', 'nul\u0000', 'tab\u0009inside', 'del\u007f', 'x'.repeat(256), 'ü'.repeat(128)]) {
      expectError(await o.post('/collections/file/update', { file_id: f.file_id, name }), 400, 'invalid_name', { field: 'name' });
    }
    expect((await getFile(o, f.file_id)).name).toBe('after.txt');
    // File names may repeat in one folder.
    const twin = await upload(o, { name: 'after.txt' });
    expect(twin.name).toBe('after.txt');
    expect(twin.file_id).not.toBe(f.file_id);
  });

  it('sets visibility given in any letter case, answered canonically', async () => {
    const f = await upload(o, { name: 'vis.txt' });
    for (const [given, want] of [['PRIVATE', 'Private'], ['public', 'Public'], ['pRiVaTe', 'Private'], ['Public', 'Public']] as const) {
      const r = await o.post('/collections/file/update', { file_id: f.file_id, visibility: given });
      expect(r.status).toBe(200);
      expect(r.body.visibility).toBe(want);
      expect(r.body.effective_visibility).toBe(want);
      expect((await getFile(o, f.file_id)).visibility).toBe(want);
    }
    const bad = await o.post('/collections/file/update', { file_id: f.file_id, visibility: 'hidden' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.field).toBe('visibility');
  });

  it('moves a file into a folder and back to the root', async () => {
    const folder = await mkdir(o, unique('dest'));
    const f = await upload(o, { name: 'mover.txt' });
    const moved = await o.post('/collections/file/update', { file_id: f.file_id, folder_id: folder.folder_id });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ folder_id: folder.folder_id, delivery_url: f.delivery_url });
    const inFolder = await o.post('/collections/list', { folder_id: folder.folder_id });
    expect(inFolder.body.files.map((x: any) => x.file_id)).toEqual([f.file_id]);
    const back = await o.post('/collections/file/update', { file_id: f.file_id, folder_id: null });
    expect(back.status).toBe(200);
    expect(back.body.folder_id).toBeNull();
    expect((await o.post('/collections/list', { folder_id: folder.folder_id })).body.files).toEqual([]);
    // Rename and move in one call.
    const both = await o.post('/collections/file/update', { file_id: f.file_id, folder_id: folder.folder_id, name: 'moved.txt', visibility: 'Private' });
    expect(both.body).toMatchObject({ folder_id: folder.folder_id, name: 'moved.txt', visibility: 'Private' });
  });

  it('update answers 404 for an unknown file or folder, before the field rules', async () => {
    const f = await upload(o, { name: 'u404.txt' });
    expectError(await o.post('/collections/file/update', { file_id: f.file_id, folder_id: 'nope' }), 404, 'folder_not_found', { folder_id: 'nope' });
    expectError(await o.post('/collections/file/update', { file_id: f.file_id, folder_id: 'nope', name: '' }), 404, 'folder_not_found');
    expectError(await o.post('/collections/file/update', { file_id: 'nope', name: 'x' }), 404, 'file_not_found');
    expectError(await o.post('/collections/file/update', { file_id: 'nope', name: '', visibility: 'bad' }), 404, 'file_not_found');
    expect((await getFile(o, f.file_id)).folder_id).toBeNull();
  });

  it('deletes a file and its blob', async () => {
    const f = await upload(o, { name: 'doomed.txt' });
    expect(await storedObjectExists(o, f.file_id)).toBe(true);
    const r = await o.post('/collections/file/delete', { file_id: f.file_id });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ file_id: f.file_id, deleted: true });
    expectError(await o.post('/collections/file/get', { file_id: f.file_id }), 404, 'file_not_found', { file_id: f.file_id });
    expectError(await o.post('/collections/file/delete', { file_id: f.file_id }), 404, 'file_not_found');
    expectError(await o.post('/collections/file/download', { file_id: f.file_id }), 404, 'file_not_found');
    expectError(await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'other' }), 404, 'file_not_found');
    await expectGone(`the object of ${f.file_id}`, () => storedObjectExists(o, f.file_id));
  });

  it('deletes a file that is still uploading, with its parts', async () => {
    const s = await initiate(o, { name: 'half.bin' });
    const p = await o.post('/collections/upload/file-progress', {
      bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 1, body: randomBytes(10).toString('base64'),
    });
    expect(p.status).toBe(200);
    expect(await uploadHeld(o, s.uploadId)).toBe(true);
    const r = await o.post('/collections/file/delete', { file_id: s.fileId });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ file_id: s.fileId, deleted: true });
    expectError(await o.post('/collections/file/get', { file_id: s.fileId }), 404, 'file_not_found');
    expectError(await o.post('/collections/upload/complete-upload', { file_id: s.fileId }), 404, 'file_not_found');
    await expectGone(`upload ${s.uploadId}`, () => uploadHeld(o, s.uploadId));
  });
});

describe('effective visibility', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('a Public file in a Private folder, or deeper, is effectively Private', async () => {
    const priv = await mkdir(o, unique('priv'), null, 'Private');
    const pubChild = await mkdir(o, 'pub', priv.folder_id, 'Public');
    const deeper = await mkdir(o, 'deeper', pubChild.folder_id, 'Public');
    const direct = await upload(o, { name: 'direct.txt', folder_id: priv.folder_id, visibility: 'Public' });
    const nested = await upload(o, { name: 'nested.txt', folder_id: deeper.folder_id, visibility: 'Public' });
    for (const f of [direct, nested]) {
      expect(f.visibility).toBe('Public');
      expect(f.effective_visibility).toBe('Private');
      expect(f.delivery_url).toBe(`${CDN}/files/${f.file_id}`);
      const got = await getFile(o, f.file_id);
      expect(got).toMatchObject({ visibility: 'Public', effective_visibility: 'Private' });
    }
    const listed = await o.post('/collections/list', { folder_id: deeper.folder_id });
    expect(listed.body.files[0]).toMatchObject({ file_id: nested.file_id, effective_visibility: 'Private' });
    // Moving the file out to the root makes it Public again.
    const out = await o.post('/collections/file/update', { file_id: nested.file_id, folder_id: null });
    expect(out.body.effective_visibility).toBe('Public');
    // A Private file is Private wherever it is.
    const pubFolder = await mkdir(o, unique('pubf'));
    const own = await upload(o, { name: 'own.txt', folder_id: pubFolder.folder_id, visibility: 'Private' });
    expect(own.effective_visibility).toBe('Private');
  });

  it('flipping a folder flips every file below it', async () => {
    const top = await mkdir(o, unique('flip'));
    const mid = await mkdir(o, 'mid', top.folder_id);
    const low = await mkdir(o, 'low', mid.folder_id);
    const files = [
      await upload(o, { name: 'a.txt', folder_id: top.folder_id }),
      await upload(o, { name: 'b.txt', folder_id: mid.folder_id }),
      await upload(o, { name: 'c.txt', folder_id: low.folder_id }),
    ];
    const ownPrivate = await upload(o, { name: 'p.txt', folder_id: low.folder_id, visibility: 'Private' });
    const outside = await upload(o, { name: 'outside.txt' });
    for (const f of files) expect((await getFile(o, f.file_id)).effective_visibility).toBe('Public');

    expect((await o.post('/collections/folder/update', { folder_id: top.folder_id, visibility: 'Private' })).status).toBe(200);
    for (const f of files) expect((await getFile(o, f.file_id)).effective_visibility).toBe('Private');
    expect((await getFile(o, outside.file_id)).effective_visibility).toBe('Public');
    const midRec = await o.post('/collections/folder/get', { folder_id: mid.folder_id });
    expect(midRec.body).toMatchObject({ visibility: 'Public', effective_visibility: 'Private' });
    // The download link follows: signed now.
    const dl = await o.post('/collections/file/download', { file_id: files[2].file_id });
    expect(dl.body.expires_at).not.toBeNull();
    expect(dl.body.download_url).toContain('X-Sig=');

    expect((await o.post('/collections/folder/update', { folder_id: top.folder_id, visibility: 'Public' })).status).toBe(200);
    for (const f of files) expect((await getFile(o, f.file_id)).effective_visibility).toBe('Public');
    expect((await getFile(o, ownPrivate.file_id)).effective_visibility).toBe('Private');

    // A Private folder in the middle: only what is below it.
    await o.post('/collections/folder/update', { folder_id: mid.folder_id, visibility: 'private' });
    expect((await getFile(o, files[0].file_id)).effective_visibility).toBe('Public');
    expect((await getFile(o, files[1].file_id)).effective_visibility).toBe('Private');
    expect((await getFile(o, files[2].file_id)).effective_visibility).toBe('Private');
    // Moving a folder under a Private one makes its files Private too.
    await o.post('/collections/folder/update', { folder_id: mid.folder_id, visibility: 'Public' });
    const privTop = await mkdir(o, unique('privtop'), null, 'Private');
    await o.post('/collections/folder/update', { folder_id: low.folder_id, parent_id: privTop.folder_id });
    expect((await getFile(o, files[2].file_id)).effective_visibility).toBe('Private');
    expect((await getFile(o, files[1].file_id)).effective_visibility).toBe('Public');
  });

  it('delivery_url is null while uploading and set once ready', async () => {
    const folder = await mkdir(o, unique('dl'), null, 'Private');
    const s = await initiate(o, { name: 'late.bin', folder_id: folder.folder_id, size: 3 });
    expect(s.status).toBe('uploading');
    expect(s.delivery_url).toBeNull();
    expect(s.effective_visibility).toBe('Private');
    await o.post('/collections/upload/file-progress', { bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 1, body: 'AAAA' });
    expect((await getFile(o, s.fileId)).delivery_url).toBeNull();
    const done = await o.post('/collections/upload/complete-upload', { file_id: s.fileId });
    expect(done.status).toBe(200);
    expect(done.body.delivery_url).toBe(`${CDN}/files/${s.fileId}`);
    expect((await getFile(o, s.fileId)).delivery_url).toBe(`${CDN}/files/${s.fileId}`);
  });
});

describe('download', () => {
  let o: TestOrigin;
  /** The origin's time: a link's expiry is known to the second. */
  const clock = new ManualClock(Date.now());
  const nowSeconds = () => Math.floor(clock.now() / 1000);
  beforeAll(async () => { o = await startTestOrigin({}, { clock }); });
  afterAll(async () => { await o.close(); });

  function checkSigned(url: string, fileId: string, secrets: string[]) {
    const u = new URL(url);
    expect(u.origin).toBe(CDN);
    expect(u.pathname).toBe(`/files/${fileId}`);
    expect(u.searchParams.get('download')).toBe('1');
    expect(u.searchParams.get('X-Expires')).toMatch(/^\d+$/);
    expect(u.searchParams.get('X-Sig')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const check = verifyLink(u.pathname, u.search.slice(1), secrets, nowSeconds(), nodeHmac);
    expect(check).toMatchObject({ kind: 'valid', download: true });
    return Number(u.searchParams.get('X-Expires'));
  }

  it('a Public file gets an unsigned link with download=1 and no expiry', async () => {
    const f = await upload(o, { name: 'pub.txt' });
    const r = await o.post('/collections/file/download', { file_id: f.file_id });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ file_id: f.file_id, download_url: `${CDN}/files/${f.file_id}?download=1`, expires_at: null });
    const withExpiry = await o.post('/collections/file/download', { file_id: f.file_id, expiry: 60 });
    expect(withExpiry.body).toEqual({ file_id: f.file_id, download_url: `${CDN}/files/${f.file_id}?download=1`, expires_at: null });
  });

  it('a Private file, own or through a folder, gets a signed link that verifies', async () => {
    const own = await upload(o, { name: 'own.txt', visibility: 'Private' });
    const grand = await mkdir(o, unique('gp'), null, 'Private');
    const parent = await mkdir(o, 'p', grand.folder_id);
    const viaFolder = await upload(o, { name: 'via.txt', folder_id: parent.folder_id });
    for (const f of [own, viaFolder]) {
      const r = await o.post('/collections/file/download', { file_id: f.file_id });
      expect(r.status).toBe(200);
      expect(r.body.file_id).toBe(f.file_id);
      const expires = checkSigned(r.body.download_url, f.file_id, [o.secret]);
      expect(r.body.expires_at).toMatch(ISO_MS);
      expect(r.body.expires_at).toBe(new Date(expires * 1000).toISOString());
      expect(Date.parse(r.body.expires_at)).toBe((nowSeconds() + 3600) * 1000);
      // Signed for this file only, with another secret it fails.
      const u = new URL(r.body.download_url);
      expect(verifyLink(u.pathname, u.search.slice(1), ['another-secret'], nowSeconds(), nodeHmac).kind).toBe('invalid');
      expect(verifyLink('/files/other', u.search.slice(1), [o.secret], nowSeconds(), nodeHmac).kind).toBe('invalid');
      // Without download=1 the signature no longer holds.
      const q = u.search.slice(1).split('&').filter((p) => p !== 'download=1').join('&');
      expect(verifyLink(u.pathname, q, [o.secret], nowSeconds(), nodeHmac).kind).toBe('invalid');
    }
    const r = await o.post('/collections/file/download', { file_id: own.file_id, expiry: 120 });
    const expires = checkSigned(r.body.download_url, own.file_id, [o.secret]);
    expect(expires).toBe(nowSeconds() + 120);
    const max = await o.post('/collections/file/download', { file_id: own.file_id, expiry: 86400 });
    expect(max.status).toBe(200);
    const one = await o.post('/collections/file/download', { file_id: own.file_id, expiry: 1 });
    expect(one.status).toBe(200);
  });

  it('answers 400 invalid_expiry for an expiry outside 1–86400 or not whole', async () => {
    const priv = await upload(o, { name: 'exp.txt', visibility: 'Private' });
    const pub = await upload(o, { name: 'exp-pub.txt' });
    for (const f of [priv, pub]) {
      for (const expiry of [0, 86401, 1.5, -1, 1e12]) {
        expectError(await o.post('/collections/file/download', { file_id: f.file_id, expiry }), 400, 'invalid_expiry', { field: 'expiry' });
      }
    }
    expectError(await o.post('/collections/file/download', { file_id: priv.file_id, expiry: '60' }), 400, 'invalid_request', { field: 'expiry' });
  });

  it('answers 409 upload_not_complete while uploading and 404 for an unknown file', async () => {
    const s = await initiate(o, { name: 'notyet.bin', visibility: 'Private' });
    expectError(await o.post('/collections/file/download', { file_id: s.fileId }), 409, 'upload_not_complete', { file_id: s.fileId });
    // The state conflict is answered before the field rules.
    expectError(await o.post('/collections/file/download', { file_id: s.fileId, expiry: 0 }), 409, 'upload_not_complete');
    expectError(await o.post('/collections/file/download', { file_id: 'nope' }), 404, 'file_not_found', { file_id: 'nope' });
    expectError(await o.post('/collections/file/download', { file_id: 'nope', expiry: 0 }), 404, 'file_not_found');
  });
});
