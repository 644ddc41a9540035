/**
 * Contract §2, cross-cutting: authentication, media types, malformed and oversized bodies,
 * unknown fields and routes, rate limiting, the error body shape for every row of the
 * status table, and what the request log may and may not hold.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { poll } from '../kit/index.js';

const JSON_LIMIT = 64 * 1024;

type Res = { status: number; body: any; headers: Headers };

/** A request with full control over method, headers and body; the body parsed as JSON when it is. */
async function send(url: string, init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<Res> {
  const res = await fetch(url, { method: init.method ?? 'POST', headers: init.headers ?? {}, ...(init.body !== undefined ? { body: typeof init.body === 'string' ? init.body : new Uint8Array(init.body) } : {}) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // kept as text
  }
  return { status: res.status, body, headers: res.headers };
}

const ENDPOINTS: Array<[string, Record<string, unknown>]> = [
  ['/collections/upload/file', { name: 'a.txt', visibility: 'Public', size: 1, file_type: 'document' }],
  ['/collections/upload/file-progress', { bucket: 'b', key: 'k', uploadId: 'u', fileId: 'f', partNumber: 1, body: 'QQ==' }],
  ['/collections/upload/complete-upload', { file_id: 'x' }],
  ['/collections/upload/status', { file_id: 'x' }],
  ['/collections/upload/abort', { file_id: 'x' }],
  ['/collections/folder/create', { name: 'f', visibility: 'Public' }],
  ['/collections/folder/get', { folder_id: 'x' }],
  ['/collections/folder/update', { folder_id: 'x' }],
  ['/collections/folder/delete', { folder_id: 'x' }],
  ['/collections/list', {}],
  ['/collections/search', { query: 'a' }],
  ['/collections/file/get', { file_id: 'x' }],
  ['/collections/file/update', { file_id: 'x' }],
  ['/collections/file/delete', { file_id: 'x' }],
  ['/collections/file/download', { file_id: 'x' }],
  ['/collections/create-link', { file_id: 'x', file_type: 'image' }],
];

describe('cross-cutting errors (contract §2)', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin();
  });
  afterAll(async () => {
    await o.close();
  });

  const json = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${o.key}`, 'content-type': 'application/json', ...extra });

  describe('401 unauthorized', () => {
    it.each(ENDPOINTS)('%s without Authorization', async (path, body) => {
      expectError(await send(o.url + path, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }), 401, 'unauthorized');
    });

    it('refuses a wrong key and malformed headers', async () => {
      const headers = [
        'Bearer wrong', `Bearer ${o.key}x`, `Bearer ${o.key.slice(0, -1)}`, `Bearer ${o.key.toUpperCase()}`, `Bearer ${o.key} extra`,
        'Basic x', `Basic ${Buffer.from(`user:${o.key}`).toString('base64')}`, 'Bearer', 'Bearer ', o.key, `Token ${o.key}`, `Bearer${o.key}`, '',
      ];
      for (const authorization of headers) {
        const r = await send(o.url + '/collections/list', { headers: { authorization, 'content-type': 'application/json' }, body: '{}' });
        expectError(r, 401, 'unauthorized');
      }
    });

    it('accepts the right key (the scheme in any letter case)', async () => {
      for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
        const r = await send(o.url + '/collections/list', { headers: { authorization: `${scheme} ${o.key}`, 'content-type': 'application/json' }, body: '{}' });
        expect(r.status, scheme).toBe(200);
      }
    });

    it('answers 401 before looking at the body', async () => {
      for (const body of ['{', '', 'x'.repeat(JSON_LIMIT + 10)]) {
        expectError(await send(o.url + '/collections/list', { headers: { 'content-type': 'application/json' }, body }), 401, 'unauthorized');
      }
      expectError(await send(o.url + '/collections/list', { headers: { 'content-type': 'text/plain' }, body: 'hello' }), 401, 'unauthorized');
      expectError(await send(o.url + '/collections/upload/file-progress', { headers: { authorization: 'Bearer wrong', 'content-type': 'application/json' }, body: '{"body":"QQ=="' }), 401, 'unauthorized');
    });

    it('needs no key for /healthz', async () => {
      const r = await send(o.url + '/healthz', { method: 'GET' });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ status: 'ok' });
    });
  });

  describe('415 unsupported_media_type', () => {
    const types = ['text/plain', 'text/plain; charset=utf-8', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/json'];
    it.each(types)('refuses %s on a normal endpoint and on file-progress', async (type) => {
      for (const path of ['/collections/list', '/collections/upload/file', '/collections/upload/file-progress']) {
        const r = await send(o.url + path, { headers: { authorization: `Bearer ${o.key}`, 'content-type': type }, body: '{}' });
        expectError(r, 415, 'unsupported_media_type');
      }
    });

    it('refuses application/octet-stream except on file-progress, where it is a raw part (contract §9)', async () => {
      for (const path of ['/collections/list', '/collections/upload/file']) {
        const r = await send(o.url + path, { headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/octet-stream' }, body: '{}' });
        expectError(r, 415, 'unsupported_media_type');
      }
      // A raw part without its fields in the query: the fields are missing, not the type.
      const raw = await send(o.url + '/collections/upload/file-progress', { headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/octet-stream' }, body: '{}' });
      expect(raw.status).toBe(400);
      expect(raw.body.error.code).toBe('invalid_request');
    });

    it('refuses a body without a Content-Type', async () => {
      for (const path of ['/collections/list', '/collections/upload/file-progress']) {
        const r = await send(o.url + path, { headers: { authorization: `Bearer ${o.key}` }, body: Buffer.from('{}') });
        expectError(r, 415, 'unsupported_media_type');
      }
    });

    it('accepts application/json with a charset, in any letter case', async () => {
      for (const type of ['application/json; charset=utf-8', 'Application/JSON']) {
        const r = await send(o.url + '/collections/list', { headers: { authorization: `Bearer ${o.key}`, 'content-type': type }, body: '{}' });
        expect(r.status, type).toBe(200);
      }
    });
  });

  describe('400 invalid_request', () => {
    it.each(['/collections/list', '/collections/upload/file', '/collections/upload/file-progress', '/collections/file/get'])('refuses invalid JSON on %s', async (path) => {
      for (const body of ['{', '{"a":}', "{'file_id':'x'}", '{"file_id":"x",}', 'nope', '{"file_id":"x"} x', '{"file_id":"x"}}']) {
        expectError(await send(o.url + path, { headers: json(), body }), 400, 'invalid_request');
      }
    });

    it('refuses a JSON body that is not UTF-8, and stores nothing of it', async () => {
      const bodies: Array<[string, Buffer]> = [
        ['/collections/folder/create', Buffer.concat([Buffer.from('{"name":"bad'), Buffer.from([0xff, 0xfe, 0xc0, 0x80]), Buffer.from('utf8","visibility":"Public"}')])],
        ['/collections/upload/file', Buffer.concat([Buffer.from('{"name":"bad'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('.txt","visibility":"Public","size":1,"file_type":"other"}')])],
      ];
      for (const [path, body] of bodies) expectError(await send(o.url + path, { headers: json(), body }), 400, 'invalid_request', path);
      const listed = await o.post('/collections/list', { folder_id: null, limit: 1000 });
      expect(listed.status).toBe(200);
      expect((listed.body as { folders: Array<{ name: string }> }).folders.filter((f) => f.name.startsWith('bad'))).toEqual([]);
    });

    it.each(['/collections/list', '/collections/upload/file', '/collections/upload/file-progress', '/collections/upload/status'])('refuses an empty body on %s', async (path) => {
      expectError(await send(o.url + path, { headers: json(), body: '' }), 400, 'invalid_request');
      expectError(await send(o.url + path, { headers: json() }), 400, 'invalid_request');
    });

    it.each(['/collections/list', '/collections/upload/file', '/collections/upload/file-progress', '/collections/upload/status'])('refuses JSON that is not an object on %s', async (path) => {
      for (const body of ['[]', 'null', '1', '"x"', 'true']) {
        expectError(await send(o.url + path, { headers: json(), body }), 400, 'invalid_request');
      }
    });

    it.each(ENDPOINTS)('%s: an unknown field is 400 invalid_request naming it', async (path, body) => {
      const r = await o.post(path, { ...body, surprise: 1 });
      expectError(r, 400, 'invalid_request', { field: 'surprise' });
    });

    it('names a missing or mistyped field in details.field', async () => {
      expectError(await o.post('/collections/upload/status', {}), 400, 'invalid_request', { field: 'file_id' });
      expectError(await o.post('/collections/upload/status', { file_id: 5 }), 400, 'invalid_request', { field: 'file_id' });
      expectError(await o.post('/collections/folder/create', { name: 'x' }), 400, 'invalid_request', { field: 'visibility' });
      expectError(await o.post('/collections/list', { limit: 'ten' }), 400, 'invalid_request', { field: 'limit' });
      expectError(await o.post('/collections/folder/delete', { folder_id: 'x', recursive: 'yes' }), 400, 'invalid_request', { field: 'recursive' });
    });
  });

  describe('413 payload_too_large', () => {
    it.each(['/collections/upload/file', '/collections/list', '/collections/folder/create'])('refuses a JSON body over 64 KiB on %s', async (path) => {
      const body = JSON.stringify({ name: 'x'.repeat(JSON_LIMIT), visibility: 'Public', size: 1, file_type: 'other' });
      expectError(await send(o.url + path, { headers: json(), body }), 413, 'payload_too_large', { limit: JSON_LIMIT });
    });

    it('accepts a JSON body just under 64 KiB (then applies the field rules)', async () => {
      const prefix = JSON.stringify({ name: '', visibility: 'Public', size: 1, file_type: 'other' });
      const body = JSON.stringify({ name: 'x'.repeat(JSON_LIMIT - prefix.length), visibility: 'Public', size: 1, file_type: 'other' });
      expect(Buffer.byteLength(body)).toBe(JSON_LIMIT);
      expectError(await send(o.url + '/collections/upload/file', { headers: json(), body }), 400, 'invalid_name', { field: 'name' });
    });
  });

  describe('404 for unknown routes and ids', () => {
    it('answers unknown routes with the JSON error body', async () => {
      expectError(await send(o.url + '/nope', { method: 'GET' }), 404, 'not_found');
      expectError(await send(o.url + '/nope', { headers: json(), body: '{}' }), 404, 'not_found');
      expectError(await send(o.url + '/collections/nope', { headers: json(), body: '{}' }), 404, 'not_found');
      expectError(await send(o.url + '/collections/upload/file', { method: 'GET', headers: { authorization: `Bearer ${o.key}` } }), 404, 'not_found');
      expectError(await send(o.url + '/collections/upload/file', { method: 'PUT', headers: json(), body: '{}' }), 404, 'not_found');
      expectError(await send(o.url + '/collections/upload/file/', { headers: json(), body: '{}' }), 404, 'not_found');
    });

    it('answers unknown ids on every endpoint that takes one', async () => {
      expectError(await o.post('/collections/file/get', { file_id: 'nope' }), 404, 'file_not_found', { file_id: 'nope' });
      expectError(await o.post('/collections/file/delete', { file_id: 'nope' }), 404, 'file_not_found');
      expectError(await o.post('/collections/file/update', { file_id: 'nope', name: 'x' }), 404, 'file_not_found');
      expectError(await o.post('/collections/file/download', { file_id: 'nope' }), 404, 'file_not_found');
      expectError(await o.post('/collections/create-link', { file_id: 'nope', file_type: 'image' }), 404, 'file_not_found');
      expectError(await o.post('/collections/folder/get', { folder_id: 'nope' }), 404, 'folder_not_found', { folder_id: 'nope' });
      expectError(await o.post('/collections/list', { folder_id: 'nope' }), 404, 'folder_not_found');
      expectError(await o.post('/collections/upload/file-progress', ENDPOINTS[1]![1]), 404, 'upload_not_found');
    });

    it('answers a malformed URL with the JSON error body', async () => {
      const r = await send(o.url + '/collections/%E0%A4%A', { headers: json(), body: '{}' });
      expectError(r, 400, 'invalid_request');
    });
  });

  describe('every row of the status table', () => {
    it('400: field rules name their field', async () => {
      const rec = await uploadBytes(o, Buffer.from('row 400'), { file_type: 'image', name: 'row.png' });
      expectError(await o.post('/collections/upload/file', { name: '..', visibility: 'Public', size: 1, file_type: 'other' }), 400, 'invalid_name', { field: 'name' });
      expectError(await o.post('/collections/create-link', { file_id: rec.file_id, file_type: 'video' }), 400, 'file_type_mismatch', { field: 'file_type' });
      for (const expiry of [0, 86401, 1.5, -5]) {
        expectError(await o.post('/collections/create-link', { file_id: rec.file_id, file_type: 'image', expiry }), 400, 'invalid_expiry', { field: 'expiry' });
      }
      const ok = await o.post('/collections/create-link', { file_id: rec.file_id, file_type: 'image', expiry: 60 });
      expect(ok.status).toBe(200);
    });

    it('409: conflicts with the current state', async () => {
      const init = await o.post('/collections/upload/file', { name: 'open.bin', visibility: 'Public', size: 3, file_type: 'other' });
      expect(init.status).toBe(200);
      expectError(await o.post('/collections/upload/complete-upload', { file_id: init.body.file_id }), 409, 'missing_parts', { missing: [1] });
      expectError(await o.post('/collections/create-link', { file_id: init.body.file_id, file_type: 'other' }), 409, 'upload_not_complete', { file_id: init.body.file_id });
      const rec = await uploadBytes(o, Buffer.from('x'));
      expectError(await o.post('/collections/upload/abort', { file_id: rec.file_id }), 409, 'upload_completed');

      const name = 'row409-' + randomBytes(4).toString('hex');
      const parent = await o.post('/collections/folder/create', { name, visibility: 'Public' });
      expect(parent.status).toBe(200);
      expectError(await o.post('/collections/folder/create', { name, visibility: 'Private' }), 409, 'folder_exists', { folder_id: parent.body.folder_id });
      const child = await o.post('/collections/folder/create', { name: 'child', visibility: 'Public', parent_id: parent.body.folder_id });
      expect(child.status).toBe(200);
      expectError(await o.post('/collections/folder/delete', { folder_id: parent.body.folder_id }), 409, 'folder_not_empty');
      expectError(await o.post('/collections/folder/update', { folder_id: parent.body.folder_id, parent_id: child.body.folder_id }), 409, 'cycle');
      expectError(await o.post('/collections/folder/update', { folder_id: parent.body.folder_id, parent_id: parent.body.folder_id }), 409, 'cycle');
    });

    it('413: a declared size over the limit', async () => {
      expectError(await o.post('/collections/upload/file', { name: 'big', visibility: 'Public', size: 10_000 * 5 * 1024 * 1024 + 1, file_type: 'other' }), 413, 'file_too_large', { field: 'size' });
    });
  });
});

describe('429 rate_limited', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin({ COFFER_RATE_LIMIT: '2' });
  });
  afterAll(async () => {
    await o.close();
  });

  it('answers a burst with 429 and Retry-After, then lets the client back in', async () => {
    const burst = await Promise.all(Array.from({ length: 12 }, () => o.post('/collections/list', {})));
    const ok = burst.filter((r) => r.status === 200);
    const limited = burst.filter((r) => r.status === 429);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(ok.length + limited.length).toBe(burst.length);
    let wait = 0;
    for (const r of limited) {
      expectError(r, 429, 'rate_limited');
      const retryAfter = r.headers.get('retry-after');
      expect(retryAfter).toMatch(/^[1-9]\d*$/);
      expect(r.body.error.details.retry_after).toBe(Number(retryAfter));
      wait = Math.max(wait, Number(retryAfter));
    }
    // Without a key too: the limit counts requests, not only good ones.
    const anon = await send(o.url + '/collections/list', { headers: { 'content-type': 'application/json' }, body: '{}' });
    expectError(anon, 429, 'rate_limited');
    expect(anon.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);

    await new Promise((r) => setTimeout(r, wait * 1000 + 100));
    const again = await o.post('/collections/list', {});
    expect(again.status).toBe(200);
  }, 20_000);
});

describe('request log', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin();
  });
  afterAll(async () => {
    await o.close();
  });

  it('never holds the access key or chunk data, and has one line per request with req_id and duration_ms', async () => {
    const ids: string[] = [];
    let n = 0;
    const nextId = () => {
      const id = `logtest-${++n}`;
      ids.push(id);
      return id;
    };
    const post = (path: string, body: unknown, extra: Record<string, string> = {}) => o.post(path, body, { headers: { 'x-request-id': nextId(), ...extra } });

    const data = randomBytes(6000);
    const b64 = data.toString('base64');
    const init = await post('/collections/upload/file', { name: 'secret.bin', visibility: 'Private', size: data.length, file_type: 'other' });
    expect(init.status).toBe(200);
    const s = init.body;
    const session = { bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId };
    expect((await post('/collections/upload/file-progress', { ...session, partNumber: 1, body: b64 })).status).toBe(200);
    // Refused chunks, whose bodies must not be logged either.
    expect((await post('/collections/upload/file-progress', { ...session, partNumber: 1, body: b64.slice(0, 400) + '$' })).status).toBe(400);
    expect((await post('/collections/upload/file-progress', { ...session, partNumber: 7, body: b64 })).status).toBe(400);
    expect((await post('/collections/upload/file-progress', { ...session, fileId: 'nope', partNumber: 1, body: b64 })).status).toBe(404);
    expect((await post('/collections/upload/file-progress', undefined, { 'content-type': 'application/json' })).status).toBe(400);
    expect((await post('/collections/upload/complete-upload', { file_id: s.file_id })).status).toBe(200);
    expect((await post('/collections/list', {}, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await post('/collections/list', { extra: 1 })).status).toBe(400);
    expect((await post('/collections/nope', {})).status).toBe(404);
    const health = await fetch(o.url + '/healthz', { headers: { 'x-request-id': nextId() } });
    expect(health.status).toBe(200);
    // A request without an id of its own gets one, returned in X-Request-Id.
    const anon = await o.post('/collections/upload/status', { file_id: s.file_id });
    expect(anon.status).toBe(200);
    const anonId = anon.headers.get('x-request-id');
    expect(anonId).toMatch(/^[A-Za-z0-9._:-]{1,64}$/);
    ids.push(anonId!);

    const lines = () => o.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    const requestLines = (id: string) => lines().filter((l) => l.req_id === id && typeof l.duration_ms === 'number');
    const all = await poll(() => ids.every((id) => requestLines(id).length >= 1), { timeoutMs: 3000, intervalMs: 25 });
    expect(all, `log lines: ${o.logs.join('\n')}`).toBe(true);
    for (const id of ids) {
      const mine = requestLines(id);
      expect(mine, id).toHaveLength(1);
      expect(mine[0]!.duration_ms as number).toBeGreaterThanOrEqual(0);
    }

    const text = o.logs.join('\n');
    expect(text).not.toContain(o.key);
    for (let at = 0; at + 24 <= b64.length; at += 500) expect(text).not.toContain(b64.slice(at, at + 24));
    expect(text).not.toContain(b64.slice(0, 400));
  });
});
