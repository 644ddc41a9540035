/**
 * Keys (contract §10): made once and stored hashed, listed without secrets, revoked and
 * expired at once, confined to a folder's subtree, with a budget of their own; only the root
 * key makes admin keys.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { ManualClock } from '../kit/index.js';

let o: TestOrigin;
/** The origin's time: keys expire as the test moves it. */
const clock = new ManualClock(Date.now());
beforeAll(async () => {
  o = await startTestOrigin({}, { clock });
});
afterAll(async () => o?.close());

const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
async function makeKey(body: Record<string, unknown>, by?: string): Promise<{ key: string; key_id: string } & Record<string, any>> {
  const r = await o.post('/collections/keys/create', body, by ? as(by) : undefined);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}
const folder = async (name: string, parent?: string, by?: string) =>
  (await o.post('/collections/folder/create', { name, visibility: 'Public', ...(parent ? { parent_id: parent } : {}) }, by ? as(by) : undefined)).body;

describe('making, listing, revoking', () => {
  test('a key is answered once, listed without its secret, stored as a hash, and works', async () => {
    const k = await makeKey({ name: 'ci reader', scopes: ['READ', 'read'] });
    expect(Object.keys(k).sort()).toEqual(['created_at', 'created_by', 'expires_at', 'folder_id', 'key', 'key_id', 'last_used_at', 'name', 'revoked_at', 'scopes']);
    expect(k).toMatchObject({ name: 'ci reader', scopes: ['read'], folder_id: null, expires_at: null, revoked_at: null, last_used_at: null, created_by: 'root' });
    expect(k.key).toMatch(/^ck_[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    const listed = (await o.post('/collections/keys/list', {})).body.keys.find((x: any) => x.key_id === k.key_id);
    expect(listed).toMatchObject({ key_id: k.key_id, name: 'ci reader', scopes: ['read'] });
    expect(JSON.stringify(listed)).not.toContain(k.key.split('.')[1]);
    const row = await o.origin.stores.meta.read.keys.get(k.key_id);
    expect(row!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(k.key.split('.')[1]);
    expect((await o.post('/collections/list', {}, as(k.key))).status).toBe(200);
    const used = (await o.post('/collections/keys/list', {})).body.keys.find((x: any) => x.key_id === k.key_id);
    expect(Date.parse(used.last_used_at)).toBeGreaterThan(0);
  });

  test('a revoked key fails at once, with every grant it made', async () => {
    const k = await makeKey({ name: 'temp', scopes: ['read', 'write'] });
    const grant = (await o.post('/collections/upload/grant', { max_size: 10 }, as(k.key))).body.grant;
    const initiate = { name: 'g.txt', visibility: 'Private', size: 3, file_type: 'document' };
    expect((await o.post('/collections/upload/file', initiate, { headers: { authorization: `Grant ${grant}` } })).status).toBe(200);
    const r = await o.post('/collections/keys/revoke', { key_id: k.key_id });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ key_id: k.key_id, revoked: true });
    expectError(await o.post('/collections/list', {}, as(k.key)), 401, 'unauthorized');
    expectError(await o.post('/collections/upload/file', initiate, { headers: { authorization: `Grant ${grant}` } }), 401, 'unauthorized');
    // Revoking again answers the same time.
    expect((await o.post('/collections/keys/revoke', { key_id: k.key_id })).body.revoked_at).toBe(r.body.revoked_at);
    expectError(await o.post('/collections/keys/revoke', { key_id: 'nope' }), 404, 'key_not_found');
  });

  test('an expiring key works until then and fails after', async () => {
    const k = await makeKey({ name: 'brief', scopes: ['read'], expires_in: 1 });
    expect(Date.parse(k.expires_at) - Date.parse(k.created_at)).toBe(1000);
    expect((await o.post('/collections/list', {}, as(k.key))).status).toBe(200);
    await clock.advance(1100);
    expectError(await o.post('/collections/list', {}, as(k.key)), 401, 'unauthorized');
  });

  test('a key whose secret is changed, or of another shape, is refused alike', async () => {
    const k = await makeKey({ name: 'shape', scopes: ['read'] });
    const last = k.key.slice(-1) === 'A' ? 'B' : 'A';
    for (const bad of [k.key.slice(0, -1) + last, k.key.replace('ck_', 'cg_'), `${k.key}x`, `ck_${k.key_id}`, 'ck_']) {
      expectError(await o.post('/collections/list', {}, as(bad)), 401, 'unauthorized', bad);
    }
  });

  test('bad requests: scopes, names, expiry; only the root key makes admin keys', async () => {
    expectError(await o.post('/collections/keys/create', { name: 'x', scopes: [] }), 400, 'invalid_scopes');
    expectError(await o.post('/collections/keys/create', { name: 'x', scopes: ['root'] }), 400, 'invalid_scopes');
    expectError(await o.post('/collections/keys/create', { name: '', scopes: ['read'] }), 400, 'invalid_name');
    expectError(await o.post('/collections/keys/create', { name: 'x', scopes: ['read'], expires_in: 0 }), 400, 'invalid_expiry');
    expectError(await o.post('/collections/keys/create', { name: 'x', scopes: ['read'], expires_in: 1.5 }), 400, 'invalid_expiry');
    expectError(await o.post('/collections/keys/create', { name: 'x', scopes: ['read'], folder_id: 'nope' }), 404, 'folder_not_found');
    expectError(await o.post('/collections/keys/create', { name: 'x', scopes: 'read' }), 400, 'invalid_request');
    const admin = await makeKey({ name: 'second admin', scopes: ['admin', 'read', 'write'] });
    expectError(await o.post('/collections/keys/create', { name: 'x', scopes: ['admin'] }, as(admin.key)), 403, 'forbidden');
    const made = await o.post('/collections/keys/create', { name: 'x', scopes: ['read', 'write'] }, as(admin.key));
    expect(made.status).toBe(200);
    expect(made.body.created_by).toBe(admin.key_id);
  });
});

describe('a key confined to a folder', () => {
  let top: any;
  let inner: any;
  let away: any;
  let key: string;
  let admin: string;
  beforeAll(async () => {
    top = await folder('tenant');
    inner = await folder('inner', top.folder_id);
    away = await folder('elsewhere');
    key = (await makeKey({ name: 'tenant rw', scopes: ['read', 'write'], folder_id: top.folder_id })).key;
    admin = (await makeKey({ name: 'tenant admin', scopes: ['admin'] })).key;
  });

  test('the root and everything outside answer 404, list and search included', async () => {
    expectError(await o.post('/collections/list', {}, as(key)), 404, 'not_found');
    expectError(await o.post('/collections/search', { query: 'x' }, as(key)), 404, 'not_found');
    expectError(await o.post('/collections/list', { folder_id: away.folder_id }, as(key)), 404, 'folder_not_found');
    expectError(await o.post('/collections/folder/create', { name: 'at-root', visibility: 'Public' }, as(key)), 404, 'not_found');
  });

  test("an upload that names no folder goes to the key's own folder, as a grant's and tus uploads do", async () => {
    const r = await o.post('/collections/upload/file', { name: 'r.txt', visibility: 'Public', size: 1, file_type: 'document' }, as(key));
    expect(r.status).toBe(200);
    expect(r.body.folder_id).toBe(top.folder_id);
  });

  test('inside works; the trail of folders starts at its own', async () => {
    const r = await o.post('/collections/list', { folder_id: inner.folder_id }, as(key));
    expect(r.status).toBe(200);
    expect(r.body.breadcrumbs.map((b: any) => b.folder_id)).toEqual([top.folder_id, inner.folder_id]);
    const f = await uploadBytes(o, Buffer.from('hello'), { folder_id: inner.folder_id, name: 'in.txt' });
    expect((await o.post('/collections/file/get', { file_id: f.file_id }, as(key))).status).toBe(200);
    expect((await o.post('/collections/search', { query: 'in', folder_id: inner.folder_id }, as(key))).body.files.length).toBe(1);
  });

  test('nothing moves out of the subtree, or into it from outside', async () => {
    const inside = await uploadBytes(o, Buffer.from('a'), { folder_id: inner.folder_id, name: 'stay.txt' });
    const outside = await uploadBytes(o, Buffer.from('b'), { folder_id: away.folder_id, name: 'there.txt' });
    expectError(await o.post('/collections/file/update', { file_id: inside.file_id, folder_id: away.folder_id }, as(key)), 404, 'folder_not_found');
    expectError(await o.post('/collections/file/update', { file_id: inside.file_id, folder_id: null }, as(key)), 404, 'not_found');
    expectError(await o.post('/collections/file/update', { file_id: outside.file_id, folder_id: inner.folder_id }, as(key)), 404, 'file_not_found');
    expectError(await o.post('/collections/folder/update', { folder_id: inner.folder_id, parent_id: away.folder_id }, as(key)), 404, 'folder_not_found');
    expectError(await o.post('/collections/folder/update', { folder_id: inner.folder_id, parent_id: null }, as(key)), 404, 'not_found');
    expectError(await o.post('/collections/folder/update', { folder_id: away.folder_id, parent_id: top.folder_id }, as(key)), 404, 'folder_not_found');
    expectError(await o.post('/collections/create-link', { file_id: outside.file_id, file_type: 'document' }, as(key)), 404, 'file_not_found');
    // Moves within the subtree are fine.
    const sub = await folder('sub', top.folder_id, key);
    expect((await o.post('/collections/file/update', { file_id: inside.file_id, folder_id: sub.folder_id }, as(key))).status).toBe(200);
  });

  test('keys and grants it hands out stay inside; an unconfined admin sees them all', async () => {
    const grant = await o.post('/collections/upload/grant', { max_size: 10 }, as(key));
    expect(grant.status).toBe(200);
    const g = `Grant ${grant.body.grant}`;
    // The grant's default folder is the key's own.
    const s = await o.post('/collections/upload/file', { name: 'g.txt', visibility: 'Public', size: 1, file_type: 'document' }, { headers: { authorization: g } });
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    expect(s.body.folder_id).toBe(top.folder_id);
    expectError(await o.post('/collections/upload/grant', { max_size: 10, folder_id: away.folder_id }, as(key)), 404, 'folder_not_found');
    const listed = (await o.post('/collections/keys/list', {}, as(admin))).body.keys.map((k: any) => k.name);
    expect(listed).toContain('tenant rw');
  });
});

describe('rate limits', () => {
  let limited: TestOrigin;
  beforeAll(async () => {
    // Two requests a second, bursts of four: per client address, and per key.
    limited = await startTestOrigin({ COFFER_RATE_LIMIT: '2' });
  });
  afterAll(async () => limited?.close());

  /** POSTs from a chosen loopback address, so two callers can share a key but not an address. */
  function postFrom(localAddress: string, key: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const u = new URL('/collections/list', limited.url);
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', localAddress, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end('{}');
    });
  }

  test('a key has a budget of its own, whatever address it comes from', async () => {
    const made = await limited.post('/collections/keys/create', { name: 'busy', scopes: ['read'] });
    expect(made.status).toBe(200);
    const key = made.body.key as string;
    // Two requests from each of five addresses: no address runs out, the key does.
    const statuses: number[] = [];
    for (const host of [4, 5, 6, 7, 8]) for (let i = 0; i < 2; i++) statuses.push(await postFrom(`127.0.0.${host}`, key));
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    expect(statuses).toContain(429);
    // A fresh address with the same key: still spent. The root key from that address: fine.
    expect(await postFrom('127.0.0.3', key)).toBe(429);
    expect(await postFrom('127.0.0.3', limited.key)).toBe(200);
  });
});
