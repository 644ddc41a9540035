/**
 * Who may use /tus (contract §9, §10): the root key, keys with "write" (within their folder),
 * and upload grants, whose limits apply at creation as at initiate and which reach only their
 * own uploads. Keys without "write" are refused, and a grant's partial uploads are bounded.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { offsetOf, tusClient, type TusAnswer } from '../helpers/tus.js';
import { sha256 } from '../kit/index.js';

let o: TestOrigin;
let root: ReturnType<typeof tusClient>;
let box: string;
let other: string;

beforeAll(async () => {
  o = await startTestOrigin();
  root = tusClient(o.url, `Bearer ${o.key}`);
  box = (await o.post('/collections/folder/create', { name: 'box', visibility: 'Private' })).body.folder_id;
  other = (await o.post('/collections/folder/create', { name: 'other', visibility: 'Private' })).body.folder_id;
});
afterAll(async () => o?.close());

const grantClient = async (body: Record<string, unknown>) => {
  const r = await o.post('/collections/upload/grant', body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return tusClient(o.url, `Grant ${r.body.grant}`);
};
const keyClient = async (scopes: string[], folderId?: string) => {
  const r = await o.post('/collections/keys/create', { name: `k-${scopes.join('-')}`, scopes, ...(folderId ? { folder_id: folderId } : {}) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return tusClient(o.url, `Bearer ${r.body.key}`);
};
const refused = (a: TusAnswer, status: number, code: string) => expectError({ status: a.status, json: a.json, body: a.body, headers: a.headers }, status, code);
const png = { filename: 'photo.png', filetype: 'image/png' };

describe('upload grants on /tus', () => {
  test('each limit of a grant applies at creation, as at initiate', async () => {
    const g = await grantClient({ folder_id: box, visibility: 'Private', max_size: 1000, content_types: ['image/*'], max_files: 2 });
    refused(await g.create(1001, png), 413, 'file_too_large');
    refused(await g.create(100, { ...png, visibility: 'Public' }), 403, 'forbidden');
    refused(await g.create(100, { filename: 'page.html', filetype: 'text/html' }), 403, 'forbidden');
    // Without filetype the type comes from the name, and is checked the same way.
    refused(await g.create(100, { filename: 'notes.txt' }), 403, 'forbidden');
    refused(await g.create(100, { ...png, folder_id: other }), 404, 'folder_not_found');
    const bytes = randomBytes(100);
    const first = await g.create(bytes.length, png);
    expect(first.status).toBe(201);
    const done = await g.patch(first.headers.location!, 0, bytes);
    expect(done.status).toBe(204);
    const file = (await o.post('/collections/file/get', { file_id: done.headers['coffer-file-id'] })).body;
    expect(file).toMatchObject({ status: 'ready', folder_id: box, sha256: sha256(bytes) });
    expect((await g.create(10, png)).status).toBe(201);
    // Two files started: the third is refused, refusals above not having counted.
    refused(await g.create(10, png), 403, 'forbidden');
  });

  test('a grant reaches its own uploads only, and they reach nothing else', async () => {
    const mine = await grantClient({ max_size: 100, max_files: 5 });
    const theirs = await grantClient({ max_size: 100, max_files: 5 });
    const own = (await mine.create(50, png)).headers.location!;
    const byKey = (await root.create(50, png)).headers.location!;
    const foreign = (await theirs.create(50, png)).headers.location!;
    expect(offsetOf(await mine.head(own))).toBe(0);
    for (const url of [byKey, foreign]) {
      expect((await mine.head(url)).status).toBe(404);
      refused(await mine.patch(url, 0, randomBytes(5)), 404, 'upload_not_found');
      refused(await mine.remove(url), 404, 'upload_not_found');
    }
    // The root key reaches every upload; the grant's own DELETE works.
    expect(offsetOf(await root.head(foreign))).toBe(0);
    expect((await mine.remove(own)).status).toBe(204);
    const key = o.key;
    expect((await tusClient(o.url, `Bearer ${key}`).head(own)).status).toBe(404);
  });

  test('partial uploads do not count as files, but together hold no more than the grant\'s files could', async () => {
    const g = await grantClient({ max_size: 1000, max_files: 2 });
    const a = (await g.create(1000, {}, { 'upload-concat': 'partial' })).headers.location!;
    expect((await g.create(600, {}, { 'upload-concat': 'partial' })).status).toBe(201);
    refused(await g.create(1001, {}, { 'upload-concat': 'partial' }), 413, 'file_too_large');
    refused(await g.create(401, {}, { 'upload-concat': 'partial' }), 403, 'forbidden');
    expect((await g.create(400, {}, { 'upload-concat': 'partial' })).status).toBe(201);
    // Another grant's partial upload cannot go into this one's final upload.
    const stranger = await grantClient({ max_size: 1000, max_files: 1 });
    const theirs = (await stranger.create(5, {}, { 'upload-concat': 'partial' })).headers.location!;
    await stranger.patch(theirs, 0, randomBytes(5));
    const bytes = randomBytes(1000);
    await g.patch(a, 0, bytes);
    refused(await g.create(null, png, { 'upload-concat': `final;${a} ${theirs}` }), 404, 'upload_not_found');
    const final = await g.create(null, png, { 'upload-concat': `final;${a}` });
    expect(final.status).toBe(201);
    expect((await o.post('/collections/file/get', { file_id: final.headers['coffer-file-id'] })).body.sha256).toBe(sha256(bytes));
  });

  test('an expired grant is refused', async () => {
    const r = await o.post('/collections/upload/grant', { max_size: 100, expires_in: 1 });
    const g = tusClient(o.url, `Grant ${r.body.grant}`);
    const url = (await g.create(10, png)).headers.location!;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    refused(await g.create(10, png), 401, 'unauthorized');
    refused(await g.patch(url, 0, randomBytes(10)), 401, 'unauthorized');
  });
});

describe('keys on /tus', () => {
  test('a key without "write" is refused on every method; one with it uploads', async () => {
    const url = (await root.create(10, png)).headers.location!;
    for (const scopes of [['read'], ['admin'], ['read', 'admin']]) {
      const k = await keyClient(scopes);
      refused(await k.create(10, png), 403, 'forbidden');
      expect((await k.head(url)).status).toBe(403);
      refused(await k.patch(url, 0, randomBytes(10)), 403, 'forbidden');
      refused(await k.remove(url), 403, 'forbidden');
    }
    const writer = await keyClient(['write']);
    const done = await writer.patch(url, 0, Buffer.from('0123456789'));
    expect(done.status).toBe(204);
    expect(done.headers['coffer-file-id']).toBeDefined();
  });

  test('a key confined to a folder uploads inside it only, and sees no upload outside it', async () => {
    const k = await keyClient(['write', 'read'], box);
    refused(await k.create(10, { ...png, folder_id: other }), 404, 'folder_not_found');
    // No folder named: the key's own folder (for a grant, the grant's).
    const unnamed = await k.create(1, png);
    expect(unnamed.status).toBe(201);
    const landed = await k.patch(unnamed.headers.location!, 0, Buffer.from('z'));
    expect((await o.post('/collections/file/get', { file_id: landed.headers['coffer-file-id'] })).body.folder_id).toBe(box);
    const inside = await k.create(3, { ...png, folder_id: box });
    expect(inside.status).toBe(201);
    expect((await k.patch(inside.headers.location!, 0, Buffer.from('abc'))).status).toBe(204);
    const outside = (await root.create(10, { ...png, folder_id: other })).headers.location!;
    expect((await k.head(outside)).status).toBe(404);
    // Its partial uploads live in its folder, so it reaches them.
    const partial = await k.create(3, {}, { 'upload-concat': 'partial' });
    expect(partial.status).toBe(201);
    expect((await k.patch(partial.headers.location!, 0, Buffer.from('xyz'))).status).toBe(204);
    expect((await k.create(null, { ...png, folder_id: box }, { 'upload-concat': `final;${partial.headers.location}` })).status).toBe(201);
  });

  test('a Playground session needs its CSRF token on /tus, like every call', async () => {
    const res = await fetch(`${o.url}/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ access_key: o.key }) });
    const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
    const csrf = ((await res.json()) as { csrf_token: string }).csrf_token;
    const session = tusClient(o.url, null);
    refused(await session.create(10, png, { cookie }), 403, 'csrf_failed');
    expect((await session.create(10, png, { cookie, 'x-csrf-token': csrf })).status).toBe(201);
  });
});
