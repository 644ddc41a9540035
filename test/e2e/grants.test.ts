/**
 * Upload grants and link revocation (contract §10). A grant uploads within its folder,
 * visibility, size, types, count and lifetime, through the upload calls only, and sees only
 * its own uploads; the SDK uploads with one in place of a key. Revoking a file's links refuses
 * every earlier link at three edges before the call answers, while later links work.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { RunningEdge } from '../../src/edge/server.js';
import { CofferClient, signLink } from '../../src/sdk/index.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { expectError } from '../helpers/api.js';
import { ManualClock } from '../kit/index.js';

let o: TestOrigin;
beforeAll(async () => {
  o = await startTestOrigin();
});
afterAll(async () => o?.close());

const grantHeader = (g: string) => ({ headers: { authorization: `Grant ${g}` } });
async function makeGrant(body: Record<string, unknown>, on: TestOrigin = o): Promise<string> {
  const r = await on.post('/collections/upload/grant', body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.grant).toMatch(/^cg_[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
  return r.body.grant;
}
const initiate = (fields: Record<string, unknown> = {}) => ({ name: 'photo.png', visibility: 'Private', size: 100, file_type: 'image', ...fields });

describe('upload grants', () => {
  let box: string;
  let inner: string;
  let other: string;
  beforeAll(async () => {
    box = (await o.post('/collections/folder/create', { name: 'uploads', visibility: 'Private' })).body.folder_id;
    inner = (await o.post('/collections/folder/create', { name: 'inner', visibility: 'Private', parent_id: box })).body.folder_id;
    other = (await o.post('/collections/folder/create', { name: 'other', visibility: 'Private' })).body.folder_id;
  });

  test('each limit is enforced at initiate', async () => {
    const g = await makeGrant({ folder_id: box, visibility: 'Private', max_size: 1000, content_types: ['image/*', 'application/pdf'], max_files: 2 });
    expectError(await o.post('/collections/upload/file', initiate({ visibility: 'Public' }), grantHeader(g)), 403, 'forbidden');
    expectError(await o.post('/collections/upload/file', initiate({ size: 1001 }), grantHeader(g)), 413, 'file_too_large');
    expectError(await o.post('/collections/upload/file', initiate({ name: 'a.txt', file_type: 'document' }), grantHeader(g)), 403, 'forbidden');
    expectError(await o.post('/collections/upload/file', initiate({ content_type: 'text/html' }), grantHeader(g)), 403, 'forbidden');
    expectError(await o.post('/collections/upload/file', initiate({ folder_id: other }), grantHeader(g)), 404, 'folder_not_found');
    // Refusals do not count; no folder_id means the grant's own; below it is fine.
    const first = await o.post('/collections/upload/file', initiate(), grantHeader(g));
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.folder_id).toBe(box);
    const second = await o.post('/collections/upload/file', initiate({ name: 'doc.pdf', file_type: 'document', folder_id: inner }), grantHeader(g));
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expectError(await o.post('/collections/upload/file', initiate(), grantHeader(g)), 403, 'forbidden');
  });

  test('a grant reaches the upload calls of its own uploads and nothing else', async () => {
    const g = await makeGrant({ max_size: 10, max_files: 3 });
    const mine = (await o.post('/collections/upload/file', initiate({ size: 3 }), grantHeader(g))).body;
    const theirs = (await o.post('/collections/upload/file', initiate({ size: 3 }))).body;
    expect((await o.post('/collections/upload/status', { file_id: mine.file_id }, grantHeader(g))).status).toBe(200);
    expectError(await o.post('/collections/upload/status', { file_id: theirs.file_id }, grantHeader(g)), 404, 'file_not_found');
    expectError(await o.post('/collections/upload/file-progress', { body: 'YWJj', bucket: theirs.bucket, key: theirs.key, uploadId: theirs.uploadId, fileId: theirs.fileId, partNumber: 1 }, grantHeader(g)), 404, 'upload_not_found');
    expectError(await o.post('/collections/upload/abort', { file_id: theirs.file_id }, grantHeader(g)), 404, 'file_not_found');
    for (const [path, body] of [['/collections/list', {}], ['/collections/file/get', { file_id: mine.file_id }], ['/collections/upload/grant', { max_size: 1 }], ['/collections/keys/list', {}]] as const) {
      expectError(await o.post(path, body, grantHeader(g)), 403, 'forbidden', path);
    }
  });

  test('expired or forged grants are refused', async () => {
    // An origin of its own, whose time the test moves: this file's edges need one that runs by itself.
    const clock = new ManualClock(Date.now());
    const timed = await startTestOrigin({}, { clock });
    try {
      const g = await makeGrant({ max_size: 10, expires_in: 1 }, timed);
      await clock.advance(1100);
      expectError(await timed.post('/collections/upload/file', initiate({ size: 3 }), grantHeader(g)), 401, 'unauthorized');
    } finally {
      await timed.close();
    }
    const live = await makeGrant({ max_size: 10 });
    expectError(await o.post('/collections/upload/file', initiate({ size: 3 }), grantHeader(live.slice(0, -1) + (live.endsWith('A') ? 'B' : 'A'))), 401, 'unauthorized');
    expectError(await o.post('/collections/upload/file', initiate({ size: 3 }), { headers: { authorization: `Bearer ${live}` } }), 401, 'unauthorized');
  });

  test('bad grant requests', async () => {
    expectError(await o.post('/collections/upload/grant', {}), 400, 'invalid_request');
    expectError(await o.post('/collections/upload/grant', { max_size: -1 }), 400, 'invalid_max_size');
    expectError(await o.post('/collections/upload/grant', { max_size: 1, expires_in: 86_401 }), 400, 'invalid_expiry');
    expectError(await o.post('/collections/upload/grant', { max_size: 1, max_files: 0 }), 400, 'invalid_max_files');
    expectError(await o.post('/collections/upload/grant', { max_size: 1, content_types: ['not a type'] }), 400, 'invalid_content_type');
    expectError(await o.post('/collections/upload/grant', { max_size: 1, visibility: 'Secret' }), 400, 'invalid_visibility');
    expectError(await o.post('/collections/upload/grant', { max_size: 1, folder_id: 'nope' }), 404, 'folder_not_found');
  });

  test('the SDK uploads with a grant in place of a key', async () => {
    const g = await makeGrant({ folder_id: box, max_size: 6 * 1024 * 1024, max_files: 1 });
    const browser = new CofferClient({ url: o.url, grant: g });
    const bytes = new Uint8Array(6 * 1024 * 1024).map((_, i) => i % 251);
    const file = await browser.uploadFile(bytes, { name: 'big.bin', visibility: 'Private' });
    expect(file).toMatchObject({ status: 'ready', folder_id: box, size: bytes.length });
    await expect(browser.list()).rejects.toMatchObject({ status: 403, code: 'forbidden' });
  });
});

describe('revoking a file\'s links', () => {
  const running: TestEdge[] = [];
  const edges: RunningEdge[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) {
      running.push(await startTestEdge(o));
      edges.push(running.at(-1)!.edge);
    }
  });
  afterAll(async () => {
    await Promise.all(running.map((e) => e.close()));
  });

  const at = async (edge: RunningEdge, link: string) => {
    const u = new URL(link);
    const res = await fetch(`${edge.url}${u.pathname}${u.search}`);
    const text = await res.text();
    return { status: res.status, code: res.status === 200 ? null : JSON.parse(text).error.code };
  };

  test('every earlier link, the origin\'s or signed offline, is refused at every edge when the call answers; later ones work', async () => {
    const file = await uploadBytes(o, Buffer.from('revocable'), { name: 'r.txt', visibility: 'Private', file_type: 'document' });
    const made = (await o.post('/collections/create-link', { file_id: file.file_id, file_type: 'document', expiry: 600 })).body.presigned_url;
    const offline = await signLink(file.delivery_url, { expiresIn: 600, secret: o.secret });
    const download = (await o.post('/collections/file/download', { file_id: file.file_id })).body.download_url;
    for (const e of edges) for (const link of [made, offline, download]) expect((await at(e, link)).status).toBe(200);

    const r = await o.post('/collections/file/revoke-links', { file_id: file.file_id });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.file_id).toBe(file.file_id);
    for (const e of edges) {
      for (const link of [made, offline, download]) expect(await at(e, link)).toEqual({ status: 403, code: 'link_revoked' });
    }
    const after = (await o.post('/collections/create-link', { file_id: file.file_id, file_type: 'document', expiry: 600 })).body.presigned_url;
    const offlineAfter = await signLink(file.delivery_url, { expiresIn: 600, secret: o.secret });
    for (const e of edges) for (const link of [after, offlineAfter]) expect((await at(e, link)).status).toBe(200);
    // Tampering is still a signature error, not a revocation.
    expect(await at(edges[0]!, made.replace(/X-Issued=\d+/, `X-Issued=${Date.now() + 60_000}`))).toEqual({ status: 403, code: 'invalid_signature' });
  });

  test('a link without X-Issued counts as issued a day before it expires', async () => {
    const file = await uploadBytes(o, Buffer.from('old'), { name: 'old.txt', visibility: 'Private', file_type: 'document' });
    const { createHmac } = await import('node:crypto');
    const path = `/files/${file.file_id}`;
    const expires = Math.floor(Date.now() / 1000) + 600;
    const sig = createHmac('sha256', o.secret).update(`${path}\nX-Expires=${expires}`).digest('base64url');
    const legacy = `http://cdn${path}?X-Expires=${expires}&X-Sig=${sig}`;
    expect((await at(edges[1]!, legacy)).status).toBe(200);
    expect((await o.post('/collections/file/revoke-links', { file_id: file.file_id })).status).toBe(200);
    expect(await at(edges[1]!, legacy)).toEqual({ status: 403, code: 'link_revoked' });
  });

  test('an unknown file is 404, and revocation keeps across an edge restart (snapshot)', async () => {
    expectError(await o.post('/collections/file/revoke-links', { file_id: 'nope' }), 404, 'file_not_found');
    const file = await uploadBytes(o, Buffer.from('kept'), { name: 'k.txt', visibility: 'Private', file_type: 'document' });
    const made = (await o.post('/collections/create-link', { file_id: file.file_id, file_type: 'document' })).body.presigned_url;
    await o.post('/collections/file/revoke-links', { file_id: file.file_id });
    running.push(await startTestEdge(o));
    const fresh = running.at(-1)!.edge;
    expect(await at(fresh, made)).toEqual({ status: 403, code: 'link_revoked' });
  });
});
