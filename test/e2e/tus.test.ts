/**
 * tus 1.0 at /tus (contract §9), over real HTTP: discovery, creation, the core protocol with
 * PATCHes that end anywhere inside a 5 MiB part, and every error status the core and creation
 * sections of the tus specification name, in the contract's JSON error shape.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { readStoredObject } from '../helpers/stored-object.js';
import { MiB, offsetOf, slowly, storedTails, tus, tusClient, tusMetadata } from '../helpers/tus.js';
import { ManualClock, sha256, sleep } from '../kit/index.js';

const MAX = 40 * MiB;
let o: TestOrigin;
let c: ReturnType<typeof tusClient>;

/** The origin's time: an upload's expiry is known to the second. */
const clock = new ManualClock(Date.now());
beforeAll(async () => {
  o = await startTestOrigin({ COFFER_MAX_FILE_SIZE: String(MAX), COFFER_UPLOAD_TTL: '3600' }, { clock });
  c = tusClient(o.url, `Bearer ${o.key}`);
});
afterAll(async () => o?.close());

/** A JSON error answer of the contract, with the tus headers every answer carries. */
function expectTusError(a: Awaited<ReturnType<typeof c.call>>, status: number, code: string, details?: Record<string, unknown>) {
  expect(a.headers['tus-resumable']).toBe('1.0.0');
  expectError({ status: a.status, json: a.json, body: a.body, headers: a.headers }, status, code, details);
}

describe('discovery', () => {
  it('OPTIONS /tus announces version, extensions, the maximum size and checksum algorithms, to anyone', async () => {
    const a = await tus(o.url, null, { method: 'OPTIONS', url: '/tus', noTusResumable: true });
    expect(a.status).toBe(204);
    expect(a.headers['tus-resumable']).toBe('1.0.0');
    expect(a.headers['tus-version']).toBe('1.0.0');
    expect(a.headers['tus-extension']!.split(',').sort()).toEqual(['checksum', 'concatenation', 'creation', 'creation-with-upload', 'expiration', 'termination']);
    expect(a.headers['tus-max-size']).toBe(String(MAX));
    expect(a.headers['tus-checksum-algorithm']!.split(',').sort()).toEqual(['md5', 'sha1', 'sha256']);
  });
});

