/**
 * Part bytes from hostile or broken clients: JSON file-progress bodies with "body" first
 * (streamed to a temporary file of the disk store until the fields name the part) that name
 * someone else's upload, a wrong part, a wrong size or repeat a field, that are cut off,
 * stall or are caught by a restart; and tus PATCH bodies of every awkward length, cut off,
 * with a wrong checksum or in parallel, through the pooled 1 MiB slabs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/api.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';
import { MiB, offsetOf, tusClient } from '../helpers/tus.js';
import { eventually, sha256 } from '../kit/index.js';
import { tusStorage } from '../helpers/tus-origin.js';

const CHUNK = 5 * MiB;

// ================================================================ body-first JSON parts

describe('file-progress with "body" first on the disk store', () => {
  let o: TestOrigin;
  const tmpDir = () => join(o.dataDir, 'blobs', 'tmp');
  const tmpFiles = () => readdir(tmpDir());
  const expectTmpEmpty = () => eventually(async () => expect(await tmpFiles()).toEqual([]));
  beforeAll(async () => {
    o = await startTestOrigin({ COFFER_IDLE_TIMEOUT_MS: '1500' });
  });
  afterAll(async () => o?.close());

  const initiate = async (size: number, fields: Record<string, unknown> = {}, headers: Record<string, string> = {}) => {
    const r = await o.post('/collections/upload/file', { name: 'f.bin', visibility: 'Private', size, file_type: 'other', ...fields }, { headers });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };

  /** A JSON text with "body" first, then `rest` (raw JSON text after the body string, starting with "," or "}"). */
  const bodyFirst = (bytes: Buffer, fields: Record<string, unknown> | string) =>
    Buffer.from(`{"body":"${bytes.toString('base64')}"${typeof fields === 'string' ? fields : `,${JSON.stringify(fields).slice(1)}`}`);
  const session = (s: any, partNumber: number) => ({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber });
  const send = (body: Buffer, auth = `Bearer ${o.key}`) =>
    rawRequest(o.url, '/collections/upload/file-progress', { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body });
  const status = async (fileId: string) => (await o.post('/collections/upload/status', { file_id: fileId })).body;

  it('a body-first part naming another (folder-confined) caller\'s upload is 404, keeps nothing', async () => {
    const inside = (await o.post('/collections/folder/create', { name: 'bf-inside', visibility: 'Private' })).body.folder_id;
    const outside = (await o.post('/collections/folder/create', { name: 'bf-outside', visibility: 'Private' })).body.folder_id;
    const confined = (await o.post('/collections/keys/create', { name: 'bf-confined', scopes: ['read', 'write'], folder_id: inside })).body.key;
    const victim = await initiate(10, { folder_id: outside });
    const rootUpload = await initiate(10);
    for (const target of [victim, rootUpload]) {
      expectError(await send(bodyFirst(randomBytes(10), session(target, 1)), `Bearer ${confined}`), 404, 'upload_not_found');
      await expectTmpEmpty();
      expect((await status(target.fileId)).received).toEqual([]);
    }
  });

  it('a body-first part from a grant for an upload it did not make, or with a grant for a root upload, is 404; the grant\'s own works', async () => {
    const grant = (await o.post('/collections/upload/grant', { max_size: 100, max_files: 2 })).body.grant;
    const rootUpload = await initiate(10);
    expectError(await send(bodyFirst(randomBytes(10), session(rootUpload, 1)), `Grant ${grant}`), 404, 'upload_not_found');
    await expectTmpEmpty();
    expect((await status(rootUpload.fileId)).received).toEqual([]);
    const mine = (await o.post('/collections/upload/file', { name: 'g.bin', visibility: 'Private', size: 10, file_type: 'other' }, { headers: { authorization: `Grant ${grant}` } })).body;
    const other = await o.post('/collections/keys/create', { name: 'bf-writer', scopes: ['write'] });
    expect(other.status).toBe(200);
    // The grant's upload from an unrelated key: allowed only if in reach (root-like key is); a wrong fileId pairing is 404.
    expectError(await send(bodyFirst(randomBytes(10), { ...session(mine, 1), fileId: rootUpload.fileId }), `Grant ${grant}`), 404, 'upload_not_found');
    const bytes = randomBytes(10);
    const ok = await send(bodyFirst(bytes, session(mine, 1)), `Grant ${grant}`);
    expect(ok.status, ok.body.toString()).toBe(200);
    await expectTmpEmpty();
  });

  it('unknown uploads, wrong part numbers and wrong sizes are the contract\'s errors, with nothing kept', async () => {
    const s = await initiate(CHUNK + 7);
    const unknown = { ...session(s, 1), uploadId: 'nope', fileId: 'nope' };
    expectError(await send(bodyFirst(randomBytes(CHUNK), unknown)), 404, 'upload_not_found');
    for (const n of [0, 3, -1, 1.5, 99999]) {
      expectError(await send(bodyFirst(randomBytes(7), session(s, n))), 400, 'invalid_part_number', String(n));
    }
    expectError(await send(bodyFirst(randomBytes(CHUNK - 1), session(s, 1))), 400, 'part_size_mismatch', { expected: CHUNK, received: CHUNK - 1 });
    expectError(await send(bodyFirst(randomBytes(8), session(s, 2))), 400, 'part_size_mismatch', { expected: 7, received: 8 });
    expectError(await send(bodyFirst(Buffer.alloc(0), session(s, 2))), 400, 'part_size_mismatch');
    await expectTmpEmpty();
    expect((await status(s.fileId)).received).toEqual([]);
  });

  it('a wrong-size or misnamed resend of a stored part changes nothing', async () => {
    const bytes = randomBytes(CHUNK + 100);
    const s = await initiate(bytes.length);
    expect((await send(bodyFirst(bytes.subarray(0, CHUNK), session(s, 1)))).status).toBe(200);
    expect((await send(bodyFirst(bytes.subarray(CHUNK), session(s, 2)))).status).toBe(200);
    // Refused resends of both parts.
    expectError(await send(bodyFirst(randomBytes(CHUNK + 1), session(s, 1))), 400, 'part_size_mismatch');
    expectError(await send(bodyFirst(randomBytes(99), session(s, 2))), 400, 'part_size_mismatch');
    expectError(await send(bodyFirst(randomBytes(100), { ...session(s, 2), key: 'files/other' })), 404, 'upload_not_found');
    expectError(await send(Buffer.from(`{"body":"${randomBytes(100).toString('base64')}!!",${JSON.stringify(session(s, 2)).slice(1)}`)), 400, 'invalid_base64');
    await expectTmpEmpty();
    const done = await o.post('/collections/upload/complete-upload', { file_id: s.fileId });
    expect(done.status).toBe(200);
    expect(done.body.sha256).toBe(sha256(bytes));
    await expectTmpEmpty();
  });

  it('a field named before body and again after it is refused (400) and keeps nothing; repeated only after body, the last counts (docs/api.md)', async () => {
    const s = await initiate(CHUNK + 10);
    const f = (n: number) => `"bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)},"fileId":${JSON.stringify(s.fileId)},"partNumber":${n}`;
    const ten = randomBytes(10).toString('base64');
    // Named before body as part 2, then again after it as part 1 (whose size is wrong): refused.
    expectError(await send(Buffer.from(`{${f(2)},"body":"${ten}","partNumber":1}`)), 400, 'part_size_mismatch', 'fields before body');
    // Named before body as part 1 (wrong size for it), then part 2 after it: refused too.
    expectError(await send(Buffer.from(`{${f(1)},"body":"${ten}","partNumber":2}`)), 400, 'invalid_request', 'fields before body, last valid');
    await expectTmpEmpty();
    expect((await status(s.fileId)).received).toEqual([]);
    // With body first nothing was written to a part yet: as anywhere in a JSON body, the last one counts.
    const last = await send(Buffer.from(`{"body":"${ten}",${f(1)},"partNumber":2}`));
    expect(last.status, JSON.stringify(last.json)).toBe(200);
    expect(last.json.partNumber).toBe(2);
    await expectTmpEmpty();
    expect((await status(s.fileId)).received).toEqual([2]);
  });

  it('a body cut off mid-way (client disconnects) leaves no temporary file and no part', async () => {
    const s = await initiate(CHUNK);
    const text = bodyFirst(randomBytes(CHUNK), session(s, 1));
    const cut = text.subarray(0, Math.floor(text.length / 2));
    async function* pieces() {
      for (let i = 0; i < cut.length; i += 256 * 1024) yield cut.subarray(i, i + 256 * 1024);
    }
    await expect(rawRequest(o.url, '/collections/upload/file-progress', {
      method: 'POST', headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json', 'content-length': String(text.length) }, body: pieces(), cut: true,
    })).rejects.toThrow();
    await expectTmpEmpty();
    expect((await status(s.fileId)).received).toEqual([]);
  });

  it('a client that stalls forever after the body is dropped, and its temporary file removed', async () => {
    const s = await initiate(CHUNK);
    const text = bodyFirst(randomBytes(CHUNK), session(s, 1));
    // The whole body string, then nothing more of the declared length.
    const sent = text.subarray(0, text.length - 5);
    const done = new Promise<string>((resolve) => {
      let answer = '';
      const socket = net.connect(o.origin.port, '127.0.0.1', () => {
        socket.write(`POST /collections/upload/file-progress HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${o.key}\r\nContent-Type: application/json\r\nContent-Length: ${text.length}\r\n\r\n`);
        socket.write(sent);
      });
      socket.setEncoding('latin1');
      socket.on('data', (c: string) => { answer += c; });
      socket.on('error', () => {});
      socket.on('close', () => resolve(answer));
      setTimeout(() => socket.destroy(), 15_000);
    });
    // While it stalls, its bytes are in a temporary file.
    await eventually(async () => expect((await tmpFiles()).length).toBeGreaterThan(0));
    await done;
    await expectTmpEmpty();
    expect((await status(s.fileId)).received).toEqual([]);
  });

  it('many body-first requests in parallel, good and bad, leave only the good parts and no temporary files', async () => {
    const uploads = await Promise.all(Array.from({ length: 6 }, () => initiate(3000)));
    const bytes = uploads.map(() => randomBytes(3000));
    const requests: Array<Promise<RawAnswer>> = [];
    for (const [i, s] of uploads.entries()) {
      requests.push(send(bodyFirst(bytes[i]!, session(s, 1))));
      requests.push(send(bodyFirst(randomBytes(2999), session(s, 1))));
      requests.push(send(bodyFirst(randomBytes(3000), session(s, 2))));
      requests.push(send(bodyFirst(randomBytes(3000), { ...session(s, 1), uploadId: 'x' })));
    }
    const answers = await Promise.all(requests);
    answers.forEach((a, i) => expect(a.status, String(i)).toBe([200, 400, 400, 404][i % 4]));
    await expectTmpEmpty();
    for (const [i, s] of uploads.entries()) {
      const done = await o.post('/collections/upload/complete-upload', { file_id: s.fileId });
      expect(done.body.sha256).toBe(sha256(bytes[i]!));
    }
  });
});

