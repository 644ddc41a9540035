/**
 * tus 1.0's extensions at /tus (contract §9): creation-with-upload, checksum, termination,
 * expiration, concatenation, X-HTTP-Method-Override and CORS for browsers, over real HTTP,
 * with what each leaves in the blob store.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as tusJs from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { openUploadIds, readStoredObject, storedObjectIds } from '../helpers/stored-object.js';
import { MiB, offsetOf, storedTails, tusClient, tusMetadata, type TusAnswer } from '../helpers/tus.js';
import { sha256, sleep } from '../kit/index.js';

let o: TestOrigin;
let c: ReturnType<typeof tusClient>;

beforeAll(async () => {
  o = await startTestOrigin();
  c = tusClient(o.url, `Bearer ${o.key}`);
});
afterAll(async () => o?.close());

const fileOf = async (id: string | undefined) => (await o.post('/collections/file/get', { file_id: id })).body;
const idOf = (location: string): string => location.slice(location.lastIndexOf('/') + 1);
function expectTusError(a: TusAnswer, status: number, code: string, details?: Record<string, unknown>) {
  expectError({ status: a.status, json: a.json, body: a.body, headers: a.headers }, status, code, details);
}
const digest = (algorithm: string, b: Buffer) => `${algorithm} ${createHash(algorithm).update(b).digest('base64')}`;

describe('creation-with-upload', () => {
  it('takes the first bytes with the POST, as a PATCH at offset 0 would', async () => {
    const bytes = randomBytes(10 * MiB);
    const first = bytes.subarray(0, 6 * MiB + 3);
    const created = await c.call({
      method: 'POST', url: '/tus', body: first,
      headers: { 'upload-length': String(bytes.length), 'upload-metadata': tusMetadata({ filename: 'first.bin' }), 'content-type': 'application/offset+octet-stream' },
    });
    expect(created.status).toBe(201);
    expect(offsetOf(created)).toBe(first.length);
    const location = created.headers.location!;
    expect(offsetOf(await c.head(location))).toBe(first.length);
    const rest = await c.patch(location, first.length, bytes.subarray(first.length));
    expect((await fileOf(rest.headers['coffer-file-id'])).sha256).toBe(sha256(bytes));
  });

  it('a POST carrying every byte answers with the ready file', async () => {
    const bytes = randomBytes(1000);
    const created = await c.call({
      method: 'POST', url: '/tus', body: bytes,
      headers: { 'upload-length': '1000', 'upload-metadata': tusMetadata({ filename: 'whole.bin' }), 'content-type': 'application/offset+octet-stream', 'upload-checksum': digest('sha1', bytes) },
    });
    expect(created.status).toBe(201);
    expect(created.headers['coffer-file-id']).toBe(idOf(created.headers.location!));
    expect(await fileOf(created.headers['coffer-file-id'])).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
  });
});

describe('checksum', () => {
  it('keeps a body that matches Upload-Checksum (sha256, sha1, md5), and none of one that does not (460)', async () => {
    const bytes = randomBytes(13 * MiB + 1);
    const location = (await c.create(bytes.length)).headers.location!;
    // Pieces that cross part boundaries: a mismatch must take back parts already streamed to the store.
    const pieces: Array<[number, number, string]> = [[0, 3 * MiB, 'sha256'], [3 * MiB, 9 * MiB, 'sha1'], [9 * MiB, bytes.length, 'md5']];
    for (const [from, to, algorithm] of pieces) {
      const piece = bytes.subarray(from, to);
      const wrong = Buffer.from(piece);
      wrong[wrong.length - 1]! ^= 1;
      expectTusError(await c.patch(location, from, wrong, { 'upload-checksum': digest(algorithm, piece) }), 460, 'checksum_mismatch');
      expect(offsetOf(await c.head(location))).toBe(from);
      const ok = await c.patch(location, from, piece, { 'upload-checksum': digest(algorithm, piece) });
      expect(ok.status, algorithm).toBe(204);
      expect(offsetOf(ok)).toBe(to);
      if (to === bytes.length) expect((await fileOf(ok.headers['coffer-file-id'])).sha256).toBe(sha256(bytes));
    }
    expect(sha256(await readStoredObject(o, idOf(location)))).toBe(sha256(bytes));
  });

  it('400 for an algorithm it does not support or a malformed checksum', async () => {
    const location = (await c.create(10)).headers.location!;
    const body = randomBytes(10);
    expectTusError(await c.patch(location, 0, body, { 'upload-checksum': 'crc32 AAAAAA==' }), 400, 'unsupported_checksum_algorithm', { field: 'Upload-Checksum' });
    for (const bad of ['sha1', 'sha1 !!!', 'sha1 AAAA', `sha256 ${createHash('sha1').update(body).digest('base64')}`]) {
      expectTusError(await c.patch(location, 0, body, { 'upload-checksum': bad }), 400, 'invalid_header', { field: 'Upload-Checksum' });
    }
    expect(offsetOf(await c.head(location))).toBe(0);
  });
});

describe('termination', () => {
  it('DELETE discards an unfinished upload and every byte it holds; the URL then answers 404', async () => {
    const location = (await c.create(8 * MiB)).headers.location!;
    expect((await c.patch(location, 0, randomBytes(6 * MiB + 11))).status).toBe(204);
    expect((await storedTails(o)).some((t) => t.startsWith(idOf(location)))).toBe(true);
    const uploadsBefore = (await openUploadIds(o)).length;
    const done = await c.remove(location);
    expect(done.status).toBe(204);
    expect(done.headers['tus-resumable']).toBe('1.0.0');
    expect((await c.head(location)).status).toBe(404);
    expectTusError(await c.patch(location, 6 * MiB + 11, randomBytes(1)), 404, 'upload_not_found');
    expectTusError(await c.remove(location), 404, 'upload_not_found');
    expectError(await o.post('/collections/file/get', { file_id: idOf(location) }), 404, 'file_not_found');
    // The multipart upload and the tail go with it (the trash runs after the answer).
    for (let i = 0; i < 50 && ((await storedTails(o)).some((t) => t.startsWith(idOf(location))) || (await openUploadIds(o)).length >= uploadsBefore); i++) await sleep(100);
    expect((await storedTails(o)).filter((t) => t.startsWith(idOf(location)))).toEqual([]);
    expect((await openUploadIds(o)).length).toBe(uploadsBefore - 1);
  });

  it('a finished upload is a file: DELETE answers 409 and leaves it', async () => {
    const done = await c.call({ method: 'POST', url: '/tus', body: Buffer.from('kept'), headers: { 'upload-length': '4', 'upload-metadata': tusMetadata({ filename: 'kept.txt' }), 'content-type': 'application/offset+octet-stream' } });
    expectTusError(await c.remove(done.headers.location!), 409, 'upload_completed');
    expect((await fileOf(done.headers['coffer-file-id'])).status).toBe('ready');
  });
});

describe('expiration', () => {
  it('names when an unfinished upload expires; past it, 410 until the sweep removes it, then 404', async () => {
    const location = (await c.create(7 * MiB)).headers.location!;
    const patched = await c.patch(location, 0, randomBytes(6 * MiB));
    const file = await o.origin.stores.meta.read.getFile(idOf(location));
    expect(Date.parse(patched.headers['upload-expires']!)).toBe(Math.floor(file!.upload_expires_at! / 1000) * 1000);
    expect(patched.headers['upload-expires']).toBe((await c.head(location)).headers['upload-expires']);
    // As if COFFER_UPLOAD_TTL had passed.
    await o.origin.stores.meta.transaction((tx) => tx.updateFile(idOf(location), { upload_expires_at: Date.now() - 1000 }));
    expect((await c.head(location)).status).toBe(410);
    expectTusError(await c.patch(location, 6 * MiB, randomBytes(1)), 410, 'upload_expired');
    await o.origin.service.uploads.expire();
    await o.origin.service.emptyTrash();
    expect((await c.head(location)).status).toBe(404);
    expect((await storedTails(o)).filter((t) => t.startsWith(idOf(location)))).toEqual([]);
  });

  it('takes its time from COFFER_UPLOAD_TTL, and the origin\'s own sweep removes it', async () => {
    const short = await startTestOrigin({ COFFER_UPLOAD_TTL: '2' });
    try {
      const s = tusClient(short.url, `Bearer ${short.key}`);
      const created = await s.create(5 * MiB + 1);
      const left = Date.parse(created.headers['upload-expires']!) - Date.now();
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThanOrEqual(2000);
      expect((await s.patch(created.headers.location!, 0, randomBytes(100))).status).toBe(204);
      let status = 0;
      for (let i = 0; i < 100 && status !== 404; i++) {
        await sleep(100);
        status = (await s.head(created.headers.location!)).status;
      }
      expect(status).toBe(404);
    } finally {
      await short.close();
    }
  });
});

describe('concatenation', () => {
  it('makes one file of partial uploads sent side by side; the partial uploads are never files', async () => {
    const pieces = [randomBytes(5 * MiB + 1), randomBytes(3 * MiB), randomBytes(2 * MiB - 1), randomBytes(0)];
    const partials = await Promise.all(pieces.map(async (piece) => {
      const created = await c.create(piece.length, {}, { 'upload-concat': 'partial' });
      expect(created.status).toBe(201);
      const location = created.headers.location!;
      if (piece.length > 0) {
        const half = Math.floor(piece.length / 2);
        expect((await c.patch(location, 0, piece.subarray(0, half))).status).toBe(204);
        const done = await c.patch(location, half, piece.subarray(half));
        expect(done.status).toBe(204);
        expect(done.headers['coffer-file-id']).toBeUndefined();
      }
      const head = await c.head(location);
      expect([head.headers['upload-concat'], offsetOf(head)]).toEqual(['partial', piece.length]);
      return location;
    }));
    // Never a file: not listed, not found, not searchable, not completable through the other flow.
    for (const location of partials) {
      expectError(await o.post('/collections/file/get', { file_id: idOf(location) }), 404, 'file_not_found');
      expectError(await o.post('/collections/upload/complete-upload', { file_id: idOf(location) }), 404, 'file_not_found');
      expectError(await o.post('/collections/upload/status', { file_id: idOf(location) }), 404, 'file_not_found');
    }
    const listed = JSON.stringify([(await o.post('/collections/list', { limit: 1000 })).body, (await o.post('/collections/search', { query: 'partial' })).body]);
    for (const location of partials) expect(listed).not.toContain(idOf(location));

    // Relative and absolute URLs alike.
    const urls = partials.map((u, i) => (i % 2 ? u : new URL(u).pathname));
    const final = await c.create(null, { filename: 'joined.bin', visibility: 'Public' }, { 'upload-concat': `final;${urls.join(' ')}` });
    expect(final.status).toBe(201);
    const whole = Buffer.concat(pieces);
    expect(offsetOf(final)).toBe(whole.length);
    const id = final.headers['coffer-file-id']!;
    expect(id).toBe(idOf(final.headers.location!));
    expect(await fileOf(id)).toMatchObject({ status: 'ready', name: 'joined.bin', visibility: 'Public', size: whole.length, sha256: sha256(whole) });
    const head = await c.head(final.headers.location!);
    expect(head.headers['upload-concat']).toBe(`final;${partials.join(' ')}`);
    expect(offsetOf(head)).toBe(whole.length);
    expectTusError(await c.patch(final.headers.location!, whole.length, Buffer.alloc(0)), 403, 'forbidden');
    // A partial upload serves one final upload: it is gone, with its bytes.
    for (const location of partials) expect((await c.head(location)).status).toBe(404);
    await o.origin.service.emptyTrash();
    const objects = await storedObjectIds(o);
    for (const location of partials) expect(objects).not.toContain(idOf(location));
  });

  it('refuses a final upload of unfinished, unknown or non-partial uploads, or with a length or a body', async () => {
    const unfinished = (await c.create(10, {}, { 'upload-concat': 'partial' })).headers.location!;
    const single = (await c.create(10)).headers.location!;
    const finished = (await c.create(3, {}, { 'upload-concat': 'partial' })).headers.location!;
    await c.patch(finished, 0, Buffer.from('abc'));
    const final = (list: string, headers: Record<string, string> = {}, meta: Record<string, string> = { filename: 'f.bin' }) =>
      c.create(null, meta, { 'upload-concat': `final;${list}`, ...headers });
    expectTusError(await final(unfinished), 400, 'invalid_request', { field: 'Upload-Concat', offset: 0 });
    expectTusError(await final(single), 400, 'invalid_request', { field: 'Upload-Concat' });
    expectTusError(await final(`${finished} /tus/no-such-upload`), 404, 'upload_not_found');
    expectTusError(await final(''), 400, 'invalid_request', { field: 'Upload-Concat' });
    expectTusError(await final('/elsewhere/x'), 400, 'invalid_header', { field: 'Upload-Concat' });
    expectTusError(await final(finished, { 'upload-length': '3' }), 400, 'invalid_header', { field: 'Upload-Concat' });
    expectTusError(await final(finished, {}, {}), 400, 'missing_filename');
    expectTusError(await c.create(10, {}, { 'upload-concat': 'sideways' }), 400, 'invalid_header', { field: 'Upload-Concat' });
    // None of these used the finished partial upload up.
    expect((await final(finished)).status).toBe(201);
  });

  it('tus-js-client\'s parallel uploads (partial uploads, then a final one) make the file', async () => {
    const bytes = randomBytes(11 * MiB + 7);
    const location = await new Promise<string>((resolve, reject) => {
      const upload = new tusJs.Upload(bytes, {
        endpoint: `${o.url}/tus`, headers: { authorization: `Bearer ${o.key}` }, parallelUploads: 3,
        metadata: { filename: 'parallel.bin' }, retryDelays: [], onError: reject, onSuccess: () => resolve(upload.url!),
      });
      upload.start();
    });
    expect((await fileOf(idOf(location))).sha256).toBe(sha256(bytes));
  });
});

describe('X-HTTP-Method-Override', () => {
  it('makes a POST to an upload its PATCH, HEAD or DELETE', async () => {
    const location = (await c.create(20)).headers.location!;
    const post = (method: string | undefined, body?: Buffer, headers: Record<string, string> = {}) =>
      c.call({ method: 'POST', url: location, body, headers: { ...(method ? { 'x-http-method-override': method } : {}), ...headers } });
    const patched = await post('PATCH', randomBytes(12), { 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' });
    expect([patched.status, offsetOf(patched)]).toEqual([204, 12]);
    const head = await post('HEAD');
    expect([head.status, offsetOf(head)]).toEqual([200, 12]);
    expectTusError(await post(undefined), 400, 'invalid_header', { field: 'X-HTTP-Method-Override' });
    expectTusError(await post('GET'), 400, 'invalid_header', { field: 'X-HTTP-Method-Override' });
    expect((await post('DELETE')).status).toBe(204);
    expect((await c.head(location)).status).toBe(404);
  });
});

describe('CORS', () => {
  it('answers preflights and lets pages read the tus headers, refusals included', async () => {
    const page = 'https://app.example';
    const pre = await c.call({
      method: 'OPTIONS', url: '/tus/anything', noTusResumable: true,
      headers: { origin: page, 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization,tus-resumable,upload-offset,content-type' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe('*');
    expect(pre.headers['access-control-allow-methods']).toMatch(/PATCH/);
    for (const h of ['Authorization', 'Tus-Resumable', 'Upload-Offset', 'Upload-Metadata', 'Upload-Concat', 'Upload-Checksum', 'X-HTTP-Method-Override']) {
      expect(pre.headers['access-control-allow-headers']).toContain(h);
    }
    const created = await c.create(4, { filename: 'cors.txt' }, { origin: page });
    expect(created.headers['access-control-allow-origin']).toBe('*');
    const exposed = created.headers['access-control-expose-headers']!.split(', ');
    for (const h of ['Location', 'Upload-Offset', 'Upload-Length', 'Tus-Resumable', 'Tus-Version', 'Tus-Max-Size', 'Tus-Extension', 'Upload-Expires', 'Upload-Metadata', 'Upload-Concat', 'Coffer-File-Id', 'Retry-After']) {
      expect(exposed).toContain(h);
    }
    const refused = await tusClient(o.url, null).create(4, { filename: 'cors.txt' }, { origin: page });
    expect(refused.status).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe('*');
    // No cookie is ever honoured across origins: credentials are not allowed.
    expect(pre.headers['access-control-allow-credentials']).toBeUndefined();
  });
});