describe('creation and the core protocol', () => {
  it('creates an upload from Upload-Metadata and keeps PATCHes that end anywhere inside a part, until the file is ready', async () => {
    const folder = (await o.post('/collections/folder/create', { name: 'tus-in', visibility: 'Public' })).body;
    const bytes = randomBytes(13 * MiB + 5);
    const meta = tusMetadata({ filename: 'photo.png', filetype: 'image/png', visibility: 'Public', folder_id: folder.folder_id, extra: null });
    const created = await c.call({ method: 'POST', url: '/tus', headers: { 'upload-length': String(bytes.length), 'upload-metadata': meta } });
    expect(created.status).toBe(201);
    const location = created.headers.location!;
    const id = /\/tus\/([A-Za-z0-9_-]+)$/.exec(location)![1]!;
    expect(location).toBe(`${o.url}/tus/${id}`);
    expect(created.headers['upload-offset']).toBe('0');
    const expires = Date.parse(created.headers['upload-expires']!);
    // Upload-Expires is an HTTP date: whole seconds.
    expect(expires).toBe(Math.floor((clock.now() + 3600_000) / 1000) * 1000);

    const head = await c.head(location);
    expect(head.status).toBe(200);
    expect(head.headers['upload-offset']).toBe('0');
    expect(head.headers['upload-length']).toBe(String(bytes.length));
    expect(head.headers['upload-metadata']).toBe(meta);
    expect(head.headers['cache-control']).toBe('no-store');
    expect(head.headers['upload-concat']).toBeUndefined();
    const uploading = (await o.post('/collections/file/get', { file_id: id })).body;
    expect(uploading).toMatchObject({ status: 'uploading', name: 'photo.png', visibility: 'Public', folder_id: folder.folder_id, file_type: 'image', content_type: 'image/png' });

    // Pieces that start and end inside parts, cross one or two boundaries, and fill one exactly.
    const sizes = [1, 3 * MiB, 2 * MiB + 7, 5 * MiB, MiB - 1, 11 * MiB];
    let offset = 0;
    let last = created;
    for (const size of sizes) {
      const piece = bytes.subarray(offset, Math.min(bytes.length, offset + size));
      if (piece.length === 0) break;
      last = await c.patch(location, offset, piece);
      offset += piece.length;
      expect(last.status, `PATCH to ${offset}`).toBe(204);
      expect(offsetOf(last)).toBe(offset);
      expect(offsetOf(await c.head(location))).toBe(offset);
      if (offset < bytes.length) expect(last.headers['coffer-file-id']).toBeUndefined();
    }
    expect(offset).toBe(bytes.length);
    expect(last.headers['coffer-file-id']).toBe(id);
    expect(last.headers['upload-expires']).toBeUndefined();
    const ready = (await o.post('/collections/file/get', { file_id: id })).body;
    expect(ready).toMatchObject({ status: 'ready', size: bytes.length, sha256: sha256(bytes) });
    expect(sha256(await readStoredObject(o, id))).toBe(sha256(bytes));
    const events = await o.origin.stores.meta.eventsAfter(0, 1000);
    expect(events.some((e) => e.type === 'file.ready' && e.file_id === id)).toBe(true);
    // A finished upload answers HEAD with its whole length and the file; a PATCH of nothing at the end is answered the same.
    const done = await c.head(location);
    expect([offsetOf(done), done.headers['coffer-file-id']]).toEqual([bytes.length, id]);
    expect(offsetOf(await c.patch(location, bytes.length, Buffer.alloc(0)))).toBe(bytes.length);
    expect(await storedTails(o)).toEqual([]);
  });

  it('an upload of 0 bytes is a ready file as soon as it is created', async () => {
    const created = await c.create(0, { filename: 'empty.txt' });
    expect(created.status).toBe(201);
    expect(created.headers['upload-offset']).toBe('0');
    const id = created.headers['coffer-file-id']!;
    expect((await o.post('/collections/file/get', { file_id: id })).body).toMatchObject({ status: 'ready', size: 0, sha256: sha256(Buffer.alloc(0)) });
  });

  it('keeps the bytes that arrived before a PATCH was cut off, and resumes from there', async () => {
    const bytes = randomBytes(7 * MiB + 3);
    const location = (await c.create(bytes.length)).headers.location!;
    // The body says 7 MiB and the connection closes after 6 MiB.
    const cut = await c.patch(location, 0, slowly(bytes.subarray(0, 6 * MiB), 256 * 1024, 1), { 'content-length': String(bytes.length) }, true)
      .then((a) => a.status, () => 'cut');
    expect(cut).toBe('cut');
    let offset = -1;
    for (let i = 0; i < 100; i++) {
      const head = await c.head(location);
      offset = offsetOf(head);
      // The origin saves what arrived once it sees the connection gone; a PATCH in progress answers 409.
      const probe = await c.patch(location, offset, Buffer.alloc(0));
      if (probe.status === 204) break;
      await sleep(50);
    }
    // What arrived before the close is kept: all of it but what was still in the origin's socket buffers.
    expect(offset).toBeGreaterThan(5 * MiB);
    expect(offset).toBeLessThanOrEqual(6 * MiB);
    const rest = await c.patch(location, offset, bytes.subarray(offset));
    expect(rest.status).toBe(204);
    expect((await o.post('/collections/file/get', { file_id: rest.headers['coffer-file-id'] })).body.sha256).toBe(sha256(bytes));
  });
});

/*
 * The statuses the tus 1.0.0 specification names, and where each is tested:
 * core: 412 (Tus-Resumable, with Tus-Version), 415 (PATCH Content-Type), 409 (Upload-Offset),
 *   404 (HEAD/PATCH of an unknown upload, HEAD without Upload-Offset) — here;
 * creation: 413 (over Tus-Max-Size), 400 (no usable length, Upload-Defer-Length) — here;
 * creation-with-upload: 413 (a body past Upload-Length) — here;
 * expiration: 410, then 404 once removed — tus-extensions.test.ts;
 * checksum: 400 (unsupported algorithm), 460 (mismatch; nothing kept) — tus-extensions.test.ts;
 * termination: 204, then 404 — tus-extensions.test.ts;
 * concatenation: 403 (PATCH of a final upload), 400 (final with Upload-Length, unfinished
 *   partial uploads), 413 (final over Tus-Max-Size) — tus-extensions.test.ts and here;
 * and Coffer's own: 401, 403 (keys, grants) — here and tus-access.test.ts; 409 upload_busy — here.
 */
