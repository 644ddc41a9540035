/**
 * Confinement at the edges of operations (issue 23, finding 9), on SQLite and on PostgreSQL:
 * a name conflict outside a key's reach names nothing there; a write without `read` answers
 * no record; concatenation takes only the caller's own partial uploads; `POST /tus` without a
 * folder uploads into the key's own folder. Each case failed before its fix.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { createDatabase } from '../helpers/postgres.js';
import { expectError } from '../helpers/api.js';
import { tusClient, type TusAnswer } from '../helpers/tus.js';

const stores: Array<[string, () => Promise<string | undefined>]> = [
  ['SQLite', async () => undefined],
  ['PostgreSQL', () => createDatabase()],
];

const refused = (a: TusAnswer, status: number, code: string) => expectError({ status: a.status, json: a.json, body: a.body, headers: a.headers }, status, code);

describe.each(stores)('confinement at the edges of operations (%s)', (_name, database) => {
  let o: TestOrigin;
  let box: string;
  let outside: string;

  const post = (auth: string, path: string, body: unknown) => o.post(path, body, { headers: { authorization: auth } });
  const key = async (scopes: string[], folderId?: string): Promise<string> => {
    const r = await o.post('/collections/keys/create', { name: `k-${scopes.join('-')}`, scopes, ...(folderId ? { folder_id: folderId } : {}) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return `Bearer ${r.body.key}`;
  };

  beforeAll(async () => {
    const databaseUrl = await database();
    o = await startTestOrigin({}, databaseUrl ? { databaseUrl } : {});
    box = (await o.post('/collections/folder/create', { name: 'box', visibility: 'Private' })).body.folder_id;
    outside = (await o.post('/collections/folder/create', { name: 'photos', visibility: 'Private' })).body.folder_id;
  });
  afterAll(async () => o?.close());

  test('a confined key cannot rename its own folder (no name oracle on its parent); a conflict inside gives the id', async () => {
    const k = await key(['read', 'write'], box);
    const renamed = await post(k, '/collections/folder/update', { folder_id: box, name: 'photos' });
    expectError(renamed, 403, 'forbidden');
    expect(JSON.stringify(renamed.body)).not.toContain(outside);
    expectError(await post(k, '/collections/folder/update', { folder_id: box, name: 'free-name' }), 403, 'forbidden');
    // Nothing changed: the folder keeps its name.
    expect((await post(k, '/collections/folder/get', { folder_id: box })).body.name).toBe('box');

    const inner = (await post(k, '/collections/folder/create', { name: 'a', visibility: 'Private', parent_id: box })).body.folder_id;
    expectError(await post(k, '/collections/folder/create', { name: 'a', visibility: 'Private', parent_id: box }), 409, 'folder_exists', { folder_id: inner });
    const b = (await post(k, '/collections/folder/create', { name: 'b', visibility: 'Private', parent_id: box })).body.folder_id;
    expectError(await post(k, '/collections/folder/update', { folder_id: b, name: 'a' }), 409, 'folder_exists', { folder_id: inner });
  });

  test('a write without "read" answers no record: file and folder updates, folder creation', async () => {
    const file = await uploadBytes(o, randomBytes(32), { name: 'secret.bin', folder_id: box });
    const writeOnly = await key(['write']);
    const noop = await post(writeOnly, '/collections/file/update', { file_id: file.file_id });
    expect(noop.status).toBe(200);
    expect(noop.body).toEqual({ file_id: file.file_id, updated: true });
    const moved = await post(writeOnly, '/collections/file/update', { file_id: file.file_id, name: 'renamed.bin' });
    expect(moved.body).toEqual({ file_id: file.file_id, updated: true });
    expect((await o.post('/collections/file/get', { file_id: file.file_id })).body.name).toBe('renamed.bin');

    expect((await post(writeOnly, '/collections/folder/update', { folder_id: box })).body).toEqual({ folder_id: box, updated: true });
    const made = await post(writeOnly, '/collections/folder/create', { name: 'made', visibility: 'Public', parent_id: box });
    expect(made.status).toBe(200);
    expect(Object.keys(made.body).sort()).toEqual(['created', 'folder_id']);

    // With "read", the record as before.
    const reader = await key(['read', 'write']);
    const full = await post(reader, '/collections/file/update', { file_id: file.file_id });
    expect(full.body).toMatchObject({ file_id: file.file_id, name: 'renamed.bin', size: 32, sha256: file.sha256 });
  });

  test('concatenation takes only partial uploads the caller made', async () => {
    const maker = tusClient(o.url, await key(['write']));
    const stranger = tusClient(o.url, await key(['write']));
    const root = tusClient(o.url, `Bearer ${o.key}`);
    const bytes = randomBytes(20);
    const made = async (by: typeof maker): Promise<string> => {
      const p = (await by.create(bytes.length, {}, { 'upload-concat': 'partial' })).headers.location!;
      expect((await by.patch(p, 0, bytes)).status).toBe(204);
      return p;
    };
    const meta = { filename: 'joined.bin', folder_id: box };
    const theirs = await made(maker);
    refused(await stranger.create(null, meta, { 'upload-concat': `final;${theirs}` }), 404, 'upload_not_found');
    const rootsOwn = await made(root);
    refused(await stranger.create(null, meta, { 'upload-concat': `final;${rootsOwn}` }), 404, 'upload_not_found');
    // The maker's own (and root's, with them) still make a file.
    const final = await maker.create(null, meta, { 'upload-concat': `final;${theirs}` });
    expect(final.status, final.body.toString()).toBe(201);
    expect((await root.create(null, meta, { 'upload-concat': `final;${rootsOwn}` })).status).toBe(201);
  });

  test('POST /tus without folder_id uploads into a confined key\'s folder', async () => {
    const k = tusClient(o.url, await key(['write'], box));
    const created = await k.create(3, { filename: 'here.txt' });
    expect(created.status, created.body.toString()).toBe(201);
    const done = await k.patch(created.headers.location!, 0, Buffer.from('abc'));
    expect(done.status).toBe(204);
    const file = (await o.post('/collections/file/get', { file_id: done.headers['coffer-file-id'] })).body;
    expect(file).toMatchObject({ folder_id: box, status: 'ready' });
  });
});
