/**
 * Attacks on the one upload engine (src/service/uploads/) from outside, over HTTP: parts out of
 * order, sent again (same or other bytes, before or after later parts), racing complete, abort
 * and delete; stalled and cut-off bodies; tus offsets and concurrency; S3 multipart re-sent in
 * another order, two completes at once. After each: the record's SHA-256 and size are those
 * of the bytes meant, and the bytes served (S3 GetObject) are exactly those.
 *
 * Found here: a tus PATCH running past Upload-Length was answered 413 upload_length_exceeded
 * yet kept the whole parts it had filled (and, when it held every byte of the upload, the next
 * HEAD made a file of it); fixed in src/service/uploads/tus.ts (a Content-Length past the
 * length is refused before any byte, a chunked body's parts are recorded once it ended).
 */
import { randomBytes } from 'node:crypto';
import { GetObjectCommand, CreateMultipartUploadCommand, UploadPartCommand, CompleteMultipartUploadCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';
import { makeKey, s3Client, type S3Key } from '../helpers/s3-api.js';
import { MiB, offsetOf, tusClient } from '../helpers/tus.js';
import { sha256, sleep } from '../kit/index.js';

const CHUNK = 5 * MiB;

describe('upload engine attacks (disk store)', () => {
  let o: TestOrigin;
  let key: S3Key;
  let bucketName: string;
  let folderId: string;
  beforeAll(async () => {
    o = await startTestOrigin({ COFFER_IDLE_TIMEOUT_MS: '2000' });
    key = await makeKey(o, ['read', 'write']);
    bucketName = 'attacks';
    const f = await o.post('/collections/folder/create', { name: bucketName, visibility: 'Private' });
    expect(f.status, JSON.stringify(f.body)).toBe(200);
    folderId = f.body.folder_id;
  });
  afterAll(async () => o?.close());

  let counter = 0;
  const initiate = async (size: number) => {
    const r = await o.post('/collections/upload/file', { name: `f${++counter}.bin`, visibility: 'Private', size, file_type: 'other', folder_id: folderId });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const q = (s: any, n: number) => `?bucket=${encodeURIComponent(s.bucket)}&key=${encodeURIComponent(s.key)}&uploadId=${encodeURIComponent(s.uploadId)}&fileId=${s.fileId}&partNumber=${n}`;
  const raw = (s: any, n: number, body: Buffer | AsyncIterable<Buffer>, cut = false): Promise<RawAnswer> =>
    rawRequest(o.url, '/collections/upload/file-progress' + q(s, n), {
      method: 'POST', headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/octet-stream' }, body, cut, timeoutMs: 0,
    });
  const json = (s: any, n: number, body: Buffer) =>
    o.post('/collections/upload/file-progress', { bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: n, body: body.toString('base64') });
  const complete = (id: string) => o.post('/collections/upload/complete-upload', { file_id: id });
  const partOf = (bytes: Buffer, n: number) => bytes.subarray((n - 1) * CHUNK, n * CHUNK);

  /** The file's record and its bytes as served match `bytes`. */
  const expectFile = async (fileId: string, bytes: Buffer, where = '') => {
    const got = await o.post('/collections/file/get', { file_id: fileId });
    expect(got.status, where + JSON.stringify(got.body)).toBe(200);
    expect({ status: got.body.status, size: got.body.size, sha256: got.body.sha256 }, where).toEqual({ status: 'ready', size: bytes.length, sha256: sha256(bytes) });
    const { client } = s3Client(o.origin.s3Url, key);
    try {
      const obj = await client.send(new GetObjectCommand({ Bucket: bucketName, Key: got.body.name }));
      const served = Buffer.from(await obj.Body!.transformToByteArray());
      expect({ size: served.length, sha256: sha256(served) }, where + ' served').toEqual({ size: bytes.length, sha256: sha256(bytes) });
    } finally {
      client.destroy();
    }
  };

  // Each send is a part number, and whether it carries other bytes than the file's (a version later replaced).
  const RESENDS: Array<[string, number, Array<[number, 'other' | 'file']>]> = [
    ['raw parts out of order, one resent with other bytes after later parts', 1234, [[1, 'other'], [3, 'file'], [2, 'file'], [1, 'file']]],
    ['in-order parts, then part 1 resent with other bytes (hash as bytes pass)', 99, [[1, 'other'], [2, 'other'], [3, 'file'], [2, 'file'], [1, 'file']]],
  ];
  for (const [title, extra, sends] of RESENDS) {
    it(title, async () => {
      const bytes = randomBytes(2 * CHUNK + extra);
      const s = await initiate(bytes.length);
      for (const [n, which] of sends) expect((await raw(s, n, which === 'file' ? partOf(bytes, n) : randomBytes(CHUNK))).status).toBe(200);
      const done = await complete(s.fileId);
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      await expectFile(s.fileId, bytes);
    });
  }

  it('in-order parts resent with the same bytes, JSON and raw mixed', async () => {
    const bytes = randomBytes(2 * CHUNK + 5);
    const s = await initiate(bytes.length);
    for (const n of [1, 2, 3, 1, 2, 3]) expect((await (n % 2 ? raw(s, n, partOf(bytes, n)) : json(s, n, partOf(bytes, n)))).status).toBe(200);
    expect((await complete(s.fileId)).status).toBe(200);
    await expectFile(s.fileId, bytes);
  });

  it('wrong sizes: short, long, last part larger', async () => {
    const bytes = randomBytes(CHUNK + 10);
    const s = await initiate(bytes.length);
    const short = await raw(s, 1, randomBytes(CHUNK - 1));
    expect([short.status, short.json?.error?.code]).toEqual([400, 'part_size_mismatch']);
    const long = await raw(s, 1, randomBytes(CHUNK + 1));
    expect([long.status, long.json?.error?.code]).toEqual([400, 'part_size_mismatch']);
    const lastLong = await raw(s, 2, randomBytes(11));
    expect([lastLong.status, lastLong.json?.error?.code]).toEqual([400, 'part_size_mismatch']);
    const lastHuge = await raw(s, 2, randomBytes(CHUNK));
    expect([lastHuge.status, lastHuge.json?.error?.code]).toEqual([400, 'part_size_mismatch']);
    expect((await o.post('/collections/upload/status', { file_id: s.fileId })).body.received).toEqual([]);
    expect((await raw(s, 1, partOf(bytes, 1))).status).toBe(200);
    expect((await raw(s, 2, partOf(bytes, 2))).status).toBe(200);
    expect((await complete(s.fileId)).status).toBe(200);
    await expectFile(s.fileId, bytes);
  });

  it('zero-byte file: raw and JSON', async () => {
    for (const form of ['raw', 'json']) {
      const s = await initiate(0);
      const r = form === 'raw' ? await raw(s, 1, Buffer.alloc(0)) : await json(s, 1, Buffer.alloc(0));
      expect(r.status, JSON.stringify((r as any).json ?? (r as any).body)).toBe(200);
      const done = await complete(s.fileId);
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      await expectFile(s.fileId, Buffer.alloc(0), form);
    }
  });

  it('a part cut off mid-body, then resent; a stalled part 1 while another part 1 completes', async () => {
    const bytes = randomBytes(2 * CHUNK + 77);
    const s = await initiate(bytes.length);
    await raw(s, 1, (async function* () { yield randomBytes(CHUNK / 2); })(), true).catch(() => undefined);
    expect((await raw(s, 1, partOf(bytes, 1))).status).toBe(200);
    // A stalled part 2 with other bytes holds its writer while the right one comes and complete runs.
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const stalled = raw(s, 2, (async function* () { yield randomBytes(CHUNK / 2); await gate; yield randomBytes(CHUNK / 2); })()).catch((e) => e);
    await sleep(200);
    expect((await raw(s, 2, partOf(bytes, 2))).status).toBe(200);
    expect((await raw(s, 3, partOf(bytes, 3))).status).toBe(200);
    const done = await complete(s.fileId);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    release();
    const late = await stalled;
    if (!(late instanceof Error)) expect(late.status, late.body.toString()).not.toBe(200);
    await expectFile(s.fileId, bytes);
  });

  it('parts in parallel racing complete: a 200 complete is always the right file', async () => {
    for (let round = 0; round < 3; round++) {
      const bytes = randomBytes(3 * CHUNK + 3);
      const s = await initiate(bytes.length);
      const parts = [4, 3, 2, 1].map((n) => raw(s, n, partOf(bytes, n)));
      const completes = [0, 5, 20, 60, 150].map(async (ms) => { await sleep(ms); return complete(s.fileId); });
      const answers = await Promise.all(parts);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
      const results = await Promise.all(completes);
      for (const r of results) expect([200, 409], JSON.stringify(r.body)).toContain(r.status);
      const final = await complete(s.fileId);
      expect(final.status, JSON.stringify(final.body)).toBe(200);
      await expectFile(s.fileId, bytes, `round ${round}`);
    }
  });

  it('a part resent with other bytes racing complete: the file is one of the two versions, and a 200 part is in it', async () => {
    for (let round = 0; round < 4; round++) {
      const bytes = randomBytes(2 * CHUNK + 3);
      const other = Buffer.concat([randomBytes(CHUNK), bytes.subarray(CHUNK)]);
      const s = await initiate(bytes.length);
      for (const n of [1, 2, 3]) expect((await raw(s, n, partOf(other, n))).status).toBe(200);
      const resend = (async () => { await sleep(round * 3); return raw(s, 1, partOf(bytes, 1)); })();
      const done = await complete(s.fileId);
      const re = await resend;
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      if (re.status === 200) await expectFile(s.fileId, bytes, `round ${round} resend 200`);
      else {
        expect(re.json?.error?.code, re.body.toString()).toBe('upload_completed');
        await expectFile(s.fileId, other, `round ${round} resend ${re.status}`);
      }
    }
  });

  it('complete racing abort, delete and a visibility switch', async () => {
    for (const rival of ['abort', 'delete', 'visibility']) {
      const bytes = randomBytes(CHUNK + 3);
      const s = await initiate(bytes.length);
      for (const n of [1, 2]) expect((await raw(s, n, partOf(bytes, n))).status).toBe(200);
      const other = rival === 'abort' ? o.post('/collections/upload/abort', { file_id: s.fileId })
        : rival === 'delete' ? o.post('/collections/file/delete', { file_id: s.fileId })
          : o.post('/collections/file/update', { file_id: s.fileId, visibility: 'Public' });
      const [done, r] = await Promise.all([complete(s.fileId), other]);
      const got = await o.post('/collections/file/get', { file_id: s.fileId });
      if (done.status === 200 && got.status === 200) await expectFile(s.fileId, bytes, rival);
      else {
        expect(got.status, `${rival}: ${done.status} ${JSON.stringify(done.body)} / ${r.status} ${JSON.stringify(r.body)}`).toBe(404);
        const list = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
        expect(list.body.files.map((f: any) => f.file_id)).not.toContain(s.fileId);
      }
      for (const a of [done, r]) if (a.status !== 200) expect(Object.keys(a.body), rival + JSON.stringify(a.body)).toEqual(['error']);
    }
  });

  it('tus: wrong offsets, concurrent PATCHes, HEAD during PATCH', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    const bytes = randomBytes(CHUNK + 1000);
    const made = await t.create(bytes.length, { filename: 'tus1.bin', folder_id: folderId });
    expect(made.status).toBe(201);
    const loc = made.headers.location!;
    const wrong = await t.patch(loc, 5, bytes.subarray(5, 100));
    expect([wrong.status, wrong.json?.error?.code]).toEqual([409, 'offset_mismatch']);
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const first = t.patch(loc, 0, (async function* () { yield bytes.subarray(0, 3 * MiB); await gate; yield bytes.subarray(3 * MiB, 4 * MiB); })());
    await sleep(200);
    const head = await t.head(loc);
    expect(head.status).toBe(200);
    const second = await t.patch(loc, 0, bytes.subarray(0, 10));
    expect([second.status, second.json?.error?.code]).toEqual([409, 'upload_busy']);
    release();
    const a = await first;
    expect(a.status, a.body.toString()).toBe(204);
    expect(offsetOf(a)).toBe(4 * MiB);
    const rest = await t.patch(loc, 4 * MiB, bytes.subarray(4 * MiB));
    expect(rest.status, rest.body.toString()).toBe(204);
    await expectFile(rest.headers['coffer-file-id']!, bytes, 'tus');
  });

  it('tus concatenation of partials', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    const pieces = [randomBytes(CHUNK + 7), randomBytes(3), randomBytes(0), randomBytes(2 * MiB)];
    const urls: string[] = [];
    for (const p of pieces) {
      const made = await t.create(p.length, { filename: 'part.bin' }, { 'upload-concat': 'partial' });
      expect(made.status, made.body.toString()).toBe(201);
      if (p.length > 0) expect((await t.patch(made.headers.location!, 0, p)).status).toBe(204);
      urls.push(made.headers.location!);
    }
    const final = await t.call({ method: 'POST', url: '/tus', headers: { 'upload-concat': `final;${urls.join(' ')}`, 'upload-metadata': `filename ${Buffer.from('concat.bin').toString('base64')},folder_id ${Buffer.from(folderId).toString('base64')}` } });
    expect(final.status, final.body.toString()).toBe(201);
    const head = await t.head(final.headers.location!);
    const id = final.headers['coffer-file-id'] ?? final.headers.location!.split('/').pop()!;
    expect(head.status).toBe(200);
    await expectFile(id, Buffer.concat(pieces), 'concat');
  });

  it('S3 multipart: parts re-uploaded in another order, two completes at once', async () => {
    const { client } = s3Client(o.origin.s3Url, key);
    try {
      const p = [randomBytes(CHUNK), randomBytes(CHUNK), randomBytes(1000)];
      const create = await client.send(new CreateMultipartUploadCommand({ Bucket: bucketName, Key: 'mp.bin' }));
      const up = (n: number, body: Buffer) => client.send(new UploadPartCommand({ Bucket: bucketName, Key: 'mp.bin', UploadId: create.UploadId, PartNumber: n, Body: body }));
      await up(3, randomBytes(1000));
      await up(2, randomBytes(CHUNK));
      await up(1, randomBytes(CHUNK));
      const e3 = await up(3, p[2]!);
      const e1 = await up(1, p[0]!);
      const e2 = await up(2, p[1]!);
      const parts = [{ PartNumber: 1, ETag: e1.ETag }, { PartNumber: 2, ETag: e2.ETag }, { PartNumber: 3, ETag: e3.ETag }];
      const both = await Promise.allSettled([0, 1].map(() => client.send(new CompleteMultipartUploadCommand({ Bucket: bucketName, Key: 'mp.bin', UploadId: create.UploadId, MultipartUpload: { Parts: parts } }))));
      expect(both.some((r) => r.status === 'fulfilled'), JSON.stringify(both.map((r) => r.status === 'rejected' ? String(r.reason) : 'ok'))).toBe(true);
      const obj = await client.send(new GetObjectCommand({ Bucket: bucketName, Key: 'mp.bin' }));
      const served = Buffer.from(await obj.Body!.transformToByteArray());
      expect(sha256(served)).toBe(sha256(Buffer.concat(p)));
      const list = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      const rec = list.body.files.filter((f: any) => f.name === 'mp.bin');
      expect(rec.length).toBe(1);
      await expectFile(rec[0].file_id, Buffer.concat(p), 's3 mp');
    } finally {
      client.destroy();
    }
  });

  it('S3 PutObject cut off mid-body leaves no object; the process answers after', async () => {
    const { client } = s3Client(o.origin.s3Url, key);
    try {
      const good = randomBytes(1000);
      await client.send(new PutObjectCommand({ Bucket: bucketName, Key: 'put.bin', Body: good }));
      // A signed PUT, cut off mid-body.
      const { presign } = await import('../helpers/s3-presign.js');
      const url = new URL(presign(o.origin.s3Url, key, 'PUT', `/${bucketName}/put.bin`));
      await rawRequest(url.origin, url.pathname + url.search, { method: 'PUT', headers: { 'content-length': String(2 * MiB) }, body: (async function* () { yield randomBytes(MiB); })(), cut: true, timeoutMs: 0 }).catch(() => undefined);
      await sleep(300);
      const obj = await client.send(new GetObjectCommand({ Bucket: bucketName, Key: 'put.bin' }));
      const served = Buffer.from(await obj.Body!.transformToByteArray());
      expect(sha256(served)).toBe(sha256(good));
    } finally {
      client.destroy();
    }
  });
  it('tus: bodies cut off at awkward points, resumed from HEAD', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    for (const cuts of [[CHUNK - 1, CHUNK + 1], [CHUNK, 2 * CHUNK], [1, CHUNK + 1, CHUNK + 2], [3 * MiB, 3 * MiB + 1]]) {
      const bytes = randomBytes(2 * CHUNK + 11);
      const made = await t.create(bytes.length, { filename: `cut-${cuts[0]}.bin`, folder_id: folderId });
      const loc = made.headers.location!;
      for (const cut of cuts) {
        const at = offsetOf(await t.head(loc));
        await t.patch(loc, at, (async function* () { yield bytes.subarray(at, cut); await sleep(50); })(), {}, true).catch(() => undefined);
        await sleep(150);
      }
      const at = offsetOf(await t.head(loc));
      expect(at, `cuts ${cuts}`).toBeLessThanOrEqual(cuts[cuts.length - 1]!);
      const last = await t.patch(loc, at, bytes.subarray(at));
      expect(last.status, last.body.toString()).toBe(204);
      await expectFile(last.headers['coffer-file-id']!, bytes, `cuts ${cuts}`);
    }
  });

  it('tus: a file of exactly two parts, sent one byte short, then the rest; length 0', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    const bytes = randomBytes(2 * CHUNK);
    const made = await t.create(bytes.length, { filename: 'exact.bin', folder_id: folderId });
    const loc = made.headers.location!;
    expect((await t.patch(loc, 0, bytes.subarray(0, 2 * CHUNK - 1))).status).toBe(204);
    const over = await t.patch(loc, 2 * CHUNK - 1, randomBytes(2));
    expect(over.status, over.body.toString()).toBe(413);
    const at = offsetOf(await t.head(loc));
    const last = await t.patch(loc, at, bytes.subarray(at));
    expect(last.status, last.body.toString()).toBe(204);
    await expectFile(last.headers['coffer-file-id']!, bytes, 'exact');
    const zero = await t.create(0, { filename: 'zero.bin', folder_id: folderId });
    expect(zero.status).toBe(201);
    const id = zero.headers['coffer-file-id'] ?? zero.headers.location!.split('/').pop()!;
    const h = await t.head(zero.headers.location!);
    expect(h.status).toBe(200);
    await expectFile(id, Buffer.alloc(0), 'zero');
  });

  it('tus: a PATCH stalls past the idle timeout, then resumes elsewhere', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    const bytes = randomBytes(CHUNK + 500);
    const made = await t.create(bytes.length, { filename: 'stall.bin', folder_id: folderId });
    const loc = made.headers.location!;
    const stalled = t.patch(loc, 0, (async function* () { yield bytes.subarray(0, CHUNK + 100); await sleep(4000); yield bytes.subarray(CHUNK + 100, CHUNK + 200); })()).catch((e) => e);
    await sleep(3000);
    const at = offsetOf(await t.head(loc));
    const rest = await t.patch(loc, at, bytes.subarray(at));
    expect(rest.status, `at ${at}: ${rest.body.toString()}`).toBe(204);
    await stalled;
    await expectFile(rest.headers['coffer-file-id']!, bytes, 'stall');
  });

  it('S3: a subset of parts completes; the same key completed by two uploads at once leaves one file', async () => {
    const { client } = s3Client(o.origin.s3Url, key);
    try {
      const p = [randomBytes(CHUNK), randomBytes(CHUNK), randomBytes(10)];
      const create = await client.send(new CreateMultipartUploadCommand({ Bucket: bucketName, Key: 'sub.bin' }));
      const up = (u: string, k: string, n: number, body: Buffer) => client.send(new UploadPartCommand({ Bucket: bucketName, Key: k, UploadId: u, PartNumber: n, Body: body }));
      const e = [] as any[];
      for (const n of [1, 2, 3]) e.push(await up(create.UploadId!, 'sub.bin', n, p[n - 1]!));
      await client.send(new CompleteMultipartUploadCommand({ Bucket: bucketName, Key: 'sub.bin', UploadId: create.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: e[0].ETag }, { PartNumber: 3, ETag: e[2].ETag }] } }));
      const obj = await client.send(new GetObjectCommand({ Bucket: bucketName, Key: 'sub.bin' }));
      expect(sha256(Buffer.from(await obj.Body!.transformToByteArray()))).toBe(sha256(Buffer.concat([p[0]!, p[2]!])));
      const list0 = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      const rec = list0.body.files.find((f: any) => f.name === 'sub.bin');
      await expectFile(rec.file_id, Buffer.concat([p[0]!, p[2]!]), 'subset');

      const bodies = [randomBytes(100), randomBytes(200)];
      const ups = await Promise.all(bodies.map(() => client.send(new CreateMultipartUploadCommand({ Bucket: bucketName, Key: 'same.bin' }))));
      const tags = await Promise.all(ups.map((u, i) => up(u.UploadId!, 'same.bin', 1, bodies[i]!)));
      await Promise.all(ups.map((u, i) => client.send(new CompleteMultipartUploadCommand({ Bucket: bucketName, Key: 'same.bin', UploadId: u.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: tags[i]!.ETag }] } }))));
      await Promise.all([0, 1].map((i) => client.send(new PutObjectCommand({ Bucket: bucketName, Key: 'same2.bin', Body: bodies[i] }))));
      await sleep(200);
      const list = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      expect(list.body.files.filter((f: any) => f.name === 'same.bin').length).toBe(1);
      expect(list.body.files.filter((f: any) => f.name === 'same2.bin').length).toBe(1);
    } finally {
      client.destroy();
    }
  });

  it('S3: an UploadPart cut off mid-body, then sent again; a zero-byte PutObject', async () => {
    const { client } = s3Client(o.origin.s3Url, key);
    const { presign } = await import('../helpers/s3-presign.js');
    try {
      const p = [randomBytes(CHUNK), randomBytes(77)];
      const create = await client.send(new CreateMultipartUploadCommand({ Bucket: bucketName, Key: 'cutpart.bin' }));
      const url = new URL(presign(o.origin.s3Url, key, 'PUT', `/${bucketName}/cutpart.bin`, { partNumber: '1', uploadId: create.UploadId! }));
      await rawRequest(url.origin, url.pathname + url.search, { method: 'PUT', headers: { 'content-length': String(CHUNK) }, body: (async function* () { yield p[0]!.subarray(0, MiB); })(), cut: true, timeoutMs: 0 }).catch(() => undefined);
      await sleep(200);
      const up = (n: number, body: Buffer) => client.send(new UploadPartCommand({ Bucket: bucketName, Key: 'cutpart.bin', UploadId: create.UploadId, PartNumber: n, Body: body }));
      const e2 = await up(2, p[1]!);
      const e1 = await up(1, p[0]!);
      await client.send(new CompleteMultipartUploadCommand({ Bucket: bucketName, Key: 'cutpart.bin', UploadId: create.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: e1.ETag }, { PartNumber: 2, ETag: e2.ETag }] } }));
      const list = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      await expectFile(list.body.files.find((f: any) => f.name === 'cutpart.bin').file_id, Buffer.concat(p), 'cut part');
      await client.send(new PutObjectCommand({ Bucket: bucketName, Key: 'empty.bin', Body: Buffer.alloc(0) }));
      const list2 = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      await expectFile(list2.body.files.find((f: any) => f.name === 'empty.bin').file_id, Buffer.alloc(0), 'empty put');
    } finally {
      client.destroy();
    }
  });

  it('JSON body-first parts resent out of order', async () => {
    const bytes = randomBytes(2 * CHUNK + 1);
    const s = await initiate(bytes.length);
    const bodyFirst = (n: number, b: Buffer) => rawRequest(o.url, '/collections/upload/file-progress', {
      method: 'POST', headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' },
      body: Buffer.from(`{"body":"${b.toString('base64')}","bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)},"fileId":${JSON.stringify(s.fileId)},"partNumber":${n}}`),
    });
    expect((await raw(s, 1, partOf(bytes, 1))).status).toBe(200);
    expect((await bodyFirst(2, randomBytes(CHUNK))).status).toBe(200);
    expect((await raw(s, 3, partOf(bytes, 3))).status).toBe(200);
    expect((await bodyFirst(2, partOf(bytes, 2))).status).toBe(200);
    expect((await complete(s.fileId)).status).toBe(200);
    await expectFile(s.fileId, bytes, 'body first');
  });
  it('nothing half-written is visible: a stalled PutObject over an existing key, an open upload', async () => {
    const { client } = s3Client(o.origin.s3Url, key);
    const { presign } = await import('../helpers/s3-presign.js');
    const { ListObjectsV2Command, HeadObjectCommand } = await import('@aws-sdk/client-s3');
    try {
      const old = randomBytes(3000);
      await client.send(new PutObjectCommand({ Bucket: bucketName, Key: 'swap.bin', Body: old }));
      const url = new URL(presign(o.origin.s3Url, key, 'PUT', `/${bucketName}/swap.bin`));
      let release!: () => void;
      const gate = new Promise<void>((r) => { release = r; });
      const fresh = randomBytes(CHUNK + 100);
      const put = rawRequest(url.origin, url.pathname + url.search, { method: 'PUT', headers: { 'content-length': String(fresh.length) },
        body: (async function* () { yield fresh.subarray(0, CHUNK + 50); await gate; yield fresh.subarray(CHUNK + 50); })(), timeoutMs: 0 });
      await sleep(300);
      const obj = await client.send(new GetObjectCommand({ Bucket: bucketName, Key: 'swap.bin' }));
      expect(sha256(Buffer.from(await obj.Body!.transformToByteArray()))).toBe(sha256(old));
      const head = await client.send(new HeadObjectCommand({ Bucket: bucketName, Key: 'swap.bin' }));
      expect(head.ContentLength).toBe(old.length);
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucketName, Prefix: 'swap' }));
      expect((listed.Contents ?? []).map((c) => [c.Key, c.Size])).toEqual([['swap.bin', old.length]]);
      const api = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      expect(api.body.files.filter((f: any) => f.name === 'swap.bin').map((f: any) => f.size)).toEqual([old.length]);
      release();
      const done = await put;
      expect(done.status, done.body.toString()).toBe(200);
      const after = await client.send(new GetObjectCommand({ Bucket: bucketName, Key: 'swap.bin' }));
      expect(sha256(Buffer.from(await after.Body!.transformToByteArray()))).toBe(sha256(fresh));

      const s = await initiate(10);
      expect((await raw(s, 1, randomBytes(10))).status).toBe(200);
      const link = await o.post('/collections/create-link', { file_id: s.fileId, file_type: 'other' });
      expect([link.status, link.body.error?.code]).toEqual([409, 'upload_not_complete']);
      const dl = await o.post('/collections/file/download', { file_id: s.fileId });
      expect([dl.status, dl.body.error?.code]).toEqual([409, 'upload_not_complete']);
      const api2 = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      expect(api2.body.files.map((f: any) => f.file_id)).not.toContain(s.fileId);
      const got = await o.post('/collections/file/get', { file_id: s.fileId });
      const listed2 = await client.send(new ListObjectsV2Command({ Bucket: bucketName, Prefix: got.body.name }));
      expect(listed2.Contents ?? []).toEqual([]);
    } finally {
      client.destroy();
    }
  });

  it('errors are the contract\'s: part numbers, parts after complete and abort, complete twice and after abort, tus after complete', async () => {
    const s = await initiate(CHUNK + 1);
    for (const n of [0, 3, 1.5, -1]) {
      const r = await raw(s, n, randomBytes(1));
      expect([r.status, r.json?.error?.code], `part ${n}`).toEqual([400, 'invalid_part_number']);
    }
    const miss = await complete(s.fileId);
    expect([miss.status, miss.body.error?.code, miss.body.error?.details?.missing]).toEqual([409, 'missing_parts', [1, 2]]);
    const huge = await rawRequest(o.url, '/collections/upload/file-progress' + q(s, 1), { method: 'POST', headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/octet-stream' },
      body: (async function* () { for (let i = 0; i < 9; i++) yield randomBytes(MiB); })() }).catch((e) => e);
    if (!(huge instanceof Error)) expect([huge.status, huge.json?.error?.code]).toEqual([413, 'payload_too_large']);
    expect((await raw(s, 1, randomBytes(CHUNK))).status).toBe(200);
    expect((await raw(s, 2, randomBytes(1))).status).toBe(200);
    const a = await complete(s.fileId);
    const b = await complete(s.fileId);
    expect(a.status).toBe(200);
    expect(b.body).toEqual(a.body);
    const late = await raw(s, 1, randomBytes(CHUNK));
    expect([late.status, late.json?.error?.code]).toEqual([409, 'upload_completed']);
    const lateJson = await json(s, 2, randomBytes(1));
    expect([lateJson.status, lateJson.body.error?.code]).toEqual([409, 'upload_completed']);
    const s2 = await initiate(5);
    expect((await o.post('/collections/upload/abort', { file_id: s2.fileId })).status).toBe(200);
    const gone = await raw(s2, 1, randomBytes(5));
    expect([gone.status, gone.json?.error?.code]).toEqual([404, 'upload_not_found']);
    const c2 = await complete(s2.fileId);
    expect(c2.status, JSON.stringify(c2.body)).toBe(404);
    const t = tusClient(o.url, `Bearer ${o.key}`);
    const made = await t.create(5, { filename: 'done.bin' });
    expect((await t.patch(made.headers.location!, 0, randomBytes(5))).status).toBe(204);
    const again = await t.patch(made.headers.location!, 5, randomBytes(1));
    expect(again.status, again.body.toString()).toBeGreaterThanOrEqual(400);
    expect(Object.keys(again.json ?? {}), again.body.toString()).toEqual(['error']);
    const head = await t.head(made.headers.location!);
    expect(head.status).toBe(200);
    expect(offsetOf(head)).toBe(5);
  });

  it('S3: two uploads of one key completed in the other order than begun leave one file, the later completed', async () => {
    const { client } = s3Client(o.origin.s3Url, key);
    try {
      const a = await client.send(new CreateMultipartUploadCommand({ Bucket: bucketName, Key: 'order.bin' }));
      const b = await client.send(new CreateMultipartUploadCommand({ Bucket: bucketName, Key: 'order.bin' }));
      const ba = randomBytes(10), bb = randomBytes(20);
      const ea = await client.send(new UploadPartCommand({ Bucket: bucketName, Key: 'order.bin', UploadId: a.UploadId, PartNumber: 1, Body: ba }));
      const eb = await client.send(new UploadPartCommand({ Bucket: bucketName, Key: 'order.bin', UploadId: b.UploadId, PartNumber: 1, Body: bb }));
      await client.send(new CompleteMultipartUploadCommand({ Bucket: bucketName, Key: 'order.bin', UploadId: b.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: eb.ETag }] } }));
      await client.send(new CompleteMultipartUploadCommand({ Bucket: bucketName, Key: 'order.bin', UploadId: a.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: ea.ETag }] } }));
      const list = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      expect(list.body.files.filter((f: any) => f.name === 'order.bin').length).toBe(1);
    } finally {
      client.destroy();
    }
  });
  it('tus concatenation: one partial named twice, two finals racing over one partial, a partial deleted during the copy', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    const partial = async (bytes: Buffer) => {
      const made = await t.create(bytes.length, { filename: 'p.bin' }, { 'upload-concat': 'partial' });
      expect(made.status).toBe(201);
      if (bytes.length > 0) expect((await t.patch(made.headers.location!, 0, bytes)).status).toBe(204);
      return made.headers.location!;
    };
    const finalOf = (urls: string[], name: string) => t.call({ method: 'POST', url: '/tus', headers: { 'upload-concat': `final;${urls.join(' ')}`,
      'upload-metadata': `filename ${Buffer.from(name).toString('base64')},folder_id ${Buffer.from(folderId).toString('base64')}` } });
    const idOf = (a: any) => a.headers['coffer-file-id'] ?? a.headers.location!.split('/').pop()!;
    const a = randomBytes(CHUNK + 3);
    const ua = await partial(a);
    const twice = await finalOf([ua, ua], 'twice.bin');
    if (twice.status === 201) await expectFile(idOf(twice), Buffer.concat([a, a]), 'twice');
    else expect(Object.keys(twice.json ?? {}), twice.body.toString()).toEqual(['error']);

    const b = randomBytes(2 * CHUNK + 5), c = randomBytes(7);
    const ub = await partial(b), uc = await partial(c);
    const race = await Promise.all([finalOf([ub, uc], 'race1.bin'), finalOf([uc, ub], 'race2.bin')]);
    const wins = race.filter((r) => r.status === 201);
    for (const r of race) if (r.status !== 201) expect(Object.keys(r.json ?? {}), `${r.status} ${r.body.toString()}`).toEqual(['error']);
    for (const r of wins) await expectFile(idOf(r), r === race[0] ? Buffer.concat([b, c]) : Buffer.concat([c, b]), 'race');

    const d = randomBytes(3 * CHUNK), e = randomBytes(100);
    const ud = await partial(d), ue = await partial(e);
    const fin = finalOf([ud, ue], 'deleted.bin');
    await sleep(5);
    const del = await t.remove(ue);
    const f = await fin;
    if (f.status === 201) await expectFile(idOf(f), Buffer.concat([d, e]), 'deleted partial');
    else expect(Object.keys(f.json ?? {}), `${f.status} ${f.body.toString()} / delete ${del.status}`).toEqual(['error']);
    const list = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
    for (const file of list.body.files) {
      if (['race1.bin', 'race2.bin', 'deleted.bin', 'twice.bin'].includes(file.name)) expect(file.status).toBe('ready');
    }
    expect((await o.post('/collections/list', { folder_id: null, limit: 10 })).status).toBe(200);
  });
  it('a JSON body of escapes and both alphabets, sent a byte at a time', async () => {
    const bytes = randomBytes(600);
    const s = await initiate(bytes.length);
    const b64 = bytes.toString('base64').replace(/=+$/, '');
    let text = '';
    for (let i = 0; i < b64.length; i++) {
      const ch = b64[i]!;
      const mode = i % 5;
      const url = ch === '+' ? '-' : ch === '/' ? '_' : ch;
      text += mode === 0 ? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}` : mode === 1 && ch === '/' ? '\\/' : mode === 2 ? url : ch;
    }
    const body = Buffer.from(`{"partNumber":1,"fileId":${JSON.stringify(s.fileId)},"body":"${text}","bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)}}`);
    const r = await rawRequest(o.url, '/collections/upload/file-progress', { method: 'POST', headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json', 'content-length': String(body.length) },
      body: (async function* () { for (let i = 0; i < body.length; i++) { yield body.subarray(i, i + 1); if (i % 7 === 0) await sleep(0); } })(), timeoutMs: 0 });
    expect(r.status, r.body.toString()).toBe(200);
    expect((await complete(s.fileId)).status).toBe(200);
    await expectFile(s.fileId, bytes, 'escapes');
  });

  it('complete racing a recursive folder delete, a rename and a move', async () => {
    for (const rival of ['folder', 'rename', 'move']) {
      const sub = await o.post('/collections/folder/create', { name: `race-${rival}-${++counter}`, visibility: 'Private', parent_id: folderId });
      const other = await o.post('/collections/folder/create', { name: `dest-${rival}-${++counter}`, visibility: 'Private', parent_id: folderId });
      const bytes = randomBytes(CHUNK + 9);
      const init = await o.post('/collections/upload/file', { name: `r${++counter}.bin`, visibility: 'Private', size: bytes.length, file_type: 'other', folder_id: sub.body.folder_id });
      const s = init.body;
      for (const n of [1, 2]) expect((await raw(s, n, partOf(bytes, n))).status).toBe(200);
      const r = rival === 'folder' ? o.post('/collections/folder/delete', { folder_id: sub.body.folder_id, recursive: true })
        : rival === 'rename' ? o.post('/collections/file/update', { file_id: s.fileId, name: 'renamed.bin' })
          : o.post('/collections/file/update', { file_id: s.fileId, folder_id: other.body.folder_id });
      const [done, rv] = await Promise.all([complete(s.fileId), r]);
      const got = await o.post('/collections/file/get', { file_id: s.fileId });
      if (got.status === 200) {
        expect(got.body.status, `${rival}: ${JSON.stringify(got.body)}`).toBe('ready');
        const folder = await o.post('/collections/folder/get', { folder_id: got.body.folder_id });
        expect(folder.status, `${rival}: file ready in ${got.body.folder_id}: ${JSON.stringify(folder.body)} / complete ${done.status} / rival ${rv.status} ${JSON.stringify(rv.body)}`).toBe(200);
        const list = await o.post('/collections/list', { folder_id: got.body.folder_id, limit: 1000 });
        expect(list.body.files.map((f: any) => f.file_id), rival).toContain(s.fileId);
      } else {
        expect(done.status, `${rival}: ${JSON.stringify(done.body)}`).not.toBe(200);
      }
      for (const a of [done, rv]) if (a.status !== 200) expect(Object.keys(a.body), rival + JSON.stringify(a.body)).toEqual(['error']);
    }
  });

  it('a grant for two files, spent by many initiates and tus creations at once', async () => {
    const g = await o.post('/collections/upload/grant', { folder_id: folderId, max_size: 100, max_files: 2, expires_in: 600 });
    expect(g.status, JSON.stringify(g.body)).toBe(200);
    const auth = `Grant ${g.body.grant}`;
    const t = tusClient(o.url, auth);
    const tries = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => o.post('/collections/upload/file', { name: `g${i}.bin`, visibility: 'Private', size: 10, file_type: 'other' }, { headers: { authorization: auth } }).then((r) => r.status)),
      ...Array.from({ length: 6 }, (_, i) => t.create(10, { filename: `gt${i}.bin` }).then((r) => (r.status === 201 ? 200 : r.status))),
    ]);
    expect(tries.filter((x) => x === 200).length, JSON.stringify(tries)).toBe(2);
  });
  it('S3: odd part sizes, UploadPartCopy ranges, CopyObject onto itself, a copy whose source is deleted meanwhile', async () => {
    const { client } = s3Client(o.origin.s3Url, key);
    const { UploadPartCopyCommand, CopyObjectCommand, DeleteObjectCommand } = await import('@aws-sdk/client-s3');
    try {
      const src = randomBytes(3 * CHUNK + 12345);
      await client.send(new PutObjectCommand({ Bucket: bucketName, Key: 'src.bin', Body: src }));
      const create = await client.send(new CreateMultipartUploadCommand({ Bucket: bucketName, Key: 'odd.bin' }));
      const a = randomBytes(CHUNK + 1), b = randomBytes(7 * MiB + 3);
      const e1 = await client.send(new UploadPartCommand({ Bucket: bucketName, Key: 'odd.bin', UploadId: create.UploadId, PartNumber: 1, Body: a }));
      const e2 = await client.send(new UploadPartCommand({ Bucket: bucketName, Key: 'odd.bin', UploadId: create.UploadId, PartNumber: 2, Body: b }));
      const r0 = CHUNK - 7, r1 = 3 * CHUNK + 100;
      const e3 = await client.send(new UploadPartCopyCommand({ Bucket: bucketName, Key: 'odd.bin', UploadId: create.UploadId, PartNumber: 3, CopySource: `${bucketName}/src.bin`, CopySourceRange: `bytes=${r0}-${r1}` }));
      const e4 = await client.send(new UploadPartCopyCommand({ Bucket: bucketName, Key: 'odd.bin', UploadId: create.UploadId, PartNumber: 4, CopySource: `${bucketName}/src.bin` }));
      await client.send(new CompleteMultipartUploadCommand({ Bucket: bucketName, Key: 'odd.bin', UploadId: create.UploadId, MultipartUpload: { Parts: [
        { PartNumber: 1, ETag: e1.ETag }, { PartNumber: 2, ETag: e2.ETag }, { PartNumber: 3, ETag: e3.CopyPartResult!.ETag }, { PartNumber: 4, ETag: e4.CopyPartResult!.ETag }] } }));
      const want = Buffer.concat([a, b, src.subarray(r0, r1 + 1), src]);
      const list = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      await expectFile(list.body.files.find((f: any) => f.name === 'odd.bin').file_id, want, 'odd');

      // Onto itself S3 takes a copy only with new metadata (REPLACE).
      await client.send(new CopyObjectCommand({ Bucket: bucketName, Key: 'odd.bin', CopySource: `${bucketName}/odd.bin`, MetadataDirective: 'REPLACE' }));
      const list2 = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      const same = list2.body.files.filter((f: any) => f.name === 'odd.bin');
      expect(same.length).toBe(1);
      await expectFile(same[0].file_id, want, 'self copy');

      const copy = client.send(new CopyObjectCommand({ Bucket: bucketName, Key: 'copy.bin', CopySource: `${bucketName}/odd.bin` })).then(() => 'ok', (e) => e);
      await sleep(2);
      await client.send(new DeleteObjectCommand({ Bucket: bucketName, Key: 'odd.bin' }));
      const c = await copy;
      const list3 = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
      const made = list3.body.files.filter((f: any) => f.name === 'copy.bin');
      if (c === 'ok') await expectFile(made[0].file_id, want, 'copy of deleted');
      else {
        expect(made, String(c)).toEqual([]);
        expect((c as any).$metadata?.httpStatusCode, String(c)).toBeLessThan(500);
      }
    } finally {
      client.destroy();
    }
  });
  it('tus: creation-with-upload, a PATCH over two parts with a wrong checksum, then the right one', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    const { createHash } = await import('node:crypto');
    const bytes = randomBytes(3 * CHUNK + 17);
    const made = await t.call({ method: 'POST', url: '/tus', body: bytes.subarray(0, 3 * MiB), headers: { 'upload-length': String(bytes.length), 'content-type': 'application/offset+octet-stream',
      'upload-metadata': `filename ${Buffer.from('cwu.bin').toString('base64')},folder_id ${Buffer.from(folderId).toString('base64')}` } });
    expect(made.status, made.body.toString()).toBe(201);
    const loc = made.headers.location!;
    expect(offsetOf(await t.head(loc))).toBe(3 * MiB);
    const span = bytes.subarray(3 * MiB, 3 * MiB + 2 * CHUNK + 5);
    const bad = await t.patch(loc, 3 * MiB, span, { 'upload-checksum': `sha256 ${createHash('sha256').update(randomBytes(4)).digest('base64')}` });
    expect([bad.status, bad.json?.error?.code]).toEqual([460, 'checksum_mismatch']);
    expect(offsetOf(await t.head(loc))).toBe(3 * MiB);
    const good = await t.patch(loc, 3 * MiB, span, { 'upload-checksum': `sha256 ${createHash('sha256').update(span).digest('base64')}` });
    expect(good.status, good.body.toString()).toBe(204);
    const at = offsetOf(good);
    expect(at).toBe(3 * MiB + span.length);
    const last = await t.patch(loc, at, bytes.subarray(at));
    expect(last.status, last.body.toString()).toBe(204);
    await expectFile(last.headers['coffer-file-id']!, bytes, 'checksum');
  });
  it('tus: a PATCH running past Upload-Length is 413 upload_length_exceeded and never finishes the upload', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    const bytes = randomBytes(CHUNK + 10);
    const made = await t.create(bytes.length, { filename: 'over.bin', folder_id: folderId });
    const loc = made.headers.location!;
    const too = Buffer.concat([bytes, randomBytes(10)]);
    // Chunked: no Content-Length tells the origin the body is too long before it arrives.
    const over = await t.patch(loc, 0, (async function* () { for (let i = 0; i < too.length; i += MiB) { yield too.subarray(i, i + MiB); await sleep(20); } })());
    expect([over.status, over.json?.error?.code], over.body.toString()).toEqual([413, 'upload_length_exceeded']);
    // A chunked body keeps the whole parts it filled before running past, never the last one.
    expect(offsetOf(await t.head(loc)), 'the finishing part of a refused body is not kept').toBe(CHUNK);
    const listed = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
    expect(listed.body.files.map((f: any) => f.name), 'a refused body made a file').not.toContain('over.bin');

    // The whole file and then one byte too many: refused, so no file is made of it.
    const exact = randomBytes(CHUNK + 10);
    const made2 = await t.create(exact.length, { filename: 'over2.bin', folder_id: folderId });
    const loc2 = made2.headers.location!;
    const over2 = await t.patch(loc2, 0, (async function* () { yield exact; await sleep(50); yield randomBytes(1); })());
    expect([over2.status, over2.json?.error?.code], over2.body.toString()).toEqual([413, 'upload_length_exceeded']);
    const list = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
    expect(list.body.files.map((f: any) => f.name), 'a refused body made a file').not.toContain('over2.bin');
    const head2 = await t.head(loc2);
    expect(offsetOf(head2), 'the finishing part of a refused body is not kept').toBe(CHUNK);
    expect(head2.headers['coffer-file-id'], 'a refused body finished the upload').toBeUndefined();

    // With a Content-Length that says so from the start.
    const made3 = await t.create(exact.length, { filename: 'over3.bin', folder_id: folderId });
    const loc3 = made3.headers.location!;
    const over3 = await t.patch(loc3, 0, Buffer.concat([exact, randomBytes(1)]));
    expect([over3.status, over3.json?.error?.code], over3.body.toString()).toEqual([413, 'upload_length_exceeded']);
    expect(offsetOf(await t.head(loc3)), 'none of the refused body is kept').toBe(0);
    const list3 = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
    expect(list3.body.files.map((f: any) => f.name), 'a refused body made a file').not.toContain('over2.bin');
    expect(list3.body.files.map((f: any) => f.name), 'a refused body made a file').not.toContain('over3.bin');
    // The upload takes its bytes afterwards.
    const ok = await t.patch(loc3, 0, exact);
    expect(ok.status, ok.body.toString()).toBe(204);
    await expectFile(ok.headers['coffer-file-id']!, exact, 'after 413');
  });
  it('tus: DELETE racing a PATCH, and racing the PATCH that finishes the upload', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    for (let round = 0; round < 6; round++) {
      const bytes = randomBytes(CHUNK + 100);
      const made = await t.create(bytes.length, { filename: `del${round}.bin`, folder_id: folderId });
      const loc = made.headers.location!;
      const first = round % 2 === 0 ? 0 : CHUNK;
      if (first > 0) expect((await t.patch(loc, 0, bytes.subarray(0, first))).status).toBe(204);
      const patch = t.patch(loc, first, bytes.subarray(first));
      await sleep(round);
      const del = await t.remove(loc);
      const p = await patch;
      const id = loc.split('/').pop()!;
      const got = await o.post('/collections/file/get', { file_id: id });
      const where = `round ${round}: patch ${p.status} ${p.body.toString().slice(0, 120)} / delete ${del.status} ${del.body.toString().slice(0, 120)} / file ${got.status} ${got.body.status}`;
      if (del.status === 204) {
        expect(got.status, where).toBe(404);
        expect(p.status, where).not.toBe(204);
      } else {
        expect(del.json?.error?.code, where).toBe('upload_completed');
        expect(p.status, where).toBe(204);
        await expectFile(id, bytes, where);
      }
      if (p.status !== 204) expect(Object.keys(p.json ?? {}), where).toEqual(['error']);
    }
  });
});
