/**
 * Key lineage (issue 23, finding 4): a key made by a key gives no scope its maker lacks, no
 * folder outside its maker's and no lifetime past its maker's, and stops working the moment
 * its maker, or any key above, is revoked or expires: by Bearer, by S3 signature, and for the
 * upload grants below it. Each test failed on the code before lineage was kept.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ListBucketsCommand, type S3Client } from '@aws-sdk/client-s3';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { expectS3Error, s3Client } from '../helpers/s3-api.js';
import { openBlobStore, openMetadataStore } from '../../src/adapters/open.js';
import { CofferService } from '../../src/service/service.js';
import type { MetadataStore } from '../../src/core/ports.js';
import { authenticator } from '../../src/origin/auth/caller.js';
import { ROOT_CALLER, type Caller, type StoredKey } from '../../src/core/access.js';
import { MAX_KEY_DEPTH, keyStanding } from '../../src/service/lineage.js';
import { CofferError } from '../../src/core/errors.js';

let o: TestOrigin;
const clients: S3Client[] = [];
beforeAll(async () => {
  o = await startTestOrigin({ COFFER_LOG_LEVEL: 'warn' });
});
afterAll(async () => {
  for (const c of clients) c.destroy();
  await o?.close();
});

const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
const grantAuth = (grant: string) => ({ headers: { authorization: `Grant ${grant}` } });
const initiate = { name: 'g.txt', visibility: 'Private', size: 3, file_type: 'document' };

async function makeKey(body: Record<string, unknown>, by?: string): Promise<{ key: string; key_id: string } & Record<string, any>> {
  const r = await o.post('/collections/keys/create', body, by ? as(by) : undefined);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

describe('what a key may give', () => {
  test('no scope its maker lacks: 403 forbidden on "scopes"', async () => {
    const maker = await makeKey({ name: 'reader-admin', scopes: ['admin', 'read'] });
    for (const scopes of [['write'], ['read', 'write']]) {
      const r = await o.post('/collections/keys/create', { name: 'wider', scopes }, as(maker.key));
      expectError(r, 403, 'forbidden');
      expect(r.body.error.details).toMatchObject({ field: 'scopes', scope: 'write' });
    }
    const child = await makeKey({ name: 'narrower', scopes: ['read'] }, maker.key);
    expect(child.created_by).toBe(maker.key_id);
  });

  test('no lifetime past its maker\'s: none asked expires with the maker, more asked is 400', async () => {
    const maker = await makeKey({ name: 'brief-admin', scopes: ['admin', 'read', 'write'], expires_in: 600 });
    const child = await makeKey({ name: 'inherits', scopes: ['read'] }, maker.key);
    expect(child.expires_at).toBe(maker.expires_at);
    const longer = await o.post('/collections/keys/create', { name: 'outlives', scopes: ['read'], expires_in: 3600 }, as(maker.key));
    expectError(longer, 400, 'invalid_expiry');
    expect(longer.body.error.details).toMatchObject({ field: 'expires_in', maker_expires_at: maker.expires_at });
    const shorter = await makeKey({ name: 'shorter', scopes: ['read'], expires_in: 60 }, maker.key);
    expect(Date.parse(shorter.expires_at)).toBeLessThan(Date.parse(maker.expires_at));

    // A grant, too: its default hour is cut to the maker's end, and a longer one refused.
    const writer = await makeKey({ name: 'brief-writer', scopes: ['write'] }, maker.key);
    const grant = await o.post('/collections/upload/grant', { max_size: 10 }, as(writer.key));
    expect(grant.status, JSON.stringify(grant.body)).toBe(200);
    expect(grant.body.expires_at).toBe(maker.expires_at);
    expectError(await o.post('/collections/upload/grant', { max_size: 10, expires_in: 3600 }, as(writer.key)), 400, 'invalid_expiry');
  });

  test('no folder outside its maker\'s (404), and its own folder by default', async () => {
    const top = (await o.post('/collections/folder/create', { name: 'lineage-top', visibility: 'Private' })).body.folder_id;
    const away = (await o.post('/collections/folder/create', { name: 'lineage-away', visibility: 'Private' })).body.folder_id;
    const maker = await makeKey({ name: 'confined-admin', scopes: ['admin', 'read'], folder_id: top });
    expectError(await o.post('/collections/keys/create', { name: 'out', scopes: ['read'], folder_id: away }, as(maker.key)), 404, 'folder_not_found');
    expect((await makeKey({ name: 'in', scopes: ['read'] }, maker.key)).folder_id).toBe(top);
    // null asks for no folder in particular: the maker's own, never the whole tree.
    expect((await makeKey({ name: 'all', scopes: ['read'], folder_id: null }, maker.key)).folder_id).toBe(top);
  });
});

describe('what a key made stops with it', () => {
  test('revoking a maker ends its keys, their grants and their S3 signatures at once', async () => {
    const maker = await makeKey({ name: 'parent', scopes: ['admin', 'read', 'write'] });
    const child = await makeKey({ name: 'child', scopes: ['read', 'write'] }, maker.key);
    const grant = (await o.post('/collections/upload/grant', { max_size: 10, max_files: 5 }, as(child.key))).body.grant as string;
    const s3 = s3Client(o.origin.s3Url, { keyId: child.key_id, secret: child.key }).client;
    clients.push(s3);

    expect((await o.post('/collections/list', {}, as(child.key))).status).toBe(200);
    expect((await o.post('/collections/upload/file', initiate, grantAuth(grant))).status).toBe(200);
    await s3.send(new ListBucketsCommand({}));

    expect((await o.post('/collections/keys/revoke', { key_id: maker.key_id })).status).toBe(200);
    expectError(await o.post('/collections/list', {}, as(child.key)), 401, 'unauthorized');
    expectError(await o.post('/collections/upload/file', initiate, grantAuth(grant)), 401, 'unauthorized');
    await expectS3Error(s3.send(new ListBucketsCommand({})), 403, 'InvalidAccessKeyId');
    // The child itself is not revoked: listed as it is, with its maker.
    const listed = (await o.post('/collections/keys/list', {})).body.keys.find((k: any) => k.key_id === child.key_id);
    expect(listed).toMatchObject({ created_by: maker.key_id, revoked_at: null });
  });

  test('a grandchild (a grant of a key made by a key) stops when the grandparent is revoked', async () => {
    const grandparent = await makeKey({ name: 'grandparent', scopes: ['admin', 'write'] });
    const parent = await makeKey({ name: 'parent-w', scopes: ['write'] }, grandparent.key);
    const grant = (await o.post('/collections/upload/grant', { max_size: 10, max_files: 5 }, as(parent.key))).body.grant as string;
    expect((await o.post('/collections/upload/file', initiate, grantAuth(grant))).status).toBe(200);
    expect((await o.post('/collections/keys/revoke', { key_id: grandparent.key_id })).status).toBe(200);
    expectError(await o.post('/collections/upload/file', initiate, grantAuth(grant)), 401, 'unauthorized');
  });

  test('keys/list shows the lineage; a confined admin lists and revokes only keys in its folder', async () => {
    const top = (await o.post('/collections/folder/create', { name: 'lineage-tenant', visibility: 'Private' })).body.folder_id;
    const admin = await makeKey({ name: 'tenant-admin', scopes: ['admin', 'read'], folder_id: top });
    const mine = await makeKey({ name: 'tenant-reader', scopes: ['read'] }, admin.key);
    const outside = await makeKey({ name: 'unconfined-reader', scopes: ['read'] });
    const listed = (await o.post('/collections/keys/list', {}, as(admin.key))).body.keys;
    expect(listed.map((k: any) => k.key_id).sort()).toEqual([admin.key_id, mine.key_id].sort());
    expect(listed.find((k: any) => k.key_id === mine.key_id).created_by).toBe(admin.key_id);
    expect(listed.find((k: any) => k.key_id === admin.key_id).created_by).toBe('root');
    expectError(await o.post('/collections/keys/revoke', { key_id: outside.key_id }, as(admin.key)), 404, 'key_not_found');
    expect((await o.post('/collections/keys/revoke', { key_id: mine.key_id }, as(admin.key))).status).toBe(200);
  });
});

describe('a maker\'s expiry, on a settable clock', () => {
  const T0 = Date.UTC(2026, 0, 1);
  let clock = T0;
  let dir: string;
  let service: CofferService;
  let meta: MetadataStore;
  const rootKey = `root-${randomBytes(8).toString('hex')}`;
  let authenticate: ReturnType<typeof authenticator>;
  const bearer = (key: string) => authenticate('api', { authorization: `Bearer ${key}` });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'coffer-lineage-'));
    meta = await openMetadataStore(dir, undefined);
    const blobs = await openBlobStore(dir, undefined);
    service = new CofferService(meta, blobs, {
      cdnUrl: 'http://cdn.test', signingSecrets: ['s'], uploadTtlSeconds: 3600, maxFileSize: 1 << 20, rootKey, now: () => clock,
    });
    authenticate = authenticator({ accessKey: rootKey, edgeTokens: [], service });
  });
  afterAll(async () => {
    await meta?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A key row as one made before lineage was kept might be: here, one that outlives its maker. */
  async function rowOf(createdBy: string, expiresAt: number | null = null): Promise<{ row: StoredKey; key: string }> {
    const id = randomBytes(16).toString('base64url').slice(0, 22);
    const secret = randomBytes(32).toString('base64url');
    const row: StoredKey = {
      id, name: 'planted', secret_hash: createHash('sha256').update(secret).digest('hex'), scopes: 'read', folder_id: null,
      created_at: clock, expires_at: expiresAt, revoked_at: null, last_used_at: null, created_by: createdBy,
    };
    await meta.transaction((tx) => tx.keys.insert(row));
    return { row, key: `ck_${id}.${secret}` };
  }

  test('a child stops the moment its maker expires, by Bearer and by S3', async () => {
    clock = T0;
    const maker = await service.credentials.createKey(ROOT_CALLER, { name: 'expiring', scopes: ['admin', 'read'], expires_in: 60 });
    const makerCaller = (await bearer(maker.key)) as Caller;
    const child = await service.credentials.createKey(makerCaller, { name: 'child', scopes: ['read'] });
    expect(child.expires_at).toBe(maker.expires_at);
    const planted = await rowOf(maker.key_id);
    expect(await bearer(child.key)).toMatchObject({ kind: 'key', keyId: child.key_id });
    expect(await bearer(planted.key)).toMatchObject({ kind: 'key', keyId: planted.row.id });

    clock = T0 + 59_999;
    expect(await bearer(planted.key)).toMatchObject({ kind: 'key' });
    clock = T0 + 60_000;
    for (const key of [child.key, planted.key]) await expect(bearer(key)).rejects.toMatchObject({ status: 401 });
    expect(await service.credentials.s3Credential(planted.row.id)).toMatchObject({ ok: false });
  });

  test('a chain that is cut, loops, or runs deeper than the bound is refused', async () => {
    clock = T0;
    const orphan = await rowOf('NoSuchKey0000000000000');
    await expect(bearer(orphan.key)).rejects.toBeInstanceOf(CofferError);
    const base = (await rowOf('root')).row;
    // Two keys that name each other as maker.
    const rows = new Map<string, StoredKey>([['a', { ...base, id: 'a', created_by: 'b' }], ['b', { ...base, id: 'b', created_by: 'a' }]]);
    const looped = { get: async (id: string) => rows.get(id) };
    expect(await keyStanding(looped, rows.get('a')!, clock)).toMatchObject({ ok: false, reason: 'broken' });

    const chain: StoredKey[] = [];
    for (let i = 0; i <= MAX_KEY_DEPTH; i++) chain.push({ ...base, id: `k${i}`, created_by: i === 0 ? 'root' : `k${i - 1}` });
    const deep = { get: async (id: string) => chain.find((k) => k.id === id) };
    expect(await keyStanding(deep, chain[MAX_KEY_DEPTH - 1]!, clock)).toMatchObject({ ok: true, depth: MAX_KEY_DEPTH });
    expect(await keyStanding(deep, chain[MAX_KEY_DEPTH]!, clock)).toMatchObject({ ok: false, reason: 'broken' });
  });

  test('a maker revoked after the request began makes nothing', async () => {
    clock = T0;
    const maker = await service.credentials.createKey(ROOT_CALLER, { name: 'soon-revoked', scopes: ['admin', 'read'] });
    const caller = (await bearer(maker.key)) as Caller;
    await service.credentials.revokeKey(ROOT_CALLER, maker.key_id);
    await expect(service.credentials.createKey(caller, { name: 'late', scopes: ['read'] })).rejects.toMatchObject({ status: 401 });
  });
});