describe('an origin restarted with a body-first request in flight', () => {
  it('removes the temporary file at start, and the upload has no part', async () => {
    const storage = await tusStorage();
    try {
      const first = await storage.start('bf-restart-1');
      const init = await fetch(`${first.url}/collections/upload/file`, {
        method: 'POST', headers: { authorization: `Bearer ${storage.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'r.bin', visibility: 'Private', size: CHUNK, file_type: 'other' }),
      });
      const s = await init.json() as any;
      const text = Buffer.from(`{"body":"${randomBytes(CHUNK).toString('base64')}","bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)},"fileId":${JSON.stringify(s.fileId)},"partNumber":1}`);
      const port = Number(new URL(first.url).port);
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(`POST /collections/upload/file-progress HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${storage.key}\r\nContent-Type: application/json\r\nContent-Length: ${text.length}\r\n\r\n`);
        socket.write(text.subarray(0, 3 * MiB));
      });
      socket.on('error', () => {});
      const tmp = join(storage.dataDir, 'blobs', 'tmp');
      await eventually(async () => expect((await readdir(tmp)).length).toBeGreaterThan(0), { timeoutMs: 10_000 });
      await first.proc.stop('SIGKILL');
      socket.destroy();
      expect((await readdir(tmp)).length).toBeGreaterThan(0);
      const second = await storage.start('bf-restart-2');
      expect(await readdir(tmp)).toEqual([]);
      const st = await fetch(`${second.url}/collections/upload/status`, {
        method: 'POST', headers: { authorization: `Bearer ${storage.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ file_id: s.fileId }),
      });
      expect(((await st.json()) as any).received).toEqual([]);
    } finally {
      await storage.cleanup();
    }
  });
});

// ================================================================ tus PATCH in slabs

describe('tus PATCH bytes in 1 MiB slabs', () => {
  let o: TestOrigin;
  let c: ReturnType<typeof tusClient>;
  beforeAll(async () => {
    o = await startTestOrigin({ COFFER_MAX_FILE_SIZE: String(64 * MiB) });
    c = tusClient(o.url, `Bearer ${o.key}`);
  });
  afterAll(async () => o?.close());

  const create = async (length: number) => {
    const a = await c.create(length);
    expect(a.status, a.body.toString()).toBe(201);
    return a.headers.location!;
  };
  const fileId = (location: string) => location.split('/').pop()!;
  const finalSha = async (location: string) => (await o.post('/collections/file/get', { file_id: fileId(location) })).body;

  it('single PATCHes of lengths ending mid-slab and mid-part give the right file', async () => {
    for (const n of [0, 1, MiB - 1, MiB, MiB + 1, 5 * MiB - 1, 5 * MiB, 5 * MiB + 1, 7.5 * MiB]) {
      const bytes = randomBytes(n);
      const loc = await create(n);
      if (n > 0) {
        const a = await c.patch(loc, 0, bytes);
        expect(a.status, `${n}: ${a.body.toString()}`).toBe(204);
        expect(offsetOf(a)).toBe(n);
      }
      const f = await finalSha(loc);
      expect(f.status, String(n)).toBe('ready');
      expect(f.sha256, String(n)).toBe(sha256(bytes));
      expect(f.size).toBe(n);
    }
  });

  it('PATCHes in a row resuming at odd offsets give the right file', async () => {
    const bytes = randomBytes(13 * MiB + 3);
    const cuts = [1, MiB - 1, MiB + 1, 5 * MiB - 1, 5 * MiB + 1, 7.5 * MiB, 10 * MiB - 1, 10 * MiB, 10 * MiB + 1, 12 * MiB + 7, bytes.length];
    const loc = await create(bytes.length);
    let at = 0;
    for (const end of cuts) {
      const a = await c.patch(loc, at, bytes.subarray(at, end));
      expect(a.status, `${at}..${end}: ${a.body.toString()}`).toBe(204);
      expect(offsetOf(a)).toBe(end);
      expect(offsetOf(await c.head(loc))).toBe(end);
      at = end;
    }
    expect((await finalSha(loc)).sha256).toBe(sha256(bytes));
  });

  it('a PATCH cut off mid-body keeps exactly what arrived, and a resume gives the right bytes', async () => {
    const bytes = randomBytes(11 * MiB + 11);
    const loc = await create(bytes.length);
    let at = 0;
    for (const stopAt of [MiB + 17, 5 * MiB + 3, 8 * MiB - 1]) {
      const piece = bytes.subarray(at, stopAt);
      async function* pieces() {
        for (let i = 0; i < piece.length; i += 64 * 1024) yield piece.subarray(i, i + 64 * 1024);
      }
      await c.patch(loc, at, pieces(), { 'content-length': String(bytes.length - at) }, true).catch(() => undefined);
      let offset = 0;
      await eventually(async () => {
        const h = await c.head(loc);
        offset = offsetOf(h);
        expect(offset).toBe(stopAt);
      }, { timeoutMs: 5000 }).catch(() => undefined);
      // Whatever was kept, it is a prefix that the next PATCH resumes from.
      expect(offset).toBeGreaterThanOrEqual(at);
      expect(offset).toBeLessThanOrEqual(stopAt);
      at = offset;
    }
    const rest = await c.patch(loc, at, bytes.subarray(at));
    expect(rest.status, rest.body.toString()).toBe(204);
    expect((await finalSha(loc)).sha256).toBe(sha256(bytes));
  });

  it('an Upload-Checksum mismatch keeps nothing, across slabs and parts', async () => {
    const bytes = randomBytes(6 * MiB + 5);
    const loc = await create(bytes.length);
    const first = bytes.subarray(0, MiB + 1);
    expect((await c.patch(loc, 0, first)).status).toBe(204);
    const rest = bytes.subarray(MiB + 1);
    const wrong = `sha256 ${createHash('sha256').update('not the bytes').digest('base64')}`;
    const bad = await c.patch(loc, MiB + 1, rest, { 'upload-checksum': wrong });
    expect(bad.status).toBe(460);
    expect(offsetOf(await c.head(loc))).toBe(MiB + 1);
    const right = `sha256 ${createHash('sha256').update(rest).digest('base64')}`;
    expect((await c.patch(loc, MiB + 1, rest, { 'upload-checksum': right })).status).toBe(204);
    expect((await finalSha(loc)).sha256).toBe(sha256(bytes));
  });

  it('parallel tus uploads through the shared slab pool do not mix their bytes', async () => {
    const files = Array.from({ length: 5 }, (_, i) => randomBytes(6 * MiB + i * 333));
    const locs = await Promise.all(files.map((f) => create(f.length)));
    await Promise.all(files.map(async (f, i) => {
      const mid = 3 * MiB + i * 1001;
      expect((await c.patch(locs[i]!, 0, f.subarray(0, mid))).status).toBe(204);
      expect((await c.patch(locs[i]!, mid, f.subarray(mid))).status).toBe(204);
    }));
    for (const [i, f] of files.entries()) expect((await finalSha(locs[i]!)).sha256).toBe(sha256(f));
  });
});