describe('error statuses', () => {
  let location: string;
  beforeAll(async () => {
    location = (await c.create(6 * MiB, { filename: 'target.bin' })).headers.location!;
    expect((await c.patch(location, 0, randomBytes(100))).status).toBe(204);
  });

  it('412 without "Tus-Resumable: 1.0.0", naming the version in Tus-Version', async () => {
    for (const method of ['POST', 'PATCH', 'DELETE', 'HEAD']) {
      for (const version of [undefined, '0.2.2']) {
        const url = method === 'POST' ? '/tus' : location;
        const a = await c.call({ method, url, noTusResumable: true, headers: version ? { 'tus-resumable': version } : {} });
        expect(a.status, `${method} ${version}`).toBe(412);
        expect(a.headers['tus-version']).toBe('1.0.0');
        if (method !== 'HEAD') expectTusError(a, 412, 'unsupported_tus_version');
      }
    }
    expect(offsetOf(await c.head(location))).toBe(100);
  });

  it('400 for a missing or malformed Upload-Length, Upload-Defer-Length, Upload-Metadata or metadata value', async () => {
    expectTusError(await c.create(null), 400, 'invalid_header', { field: 'Upload-Length' });
    for (const bad of ['abc', '-1', '1.5', '', '1e3']) expectTusError(await c.call({ method: 'POST', url: '/tus', headers: { 'upload-length': bad, 'upload-metadata': tusMetadata({ filename: 'a' }) } }), 400, 'invalid_header', { field: 'Upload-Length' });
    expectTusError(await c.create(null, { filename: 'a' }, { 'upload-defer-length': '1' }), 400, 'invalid_header', { field: 'Upload-Defer-Length' });
    expectTusError(await c.create(10, {}), 400, 'missing_filename', { field: 'filename' });
    expectTusError(await c.create(10, { filename: null }), 400, 'invalid_metadata', { field: 'filename' });
    for (const raw of ['filename', 'filename !!!', 'filename YQ==,filename Yg==', 'file name YQ==', `filename ${Buffer.from([0xff, 0xfe]).toString('base64')}`]) {
      const a = await c.call({ method: 'POST', url: '/tus', headers: { 'upload-length': '10', 'upload-metadata': raw } });
      expect(a.status, raw).toBe(400);
      expect(a.json?.error?.code, raw).toBe('invalid_metadata');
    }
    expectTusError(await c.create(10, { filename: 'a/b' }), 400, 'invalid_name', { field: 'filename' });
    expectTusError(await c.create(10, { filename: 'a', filetype: 'not a type' }), 400, 'invalid_content_type', { field: 'filetype' });
    expectTusError(await c.create(10, { filename: 'a', visibility: 'Everyone' }), 400, 'invalid_visibility');
    expectTusError(await c.create(10, { filename: 'a', file_type: 'spreadsheet' }), 400, 'invalid_file_type');
    expectTusError(await c.create(10, { filename: 'a', folder_id: 'no-such-folder' }), 404, 'folder_not_found');
  });

  it('413 for an Upload-Length over Tus-Max-Size, and for bytes past the upload\'s length', async () => {
    expectTusError(await c.create(MAX + 1), 413, 'file_too_large');
    const small = (await c.create(10)).headers.location!;
    expectTusError(await c.patch(small, 0, randomBytes(11)), 413, 'upload_length_exceeded');
    // Chunked, so the length is only known as the bytes come.
    expectTusError(await c.patch(small, 0, slowly(randomBytes(11), 4, 1)), 413, 'upload_length_exceeded');
    expect(offsetOf(await c.head(small))).toBe(0);
    // creation-with-upload: a POST whose body is longer than its Upload-Length keeps none of it.
    const over = await c.call({ method: 'POST', url: '/tus', body: randomBytes(11), headers: { 'upload-length': '10', 'upload-metadata': tusMetadata({ filename: 'over.bin' }), 'content-type': 'application/offset+octet-stream' } });
    expectTusError(over, 413, 'upload_length_exceeded');
    expect(offsetOf(await c.head(over.headers.location!))).toBe(0);
  });

  it('413 for a final upload whose partial uploads together are over Tus-Max-Size', async () => {
    const tiny = await startTestOrigin({ COFFER_MAX_FILE_SIZE: '10' });
    try {
      const t = tusClient(tiny.url, `Bearer ${tiny.key}`);
      const partials: string[] = [];
      for (const bytes of [randomBytes(6), randomBytes(5)]) {
        const created = await t.call({ method: 'POST', url: '/tus', body: bytes, headers: { 'upload-length': String(bytes.length), 'upload-concat': 'partial', 'content-type': 'application/offset+octet-stream' } });
        expect(offsetOf(created)).toBe(bytes.length);
        partials.push(created.headers.location!);
      }
      expectTusError(await t.create(null, { filename: 'joined.bin' }, { 'upload-concat': `final;${partials.join(' ')}` }), 413, 'file_too_large');
      // Nothing was used up: each partial upload is still there, whole.
      for (const [i, url] of partials.entries()) expect(offsetOf(await t.head(url))).toBe(6 - i);
    } finally {
      await tiny.close();
    }
  });

  it('415 for a PATCH (or a POST with a body) whose Content-Type is not application/offset+octet-stream', async () => {
    for (const type of [undefined, 'application/json', 'application/octet-stream']) {
      expectTusError(await c.patch(location, 100, randomBytes(10), { 'content-type': type }), 415, 'unsupported_media_type');
    }
    expectTusError(await c.call({ method: 'POST', url: '/tus', body: Buffer.from('{}'), headers: { 'content-type': 'application/json', 'upload-length': '2', 'upload-metadata': tusMetadata({ filename: 'a' }) } }),
      415, 'unsupported_media_type');
    expect(offsetOf(await c.head(location))).toBe(100);
  });

  it('400 for a PATCH without a usable Upload-Offset; 409 for one that is not the upload\'s offset', async () => {
    expectTusError(await c.patch(location, 0, randomBytes(10), { 'upload-offset': undefined }), 400, 'invalid_header', { field: 'Upload-Offset' });
    expectTusError(await c.patch(location, 0, randomBytes(10), { 'upload-offset': 'x' }), 400, 'invalid_header', { field: 'Upload-Offset' });
    for (const wrong of [0, 99, 101, 6 * MiB]) expectTusError(await c.patch(location, wrong, randomBytes(10)), 409, 'offset_mismatch', { offset: 100 });
    expect(offsetOf(await c.head(location))).toBe(100);
  });

  it('404 for an upload that does not exist, or an upload of the other flow', async () => {
    const plain = await uploadBytes(o, Buffer.from('plain flow'));
    for (const url of ['/tus/no-such-upload', `/tus/${plain.file_id}`]) {
      const head = await c.head(url);
      expect(head.status).toBe(404);
      expect(head.headers['upload-offset']).toBeUndefined();
      expect(head.headers['tus-resumable']).toBe('1.0.0');
      expectTusError(await c.patch(url, 0, randomBytes(1)), 404, 'upload_not_found');
      expectTusError(await c.remove(url), 404, 'upload_not_found');
    }
  });

  it('401 without a credential; the answer still speaks tus', async () => {
    const anonymous = tusClient(o.url, null);
    expectTusError(await anonymous.create(10), 401, 'unauthorized');
    expect((await anonymous.head(location)).status).toBe(401);
    expectTusError(await anonymous.patch(location, 100, randomBytes(1)), 401, 'unauthorized');
  });

  it('409 upload_busy for a PATCH while another PATCH of the same upload is running; the first one keeps its bytes', async () => {
    const bytes = randomBytes(3 * MiB);
    const url = (await c.create(bytes.length)).headers.location!;
    const first = c.patch(url, 0, slowly(bytes, 64 * 1024, 20, 64 * 1024));
    await sleep(300);
    expectTusError(await c.patch(url, 0, bytes), 409, 'upload_busy');
    const done = await first;
    expect(done.status).toBe(204);
    expect((await o.post('/collections/file/get', { file_id: done.headers['coffer-file-id'] })).body.sha256).toBe(sha256(bytes));
  });
});
