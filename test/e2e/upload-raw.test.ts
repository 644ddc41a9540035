/**
 * Raw parts (contract §9): `POST /collections/upload/file-progress` with
 * `Content-Type: application/octet-stream`, the part's bytes as the body and the fields in
 * the query string. Same answers, same errors in the same order, same limits and the same
 * caller rules as the JSON form, which it can be mixed with.
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { storedParts } from '../helpers/stored-object.js';
import { expectError } from '../helpers/api.js';
import { rawRequest } from '../helpers/raw-http.js';
import { poll, sha256 } from '../kit/index.js';

const CHUNK = 5 * 1024 * 1024;
const MAX_BODY = 8 * 1024 * 1024;
const PATH = '/collections/upload/file-progress';

type Res = { status: number; body: any; headers: Headers };

interface Session {
  file_id: string;
  fileId: string;
  bucket: string;
  key: string;
  uploadId: string;
  part_count: number;
}

const fieldsOf = (s: Session, partNumber: unknown): Record<string, unknown> =>
  ({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber });

/** A query string from fields; an array value repeats the parameter, undefined leaves it out. */
function query(fields: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) q.append(name, String(v));
  }
  return q.toString();
}

async function rawPost(o: TestOrigin, search: string, bytes: Buffer, headers: Record<string, string> = {}): Promise<Res> {
  const res = await fetch(`${o.url}${PATH}?${search}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/octet-stream', ...headers },
    body: new Uint8Array(bytes),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // kept as text
  }
  return { status: res.status, body, headers: res.headers };
}

const sendRaw = (o: TestOrigin, s: Session, partNumber: unknown, bytes: Buffer, overrides: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  rawPost(o, query({ ...fieldsOf(s, partNumber), ...overrides }), bytes, headers);

async function initiate(o: TestOrigin, size: number, headers: Record<string, string> = {}): Promise<Session> {
  const r = await o.post('/collections/upload/file', { name: 'raw.bin', visibility: 'Private', size, file_type: 'other' }, { headers });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

const complete = (o: TestOrigin, fileId: string) => o.post('/collections/upload/complete-upload', { file_id: fileId });
const received = async (o: TestOrigin, fileId: string) => (await o.post('/collections/upload/status', { file_id: fileId })).body.received;

describe('raw parts (contract §9)', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin();
  });
  afterAll(async () => {
    await o.close();
  });

  it('answers exactly as the JSON form does, and the file is the bytes', async () => {
    const data = randomBytes(2 * CHUNK + 1234);
    const s = await initiate(o, data.length);
    expect(s.part_count).toBe(3);
    const part = (n: number) => data.subarray((n - 1) * CHUNK, n * CHUNK);
    const last = await sendRaw(o, s, 3, part(3));
    expect(last.status, JSON.stringify(last.body)).toBe(200);
    expect(Object.keys(last.body).sort()).toEqual(['etag', 'file_id', 'partNumber', 'part_count', 'received_parts', 'size']);
    expect(last.body).toMatchObject({ file_id: s.file_id, partNumber: 3, size: 1234, received_parts: 1, part_count: 3 });
    const both = await Promise.all([sendRaw(o, s, 2, part(2)), sendRaw(o, s, 1, part(1))]);
    for (const r of both) expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(both.map((r) => r.body.size)).toEqual([CHUNK, CHUNK]);
    expect(await received(o, s.file_id)).toEqual([1, 2, 3]);
    const done = await complete(o, s.file_id);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'ready', size: data.length, sha256: sha256(data) });
  });

  it('mixes with the JSON form: a part sent one way is replaced when sent the other', async () => {
    const a = randomBytes(100);
    const b = randomBytes(100);
    const s = await initiate(o, 100);
    expect((await sendRaw(o, s, 1, a)).status).toBe(200);
    const json = await o.post(PATH, { ...fieldsOf(s, 1), body: b.toString('base64') });
    expect(json.status, JSON.stringify(json.body)).toBe(200);
    expect((await complete(o, s.file_id)).body.sha256).toBe(sha256(b));
    const t = await initiate(o, 100);
    expect((await o.post(PATH, { ...fieldsOf(t, 1), body: a.toString('base64') })).status).toBe(200);
    expect((await sendRaw(o, t, 1, b)).status).toBe(200);
    expect((await complete(o, t.file_id)).body.sha256).toBe(sha256(b));
  });

  it('takes a 0-byte part and any letter case or parameters of the media type', async () => {
    const s = await initiate(o, 0);
    expect((await sendRaw(o, s, 1, Buffer.alloc(0))).status).toBe(200);
    expect((await complete(o, s.file_id)).body.sha256).toBe(sha256(Buffer.alloc(0)));
    const t = await initiate(o, 3);
    const r = await sendRaw(o, t, 1, Buffer.from('abc'), {}, { 'content-type': 'Application/Octet-Stream; foo=bar' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((await complete(o, t.file_id)).body.sha256).toBe(sha256(Buffer.from('abc')));
  });

  it('answers 400 invalid_request naming the field for missing, repeated, mistyped or unknown query fields', async () => {
    const s = await initiate(o, 4);
    const bytes = Buffer.from('abcd');
    for (const f of ['bucket', 'key', 'uploadId', 'fileId', 'partNumber']) {
      expectError(await sendRaw(o, s, 1, bytes, { [f]: undefined }), 400, 'invalid_request', { field: f }, `without ${f}`);
      expectError(await sendRaw(o, s, 1, bytes, { [f]: [fieldsOf(s, 1)[f], fieldsOf(s, 1)[f]] }), 400, 'invalid_request', { field: f }, `${f} twice`);
    }
    for (const n of ['', 'abc', '1x', '0x1', ' 1', '+1', 'NaN', 'Infinity', 'true']) {
      expectError(await sendRaw(o, s, n, bytes), 400, 'invalid_request', { field: 'partNumber' }, `partNumber=${JSON.stringify(n)}`);
    }
    expectError(await sendRaw(o, s, 1, bytes, { extra: '1' }), 400, 'invalid_request', { field: 'extra' });
    expectError(await rawPost(o, '', bytes), 400, 'invalid_request');
    // Malformed before unknown: a missing field wins over a wrong fileId.
    expectError(await sendRaw(o, s, 'x', bytes, { fileId: 'nope' }), 400, 'invalid_request', { field: 'partNumber' });
    expect(await received(o, s.file_id)).toEqual([]);
  });

  it('answers 404 upload_not_found when any one of the four session values is wrong or mixed with another upload', async () => {
    const s = await initiate(o, 4);
    const other = await initiate(o, 4);
    const bytes = Buffer.from('abcd');
    for (const [field, value] of [['bucket', 'other-bucket'], ['key', 'files/nope'], ['uploadId', 'nope'], ['fileId', 'nope'], ['fileId', ''], ['uploadId', ''],
      ['fileId', other.fileId], ['uploadId', other.uploadId], ['key', other.key]] as const) {
      expectError(await sendRaw(o, s, 1, bytes, { [field]: value }), 404, 'upload_not_found', `${field}=${value}`);
    }
    // Unknown before every field rule.
    expectError(await sendRaw(o, s, 0, bytes, { fileId: 'nope' }), 404, 'upload_not_found');
    expectError(await sendRaw(o, s, 1, Buffer.alloc(3), { fileId: 'nope' }), 404, 'upload_not_found');
    expect(await received(o, s.file_id)).toEqual([]);
    expect(await received(o, other.file_id)).toEqual([]);
    expect((await sendRaw(o, s, 1, bytes)).status).toBe(200);
  });

  it('answers 400 invalid_part_number outside 1..part_count, before the size', async () => {
    const s = await initiate(o, 2 * CHUNK + 5);
    for (const n of [0, 4, 1.5, -1, 100, '1e300', '-0']) {
      expectError(await sendRaw(o, s, n, Buffer.alloc(5)), 400, 'invalid_part_number', { field: 'partNumber', part_count: 3 }, `partNumber=${n}`);
    }
    // 3e0 is 3 written another way, as JSON allows.
    expect((await sendRaw(o, s, '3e0', Buffer.alloc(5))).status).toBe(200);
  });

  it('answers 400 part_size_mismatch with expected and received, keeping the part it had', async () => {
    const s = await initiate(o, CHUNK + 10);
    expectError(await sendRaw(o, s, 1, Buffer.alloc(10)), 400, 'part_size_mismatch', { field: 'body', expected: CHUNK, received: 10 });
    expectError(await sendRaw(o, s, 1, Buffer.alloc(CHUNK + 1)), 400, 'part_size_mismatch', { expected: CHUNK, received: CHUNK + 1 });
    expectError(await sendRaw(o, s, 2, Buffer.alloc(0)), 400, 'part_size_mismatch', { expected: 10, received: 0 });
    expect(await received(o, s.file_id)).toEqual([]);
    const good = randomBytes(10);
    expect((await sendRaw(o, s, 2, good)).status).toBe(200);
    expectError(await sendRaw(o, s, 2, Buffer.alloc(9)), 400, 'part_size_mismatch', { expected: 10, received: 9 });
    const first = randomBytes(CHUNK);
    expect((await sendRaw(o, s, 1, first)).status).toBe(200);
    expect((await complete(o, s.file_id)).body.sha256).toBe(sha256(Buffer.concat([first, good])));
  });

  it('answers 409 upload_completed after complete, before the field rules', async () => {
    const s = await initiate(o, 5);
    expect((await sendRaw(o, s, 1, Buffer.from('hello'))).status).toBe(200);
    expect((await complete(o, s.file_id)).status).toBe(200);
    expectError(await sendRaw(o, s, 1, Buffer.from('hello')), 409, 'upload_completed');
    expectError(await sendRaw(o, s, 0, Buffer.from('hello')), 409, 'upload_completed');
    expectError(await sendRaw(o, s, 1, Buffer.alloc(99)), 409, 'upload_completed');
    expectError(await sendRaw(o, s, 'one', Buffer.from('hello')), 400, 'invalid_request', { field: 'partNumber' });
  });

  it('answers 413 payload_too_large for a Content-Length over 8 MiB, without reading the body', async () => {
    const s = await initiate(o, 4);
    for (const search of [query(fieldsOf(s, 1)), query({ ...fieldsOf(s, 1), partNumber: 'x' })]) {
      const r = await rawRequest(o.url, `${PATH}?${search}`, {
        method: 'POST', open: true, body: Buffer.alloc(4096),
        headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/octet-stream', 'content-length': String(MAX_BODY + 1) },
      });
      expectError(r, 413, 'payload_too_large', { limit: MAX_BODY });
    }
    expect(await received(o, s.file_id)).toEqual([]);
  }, 15_000);

  it('answers 413 payload_too_large for a chunked body that grows over 8 MiB', async () => {
    const s = await initiate(o, CHUNK);
    const piece = Buffer.alloc(256 * 1024, 7);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= 9 * 1024 * 1024) return c.close();
        c.enqueue(new Uint8Array(piece));
        sent += piece.length;
      },
    });
    const res = await fetch(`${o.url}${PATH}?${query(fieldsOf(s, 1))}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/octet-stream' },
      body: stream,
      duplex: 'half',
    } as RequestInit & { duplex: 'half' });
    expectError({ status: res.status, body: await res.json(), headers: res.headers }, 413, 'payload_too_large', { limit: MAX_BODY });
    expect(await received(o, s.file_id)).toEqual([]);
  }, 30_000);

  it('answers 415 for a body that is neither JSON nor octet-stream', async () => {
    const s = await initiate(o, 4);
    expectError(await sendRaw(o, s, 1, Buffer.from('abcd'), {}, { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    expectError(await sendRaw(o, s, 1, Buffer.from('abcd'), {}, { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type');
  });

  it('follows the caller rules: grants on their own uploads only, keys without write refused', async () => {
    const grant = (await o.post('/collections/upload/grant', { max_size: 100, max_files: 2 })).body.grant as string;
    const asGrant = { authorization: `Grant ${grant}` };
    const mine = await initiate(o, 3, asGrant);
    const theirs = await initiate(o, 3);
    const r = await sendRaw(o, mine, 1, Buffer.from('abc'), {}, asGrant);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expectError(await sendRaw(o, theirs, 1, Buffer.from('abc'), {}, asGrant), 404, 'upload_not_found');
    const reader = (await o.post('/collections/keys/create', { name: 'reader', scopes: ['read'] })).body.key as string;
    expectError(await sendRaw(o, theirs, 1, Buffer.from('abc'), {}, { authorization: `Bearer ${reader}` }), 403, 'forbidden');
    expectError(await sendRaw(o, theirs, 1, Buffer.from('abc'), {}, { authorization: 'Bearer wrong' }), 401, 'unauthorized');
    expect(await received(o, theirs.file_id)).toEqual([]);
  });

  it('is in the OpenAPI document: the octet-stream body and the five query fields', async () => {
    const doc = (await (await fetch(`${o.url}/openapi.json`)).json()) as any;
    const op = doc.paths[PATH].post;
    expect(Object.keys(op.requestBody.content).sort()).toEqual(['application/json', 'application/octet-stream']);
    expect(op.requestBody.content['application/octet-stream'].schema).toMatchObject({ type: 'string', format: 'binary' });
    const query = op.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name).sort();
    expect(query).toEqual(['bucket', 'fileId', 'key', 'partNumber', 'uploadId']);
    expect(op.description).toContain('application/octet-stream');
  });

  it('leaves no temporary part files behind after refused raw parts', async () => {
    const s = await initiate(o, 4);
    await sendRaw(o, s, 1, Buffer.alloc(3));
    await sendRaw(o, s, 1, Buffer.alloc(5));
    await sendRaw(o, s, 9, Buffer.alloc(4));
    await sendRaw(o, s, 1, Buffer.alloc(4), { fileId: 'nope' });
    await sendRaw(o, s, 'x', Buffer.alloc(4));
    if (!o.blobStore) {
      const tmp = join(o.dataDir, 'blobs', 'tmp');
      let left: string[] = [];
      await poll(async () => (left = await readdir(tmp)).length === 0, { timeoutMs: 3000 });
      expect(left).toEqual([]);
    }
    expect(await storedParts(o, s.uploadId)).toEqual([]);
  });
});
