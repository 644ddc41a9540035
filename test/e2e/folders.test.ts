/**
 * Contract §3 and §5: folders, listing, paging and search, against a real origin.
 */
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import BetterSqlite3 from '../../src/adapters/metadata/better-sqlite3.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { expectGone, storedObjectExists, uploadHeld } from '../helpers/stored-object.js';
import { KyselyMetadataStore } from '../../src/adapters/metadata/kysely-store.js';
import { nameKey } from '../../src/core/names.js';
import type { PageQuery, SortField, SortOrder, StoredFile } from '../../src/core/ports.js';
import { expectError } from '../helpers/api.js';

type Res = { status: number; body: any };

async function mkdir(o: TestOrigin, name: string, parentId?: string | null, visibility = 'Public'): Promise<any> {
  const r = await o.post('/collections/folder/create', { name, visibility, ...(parentId !== undefined ? { parent_id: parentId } : {}) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

async function upload(o: TestOrigin, name: string, folderId: string | null, size = 3, visibility = 'Public'): Promise<any> {
  return uploadBytes(o, randomBytes(size), { name, folder_id: folderId, visibility });
}

/** Initiates an upload and sends its one part, but never completes it. */
async function openUpload(o: TestOrigin, name: string, folderId: string | null): Promise<any> {
  const r = await o.post('/collections/upload/file', { name, visibility: 'Public', size: 10, file_type: 'other', folder_id: folderId });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const s = r.body;
  const p = await o.post('/collections/upload/file-progress', {
    bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 1, body: randomBytes(10).toString('base64'),
  });
  expect(p.status, JSON.stringify(p.body)).toBe(200);
  return s;
}

async function list(o: TestOrigin, body: Record<string, unknown>): Promise<any> {
  const r = await o.post('/collections/list', body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

/** Every page of a listing, in order. */
async function listAll(o: TestOrigin, body: Record<string, unknown>, path = '/collections/list'): Promise<{ pages: any[]; ids: string[] }> {
  const pages: any[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const r: Res = await o.post(path, { ...body, ...(cursor ? { cursor } : {}) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    pages.push(r.body);
    cursor = r.body.next_cursor;
    if (cursor === null) break;
  }
  expect(cursor).toBeNull();
  const ids = pages.flatMap((p) => [...p.folders.map((f: any) => f.folder_id), ...p.files.map((f: any) => f.file_id)]);
  return { pages, ids };
}

const entryIds = (page: any): string[] => [...page.folders.map((f: any) => f.folder_id), ...page.files.map((f: any) => f.file_id)];

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let seq = 0;
const unique = (prefix: string) => `${prefix}-${++seq}-${Math.random().toString(36).slice(2, 8)}`;

describe('folders', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('creates a folder at the root with the record of contract §3', async () => {
    const name = unique('top');
    const f = await mkdir(o, name, undefined, 'pRiVaTe');
    expect(f).toMatchObject({ name, visibility: 'Private', parent_id: null, path: `/${name}` });
    expect(typeof f.folder_id).toBe('string');
    expect(f.folder_id).toMatch(/^[A-Za-z0-9_-]{16,}$/);
    expect(f.created_at).toMatch(ISO_MS);
    expect(f.updated_at).toMatch(ISO_MS);
    const got = await o.post('/collections/folder/get', { folder_id: f.folder_id });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(f);
    // parent_id null is the root, like leaving it out.
    const g = await mkdir(o, unique('top'), null);
    expect(g.parent_id).toBeNull();
  });

  it('nests folders deeper than ten levels with their paths', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `lvl${i}`);
    const root = await mkdir(o, unique('deep'));
    let parent = root;
    const chain = [root];
    for (const n of names) {
      parent = await mkdir(o, n, parent.folder_id);
      chain.push(parent);
    }
    expect(parent.path).toBe(`/${root.name}/${names.join('/')}`);
    expect(parent.parent_id).toBe(chain[chain.length - 2].folder_id);
    const got = await o.post('/collections/folder/get', { folder_id: parent.folder_id });
    expect(got.body.path).toBe(parent.path);
    const l = await list(o, { folder_id: parent.folder_id });
    expect(l.folder.folder_id).toBe(parent.folder_id);
    expect(l.breadcrumbs.map((b: any) => b.folder_id)).toEqual(chain.map((c) => c.folder_id));
    expect(l.breadcrumbs.map((b: any) => b.path)).toEqual(chain.map((c) => c.path));
    expect(l.breadcrumbs[l.breadcrumbs.length - 1]).toEqual(l.folder);
    // A Private top folder makes every breadcrumb below it effectively Private.
    await o.post('/collections/folder/update', { folder_id: root.folder_id, visibility: 'Private' });
    const priv = await list(o, { folder_id: chain[5].folder_id });
    expect(priv.breadcrumbs.map((b: any) => b.visibility)).toEqual(Array(6).fill('Public').map((v, i) => (i === 0 ? 'Private' : v)));
    expect(priv.breadcrumbs.map((b: any) => b.effective_visibility)).toEqual(Array(6).fill('Private'));
    expect(priv.folders.map((f: any) => f.effective_visibility)).toEqual(['Private']);
  });

  it('answers 404 folder_not_found for an unknown parent_id', async () => {
    const r = await o.post('/collections/folder/create', { name: 'x', visibility: 'Public', parent_id: 'no-such-folder' });
    expectError(r, 404, 'folder_not_found', { folder_id: 'no-such-folder' });
    // The unknown id wins over a bad name and a bad visibility (contract §2 order).
    const r2 = await o.post('/collections/folder/create', { name: '', visibility: 'Nope', parent_id: 'no-such-folder' });
    expectError(r2, 404, 'folder_not_found');
  });

  it('keeps folder names unique in one parent, the root included', async () => {
    const name = unique('dup');
    const first = await mkdir(o, name);
    const again = await o.post('/collections/folder/create', { name, visibility: 'Public' });
    expectError(again, 409, 'folder_exists', { folder_id: first.folder_id });
    const padded = await o.post('/collections/folder/create', { name: `  ${name}\t`, visibility: 'Private' });
    expectError(padded, 409, 'folder_exists');

    const parent = await mkdir(o, unique('p'));
    const child = await mkdir(o, 'same', parent.folder_id);
    const dup = await o.post('/collections/folder/create', { name: 'same', visibility: 'Public', parent_id: parent.folder_id });
    expectError(dup, 409, 'folder_exists', { folder_id: child.folder_id });
  });

  it('answers 409 folder_exists before the field rules, and exactly once for concurrent creates', async () => {
    const name = unique('race');
    const first = await mkdir(o, name);
    // A state conflict comes before a bad visibility (contract §2 order).
    expectError(await o.post('/collections/folder/create', { name, visibility: 'bogus' }), 409, 'folder_exists', { folder_id: first.folder_id });
    const parent = await mkdir(o, unique('racep'));
    const results = await Promise.all(Array.from({ length: 6 }, () => o.post('/collections/folder/create', { name: 'same', visibility: 'Public', parent_id: parent.folder_id })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expectError(r, 409, 'folder_exists');
    const l = await list(o, { folder_id: parent.folder_id });
    expect(l.folders.map((f: any) => f.name)).toEqual(['same']);
  });

  it('allows the same name under different parents and names differing only in case', async () => {
    const a = await mkdir(o, unique('pa'));
    const b = await mkdir(o, unique('pb'));
    const inA = await mkdir(o, 'shared', a.folder_id);
    const inB = await mkdir(o, 'shared', b.folder_id);
    expect(inA.folder_id).not.toBe(inB.folder_id);
    expect(inA.path).toBe(`/${a.name}/shared`);
    expect(inB.path).toBe(`/${b.name}/shared`);
    const upper = await mkdir(o, 'A', a.folder_id);
    const lower = await mkdir(o, 'a', a.folder_id);
    expect(upper.name).toBe('A');
    expect(lower.name).toBe('a');
    expect(upper.folder_id).not.toBe(lower.folder_id);
  });

  it('trims names and answers 400 invalid_name for each name rule', async () => {
    const parent = await mkdir(o, unique('names'));
    const trimmed = await mkdir(o, '  padded name \n', parent.folder_id);
    expect(trimmed.name).toBe('padded name');
    expect(trimmed.path).toBe(`/${parent.name}/padded name`);

    const bad = ['', '   ', '\t\n', 'a/b', '/', 'a\u0000b', 'a\u0001', 'x\u001fy', 'del\u007f', '.', '..', ' .. ', 'a'.repeat(256), 'é'.repeat(128), '\ud800x'];
    for (const name of bad) {
      const r = await o.post('/collections/folder/create', { name, visibility: 'Public', parent_id: parent.folder_id });
      expectError(r, 400, 'invalid_name', { field: 'name' });
    }
    // The limits themselves are fine: 255 bytes, "..." and a single dot inside a name.
    for (const name of ['b'.repeat(255), 'é'.repeat(127) + 'x', '...', 'a.b', '😀 emoji']) {
      const f = await mkdir(o, name, parent.folder_id);
      expect(f.name).toBe(name);
    }
  });

  it('answers 400 for a bad visibility and for a malformed body', async () => {
    const r = await o.post('/collections/folder/create', { name: unique('v'), visibility: 'secret' });
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe('visibility');
    const missing = await o.post('/collections/folder/create', { name: unique('v') });
    expectError(missing, 400, 'invalid_request', { field: 'visibility' });
    const wrongType = await o.post('/collections/folder/create', { name: 5, visibility: 'Public' });
    expectError(wrongType, 400, 'invalid_request', { field: 'name' });
    for (const v of ['public', 'PUBLIC', 'Private', 'private']) {
      const f = await mkdir(o, unique('case'), undefined, v);
      expect(f.visibility).toBe(v.toLowerCase() === 'public' ? 'Public' : 'Private');
    }
  });

  it('get answers 404 folder_not_found for an unknown id', async () => {
    expectError(await o.post('/collections/folder/get', { folder_id: 'nope' }), 404, 'folder_not_found', { folder_id: 'nope' });
  });

  it('renames, moves and switches visibility; paths below follow', async () => {
    const top = await mkdir(o, unique('upd'));
    const a = await mkdir(o, 'a', top.folder_id);
    const b = await mkdir(o, 'b', top.folder_id);
    const child = await mkdir(o, 'child', a.folder_id);

    const renamed = await o.post('/collections/folder/update', { folder_id: a.folder_id, name: '  a2 ' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ folder_id: a.folder_id, name: 'a2', path: `/${top.name}/a2`, parent_id: top.folder_id });
    expect((await o.post('/collections/folder/get', { folder_id: child.folder_id })).body.path).toBe(`/${top.name}/a2/child`);

    const moved = await o.post('/collections/folder/update', { folder_id: a.folder_id, parent_id: b.folder_id });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ parent_id: b.folder_id, path: `/${top.name}/b/a2` });
    expect((await o.post('/collections/folder/get', { folder_id: child.folder_id })).body.path).toBe(`/${top.name}/b/a2/child`);
    const inB = await list(o, { folder_id: b.folder_id });
    expect(inB.folders.map((f: any) => f.folder_id)).toEqual([a.folder_id]);
    const inTop = await list(o, { folder_id: top.folder_id });
    expect(inTop.folders.map((f: any) => f.folder_id)).toEqual([b.folder_id]);

    const priv = await o.post('/collections/folder/update', { folder_id: a.folder_id, visibility: 'PRIVATE' });
    expect(priv.status).toBe(200);
    expect(priv.body.visibility).toBe('Private');
    expect((await o.post('/collections/folder/get', { folder_id: a.folder_id })).body.visibility).toBe('Private');
    const pub = await o.post('/collections/folder/update', { folder_id: a.folder_id, visibility: 'public' });
    expect(pub.body.visibility).toBe('Public');

    const all = await o.post('/collections/folder/update', { folder_id: a.folder_id, name: 'a3', visibility: 'Private', parent_id: top.folder_id });
    expect(all.body).toMatchObject({ name: 'a3', visibility: 'Private', parent_id: top.folder_id, path: `/${top.name}/a3` });

    const badVis = await o.post('/collections/folder/update', { folder_id: a.folder_id, visibility: 'hidden' });
    expect(badVis.status).toBe(400);
    expect(badVis.body.error.details.field).toBe('visibility');
    for (const name of ['', 'x/y', '..', 'bad\u0007']) {
      expectError(await o.post('/collections/folder/update', { folder_id: a.folder_id, name }), 400, 'invalid_name', { field: 'name' });
    }
    expect((await o.post('/collections/folder/get', { folder_id: a.folder_id })).body.name).toBe('a3');
  });

  it('update answers 404 for an unknown folder or parent', async () => {
    const f = await mkdir(o, unique('u404'));
    expectError(await o.post('/collections/folder/update', { folder_id: 'nope', name: 'x' }), 404, 'folder_not_found');
    expectError(await o.post('/collections/folder/update', { folder_id: 'nope', name: '' }), 404, 'folder_not_found');
    expectError(await o.post('/collections/folder/update', { folder_id: f.folder_id, parent_id: 'nope' }), 404, 'folder_not_found', { folder_id: 'nope' });
  });

  it('refuses with 409 cycle a move into itself or any descendant', async () => {
    const a = await mkdir(o, unique('cyc'));
    const b = await mkdir(o, 'b', a.folder_id);
    const c = await mkdir(o, 'c', b.folder_id);
    for (const target of [a, b, c]) {
      expectError(await o.post('/collections/folder/update', { folder_id: a.folder_id, parent_id: target.folder_id }), 409, 'cycle');
    }
    expectError(await o.post('/collections/folder/update', { folder_id: b.folder_id, parent_id: c.folder_id }), 409, 'cycle');
    // The conflict comes before a bad name or visibility in the same call.
    expectError(await o.post('/collections/folder/update', { folder_id: a.folder_id, parent_id: c.folder_id, name: '..', visibility: 'x' }), 409, 'cycle', { field: 'parent_id' });
    // Nothing moved.
    expect((await o.post('/collections/folder/get', { folder_id: c.folder_id })).body.path).toBe(`/${a.name}/b/c`);
    // Moving the grandchild up is no cycle.
    const up = await o.post('/collections/folder/update', { folder_id: c.folder_id, parent_id: a.folder_id });
    expect(up.status).toBe(200);
    expect(up.body.path).toBe(`/${a.name}/c`);
  });

  it('moves a folder to the root with parent_id null', async () => {
    const a = await mkdir(o, unique('mvroot'));
    const name = unique('leaf');
    const leaf = await mkdir(o, name, a.folder_id);
    const r = await o.post('/collections/folder/update', { folder_id: leaf.folder_id, parent_id: null });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ parent_id: null, path: `/${name}` });
    const root = await list(o, { limit: 1000 });
    expect(root.folders.map((f: any) => f.folder_id)).toContain(leaf.folder_id);
  });

  it('refuses with 409 folder_exists a rename or move onto an existing sibling name', async () => {
    const p = await mkdir(o, unique('sib'));
    const x = await mkdir(o, 'x', p.folder_id);
    const y = await mkdir(o, 'y', p.folder_id);
    expectError(await o.post('/collections/folder/update', { folder_id: y.folder_id, name: 'x' }), 409, 'folder_exists', { folder_id: x.folder_id });
    expectError(await o.post('/collections/folder/update', { folder_id: y.folder_id, name: ' x ' }), 409, 'folder_exists');
    const other = await mkdir(o, unique('other'));
    const y2 = await mkdir(o, 'y', other.folder_id);
    expectError(await o.post('/collections/folder/update', { folder_id: y2.folder_id, parent_id: p.folder_id }), 409, 'folder_exists', { folder_id: y.folder_id });
    // Case differs: allowed. Renaming to its own name: no conflict.
    const same = await o.post('/collections/folder/update', { folder_id: y.folder_id, name: 'y' });
    expect(same.status).toBe(200);
    const upper = await o.post('/collections/folder/update', { folder_id: y.folder_id, name: 'X' });
    expect(upper.status).toBe(200);
    expect(upper.body.name).toBe('X');
    // At the root too.
    const rootName = unique('rootsib');
    const r1 = await mkdir(o, rootName);
    expectError(await o.post('/collections/folder/update', { folder_id: x.folder_id, parent_id: null, name: rootName }), 409, 'folder_exists', { folder_id: r1.folder_id });
  });
});

describe('folder delete', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('deletes an empty folder', async () => {
    const f = await mkdir(o, unique('empty'));
    const r = await o.post('/collections/folder/delete', { folder_id: f.folder_id });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ folder_id: f.folder_id, deleted_files: 0, deleted_folders: 1 });
    expectError(await o.post('/collections/folder/get', { folder_id: f.folder_id }), 404, 'folder_not_found');
    expectError(await o.post('/collections/folder/delete', { folder_id: f.folder_id }), 404, 'folder_not_found');
    // The name is free again.
    await mkdir(o, f.name);
  });

  it('answers 409 folder_not_empty without recursive: a file, a sub-folder, an unfinished upload', async () => {
    const withFile = await mkdir(o, unique('wf'));
    await upload(o, 'a.txt', withFile.folder_id);
    const withFolder = await mkdir(o, unique('wd'));
    await mkdir(o, 'sub', withFolder.folder_id);
    const withUpload = await mkdir(o, unique('wu'));
    await openUpload(o, 'pending.bin', withUpload.folder_id);
    // The unfinished upload is not listed, but the folder is not empty.
    const l = await list(o, { folder_id: withUpload.folder_id });
    expect(l.files).toEqual([]);
    for (const f of [withFile, withFolder, withUpload]) {
      expectError(await o.post('/collections/folder/delete', { folder_id: f.folder_id }), 409, 'folder_not_empty', { folder_id: f.folder_id });
      expectError(await o.post('/collections/folder/delete', { folder_id: f.folder_id, recursive: false }), 409, 'folder_not_empty');
      expect((await o.post('/collections/folder/get', { folder_id: f.folder_id })).status).toBe(200);
    }
  });

  it('answers 404 for an unknown folder, and 400 for a recursive that is no boolean', async () => {
    expectError(await o.post('/collections/folder/delete', { folder_id: 'nope', recursive: true }), 404, 'folder_not_found');
    const f = await mkdir(o, unique('rb'));
    expectError(await o.post('/collections/folder/delete', { folder_id: f.folder_id, recursive: 'yes' }), 400, 'invalid_request', { field: 'recursive' });
  });

  it('deletes a tree recursively: files, sub-folders, an open upload and their blobs', async () => {
    const parent = await mkdir(o, unique('rparent'));
    const t = await mkdir(o, 'T', parent.folder_id);
    const a = await mkdir(o, 'A', t.folder_id);
    const b = await mkdir(o, 'B', a.folder_id);
    const c = await mkdir(o, 'C', t.folder_id, 'Private');
    const f1 = await upload(o, 'f1.txt', t.folder_id, 100);
    const f2 = await upload(o, 'f2.txt', a.folder_id, 200, 'Private');
    const f3 = await upload(o, 'f3.txt', b.folder_id, 300);
    const u = await openUpload(o, 'open.bin', b.folder_id);
    const sibling = await upload(o, 'keep.txt', parent.folder_id);

    const blobs = [f1, f2, f3].map((f) => f.file_id as string);
    for (const id of blobs) expect(await storedObjectExists(o, id), id).toBe(true);
    expect(await uploadHeld(o, u.uploadId)).toBe(true);

    const r = await o.post('/collections/folder/delete', { folder_id: t.folder_id, recursive: true });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ folder_id: t.folder_id, deleted_files: 4, deleted_folders: 4 });

    for (const f of [t, a, b, c]) expectError(await o.post('/collections/folder/get', { folder_id: f.folder_id }), 404, 'folder_not_found');
    for (const f of [f1, f2, f3]) expectError(await o.post('/collections/file/get', { file_id: f.file_id }), 404, 'file_not_found');
    expectError(await o.post('/collections/file/get', { file_id: u.fileId }), 404, 'file_not_found');
    expectError(await o.post('/collections/upload/status', { file_id: u.fileId }), 404, 'file_not_found');
    const part = await o.post('/collections/upload/file-progress', {
      bucket: u.bucket, key: u.key, uploadId: u.uploadId, fileId: u.fileId, partNumber: 1, body: randomBytes(10).toString('base64'),
    });
    expectError(part, 404, 'upload_not_found');
    expectError(await o.post('/collections/list', { folder_id: a.folder_id }), 404, 'folder_not_found');

    for (const id of blobs) await expectGone(`the object of ${id}`, () => storedObjectExists(o, id));
    await expectGone(`upload ${u.uploadId}`, () => uploadHeld(o, u.uploadId));

    const left = await list(o, { folder_id: parent.folder_id });
    expect(left.folders).toEqual([]);
    expect(left.files.map((f: any) => f.file_id)).toEqual([sibling.file_id]);
    expect(await storedObjectExists(o, sibling.file_id)).toBe(true);
    // Nothing else was touched, and the parent can now be deleted the plain way after its last file goes.
    expect((await o.post('/collections/file/delete', { file_id: sibling.file_id })).status).toBe(200);
    expect((await o.post('/collections/folder/delete', { folder_id: parent.folder_id })).body).toEqual({ folder_id: parent.folder_id, deleted_files: 0, deleted_folders: 1 });
  });

  it('a recursive delete of an empty folder counts only itself', async () => {
    const f = await mkdir(o, unique('re'));
    const r = await o.post('/collections/folder/delete', { folder_id: f.folder_id, recursive: true });
    expect(r.body).toEqual({ folder_id: f.folder_id, deleted_files: 0, deleted_folders: 1 });
  });
});

describe('list', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('at the root: folder null and no breadcrumbs', async () => {
    const f = await mkdir(o, unique('rootlist'));
    const file = await upload(o, 'root-file.txt', null);
    const l = await list(o, { limit: 1000 });
    expect(l.folder).toBeNull();
    expect(l.breadcrumbs).toEqual([]);
    expect(l.folders.map((x: any) => x.folder_id)).toContain(f.folder_id);
    expect(l.files.map((x: any) => x.file_id)).toContain(file.file_id);
    const explicit = await list(o, { folder_id: null, limit: 1000 });
    expect(explicit.folder).toBeNull();
    expect(explicit.breadcrumbs).toEqual([]);
    expect(entryIds(explicit)).toEqual(entryIds(l));
  });

  it('lists folders first, then only ready files; limit counts both', async () => {
    const p = await mkdir(o, unique('mixed'));
    const folders = [await mkdir(o, 'zz-folder', p.folder_id), await mkdir(o, 'mm-folder', p.folder_id), await mkdir(o, 'aa-folder', p.folder_id)];
    const files = [await upload(o, 'aa-file', p.folder_id), await upload(o, 'bb-file', p.folder_id), await upload(o, 'cc-file', p.folder_id)];
    const pending = await openUpload(o, 'ab-pending', p.folder_id);

    const all = await list(o, { folder_id: p.folder_id });
    expect(all.folder).toMatchObject({ folder_id: p.folder_id, path: p.path });
    expect(all.breadcrumbs.map((b: any) => b.folder_id)).toEqual([p.folder_id]);
    expect(all.folders.map((f: any) => f.name)).toEqual(['aa-folder', 'mm-folder', 'zz-folder']);
    expect(all.files.map((f: any) => f.name)).toEqual(['aa-file', 'bb-file', 'cc-file']);
    expect(all.files.map((f: any) => f.file_id)).not.toContain(pending.fileId);
    for (const f of all.files) expect(f.status).toBe('ready');
    expect(all.next_cursor).toBeNull();
    expect(all.folders[0]).toEqual((await o.post('/collections/folder/get', { folder_id: folders[2].folder_id })).body);
    const { downloads: _d, bytes_served: _b, ...record } = (await o.post('/collections/file/get', { file_id: files[0].file_id })).body;
    expect(all.files[0]).toEqual(record);

    const first = await list(o, { folder_id: p.folder_id, limit: 4 });
    expect(first.folders).toHaveLength(3);
    expect(first.files.map((f: any) => f.name)).toEqual(['aa-file']);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await list(o, { folder_id: p.folder_id, limit: 4, cursor: first.next_cursor });
    expect(second.folders).toEqual([]);
    expect(second.files.map((f: any) => f.name)).toEqual(['bb-file', 'cc-file']);
    expect(second.next_cursor).toBeNull();
    // The breadcrumbs and folder are there on every page.
    expect(second.folder.folder_id).toBe(p.folder_id);

    const two = await list(o, { folder_id: p.folder_id, limit: 2 });
    expect(two.folders.map((f: any) => f.name)).toEqual(['aa-folder', 'mm-folder']);
    expect(two.files).toEqual([]);
    const exactlyFolders = await list(o, { folder_id: p.folder_id, limit: 3 });
    expect(exactlyFolders.folders).toHaveLength(3);
    expect(exactlyFolders.files).toEqual([]);
    expect(exactlyFolders.next_cursor).toEqual(expect.any(String));
    const rest = await list(o, { folder_id: p.folder_id, limit: 3, cursor: exactlyFolders.next_cursor });
    expect(rest.folders).toEqual([]);
    expect(rest.files.map((f: any) => f.name)).toEqual(['aa-file', 'bb-file', 'cc-file']);
    expect(rest.next_cursor).toBeNull();

    // Once complete, the upload is listed.
    const done = await o.post('/collections/upload/complete-upload', { file_id: pending.fileId });
    expect(done.status).toBe(200);
    const after = await list(o, { folder_id: p.folder_id });
    expect(after.files.map((f: any) => f.name)).toEqual(['aa-file', 'ab-pending', 'bb-file', 'cc-file']);
  });

  it('has a default limit of 100, and accepts 1 to 1000', async () => {
    const p = await mkdir(o, unique('limits'));
    const now = Date.now();
    await o.origin.stores.meta.transaction(async (tx) => {
      for (let i = 0; i < 101; i++) await tx.insertFile(fileRow({ name: `n${String(i).padStart(3, '0')}`, folder_id: p.folder_id, created_at: now + i, size: i }));
    });
    const first = await list(o, { folder_id: p.folder_id });
    expect(first.files).toHaveLength(100);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await list(o, { folder_id: p.folder_id, cursor: first.next_cursor });
    expect(second.files.map((f: any) => f.name)).toEqual(['n100']);
    expect(second.next_cursor).toBeNull();
    expect((await list(o, { folder_id: p.folder_id, limit: 1000 })).files).toHaveLength(101);
    expect((await list(o, { folder_id: p.folder_id, limit: 1 })).files.map((f: any) => f.name)).toEqual(['n000']);
    for (const limit of [0, 1001, 1.5, -1]) {
      const r = await o.post('/collections/list', { folder_id: p.folder_id, limit });
      expect(r.status, String(limit)).toBe(400);
      expect(r.body.error.details.field).toBe('limit');
    }
    expectError(await o.post('/collections/list', { folder_id: p.folder_id, limit: '10' }), 400, 'invalid_request', { field: 'limit' });
    expectError(await o.post('/collections/list', { folder_id: p.folder_id, sort: 'type' }), 400, 'invalid_request', { field: 'sort' });
    expectError(await o.post('/collections/list', { folder_id: p.folder_id, order: 'up' }), 400, 'invalid_request', { field: 'order' });
  });

  it('sorts by name, created_at and size in both orders; folders by name when the sort is size', async () => {
    const p = await mkdir(o, unique('sorts'));
    // Names, creation order and sizes each give a different order.
    const folderNames = ['kilo', 'bravo', 'tango', 'echo'];
    const fileSpecs: Array<[string, number]> = [['mike', 40], ['alpha', 10], ['zulu', 5], ['delta', 70], ['hotel', 0], ['oscar', 25]];
    const folders: any[] = [];
    for (const n of folderNames) {
      folders.push(await mkdir(o, n, p.folder_id));
      await new Promise((r) => setTimeout(r, 3));
    }
    const files: any[] = [];
    for (const [n, size] of fileSpecs) {
      files.push(await upload(o, n, p.folder_id, size));
      await new Promise((r) => setTimeout(r, 3));
    }
    const by = <T>(items: T[], key: (x: T) => string | number, order: SortOrder) =>
      [...items].sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0) * (order === 'asc' ? 1 : -1));

    for (const order of ['asc', 'desc'] as const) {
      const byName = await list(o, { folder_id: p.folder_id, sort: 'name', order });
      expect(byName.folders.map((f: any) => f.name)).toEqual(by(folders, (f) => f.name, order).map((f) => f.name));
      expect(byName.files.map((f: any) => f.name)).toEqual(by(files, (f) => f.name, order).map((f) => f.name));

      const byCreated = await list(o, { folder_id: p.folder_id, sort: 'created_at', order });
      expect(byCreated.folders.map((f: any) => f.name)).toEqual(order === 'asc' ? folderNames : [...folderNames].reverse());
      const createdOrder = fileSpecs.map(([n]) => n);
      expect(byCreated.files.map((f: any) => f.name)).toEqual(order === 'asc' ? createdOrder : [...createdOrder].reverse());

      const bySize = await list(o, { folder_id: p.folder_id, sort: 'size', order });
      expect(bySize.folders.map((f: any) => f.name)).toEqual(by(folders, (f) => f.name, order).map((f) => f.name));
      expect(bySize.files.map((f: any) => f.size)).toEqual(by(files, (f) => f.size, order).map((f) => f.size));
    }
    // The default is name, ascending.
    const dflt = await list(o, { folder_id: p.folder_id });
    expect(dflt.files.map((f: any) => f.name)).toEqual(by(files, (f) => f.name, 'asc').map((f) => f.name));
    expect(dflt.folders.map((f: any) => f.name)).toEqual(['bravo', 'echo', 'kilo', 'tango']);
  });

  it('sorts by updated_at (last modified): a rename, move or visibility switch moves the entry; pages in that order', async () => {
    const p = await mkdir(o, unique('modified'));
    const elsewhere = await mkdir(o, unique('elsewhere'));
    const tick = () => new Promise((r) => setTimeout(r, 3));
    const folders: any[] = [];
    for (const n of ['f-one', 'f-two', 'f-three']) {
      folders.push(await mkdir(o, n, p.folder_id));
      await tick();
    }
    const files: any[] = [];
    for (const n of ['a.txt', 'b.txt', 'c.txt', 'd.txt']) {
      files.push(await upload(o, n, p.folder_id));
      await tick();
    }
    const outsider = await upload(o, 'moved-in.txt', elsewhere.folder_id);
    await tick();
    // Modified in an order unlike the creation order and unlike the names.
    expect((await o.post('/collections/folder/update', { folder_id: folders[0].folder_id, visibility: 'Private' })).status).toBe(200);
    await tick();
    expect((await o.post('/collections/file/update', { file_id: files[1].file_id, name: 'b-renamed.txt' })).status).toBe(200);
    await tick();
    expect((await o.post('/collections/file/update', { file_id: outsider.file_id, folder_id: p.folder_id })).status).toBe(200);
    await tick();
    expect((await o.post('/collections/file/update', { file_id: files[0].file_id, visibility: 'Private' })).status).toBe(200);
    await tick();
    // An update that changes nothing is no modification.
    expect((await o.post('/collections/file/update', { file_id: files[2].file_id, name: 'c.txt' })).status).toBe(200);

    const folderIds = [folders[1], folders[2], folders[0]].map((f) => f.folder_id);
    const fileIds = [files[2], files[3], files[1], outsider, files[0]].map((f) => f.file_id);
    const asc = await list(o, { folder_id: p.folder_id, sort: 'updated_at' });
    expect(asc.folders.map((f: any) => f.folder_id)).toEqual(folderIds);
    expect(asc.files.map((f: any) => f.file_id)).toEqual(fileIds);
    // The order is the order of the updated_at the records show.
    for (const group of [asc.folders, asc.files]) {
      const times = group.map((x: any) => x.updated_at);
      expect(times).toEqual([...times].sort());
    }
    const desc = await list(o, { folder_id: p.folder_id, sort: 'updated_at', order: 'desc' });
    expect(entryIds(desc)).toEqual([...[...folderIds].reverse(), ...[...fileIds].reverse()]);

    // Pages of two cross from folders to files without skipping or repeating.
    for (const order of ['asc', 'desc'] as const) {
      const { pages, ids } = await listAll(o, { folder_id: p.folder_id, limit: 2, sort: 'updated_at', order });
      expect(ids).toEqual(entryIds(order === 'asc' ? asc : desc));
      expect(pages).toHaveLength(4);
      expect(pages[1].folders).toHaveLength(1);
      expect(pages[1].files).toHaveLength(1);
    }

    // A cursor is bound to its sort: created_at and updated_at cursors both hold times, and still do not mix.
    const byModified = await list(o, { folder_id: p.folder_id, limit: 4, sort: 'updated_at' });
    const byCreated = await list(o, { folder_id: p.folder_id, limit: 4, sort: 'created_at' });
    expectError(await o.post('/collections/list', { folder_id: p.folder_id, limit: 4, sort: 'created_at', cursor: byModified.next_cursor }), 400, 'invalid_cursor', { field: 'cursor' });
    expectError(await o.post('/collections/list', { folder_id: p.folder_id, limit: 4, sort: 'updated_at', cursor: byCreated.next_cursor }), 400, 'invalid_cursor', { field: 'cursor' });
    expectError(await o.post('/collections/list', { folder_id: p.folder_id, limit: 4, cursor: byModified.next_cursor }), 400, 'invalid_cursor', { field: 'cursor' });
    expect((await o.post('/collections/list', { folder_id: p.folder_id, limit: 4, sort: 'updated_at', cursor: byModified.next_cursor })).status).toBe(200);
  });

  it('pages with limit 3 over 25 entries visit every entry exactly once, for every sort and order', async () => {
    const p = await mkdir(o, unique('paging'));
    for (let i = 0; i < 10; i++) await mkdir(o, `folder-${(i * 7) % 10}`, p.folder_id);
    // Repeated names and sizes: the cursor must break ties.
    for (let i = 0; i < 15; i++) await upload(o, `file-${i % 4}`, p.folder_id, i % 3);
    const expected = entryIds(await list(o, { folder_id: p.folder_id, limit: 1000 }));
    expect(expected).toHaveLength(25);
    for (const sort of ['name', 'created_at', 'updated_at', 'size'] as const) {
      for (const order of ['asc', 'desc'] as const) {
        const whole = entryIds(await list(o, { folder_id: p.folder_id, limit: 1000, sort, order }));
        expect(new Set(whole)).toEqual(new Set(expected));
        const { pages, ids } = await listAll(o, { folder_id: p.folder_id, limit: 3, sort, order });
        expect(ids, `${sort} ${order}`).toEqual(whole);
        expect(new Set(ids).size).toBe(25);
        expect(pages).toHaveLength(9);
        for (const page of pages.slice(0, -1)) expect(entryIds(page)).toHaveLength(3);
        expect(entryIds(pages[pages.length - 1])).toHaveLength(1);
        expect(pages[pages.length - 1].next_cursor).toBeNull();
      }
    }
  });

  it('paging never skips or repeats while entries are inserted between pages', async () => {
    const p = await mkdir(o, unique('live'));
    for (let i = 0; i < 12; i++) await mkdir(o, `m-folder-${String(i).padStart(2, '0')}`, p.folder_id);
    for (let i = 0; i < 13; i++) await upload(o, `m-file-${String(i).padStart(2, '0')}`, p.folder_id, 5 + (i % 4));
    const initial = entryIds(await list(o, { folder_id: p.folder_id, limit: 1000 }));
    expect(initial).toHaveLength(25);
    let n = 0;
    for (const sort of ['name', 'created_at', 'updated_at', 'size'] as const) {
      for (const order of ['asc', 'desc'] as const) {
        const seen: string[] = [];
        let cursor: string | null = null;
        let pagesRead = 0;
        do {
          const page: any = await list(o, { folder_id: p.folder_id, limit: 3, sort, order, ...(cursor ? { cursor } : {}) });
          seen.push(...entryIds(page));
          cursor = page.next_cursor;
          pagesRead++;
          // New entries on both sides of the cursor: names before and after, sizes smaller and larger,
          // between the first pages (inserting after every page could outrun the reader forever).
          if (pagesRead > 6) continue;
          n++;
          await mkdir(o, `a-new-folder-${n}`, p.folder_id);
          await mkdir(o, `z-new-folder-${n}`, p.folder_id);
          await upload(o, `a-new-file-${n}`, p.folder_id, 0);
          await upload(o, `z-new-file-${n}`, p.folder_id, 50);
        } while (cursor !== null && pagesRead < 100);
        expect(cursor).toBeNull();
        expect(new Set(seen).size, `${sort} ${order}: no entry repeated`).toBe(seen.length);
        const seenSet = new Set(seen);
        for (const id of initial) expect(seenSet.has(id), `${sort} ${order}: ${id} seen`).toBe(true);
      }
    }
  });

  it('answers 400 invalid_cursor for a cursor of another folder, sort or order, and 404 for an unknown folder', async () => {
    const a = await mkdir(o, unique('ca'));
    const b = await mkdir(o, unique('cb'));
    for (let i = 0; i < 3; i++) {
      await mkdir(o, `s${i}`, a.folder_id);
      await mkdir(o, `s${i}`, b.folder_id);
    }
    const page = await list(o, { folder_id: a.folder_id, limit: 1 });
    expect(page.next_cursor).toEqual(expect.any(String));
    expect((await o.post('/collections/list', { folder_id: a.folder_id, limit: 1, cursor: page.next_cursor })).status).toBe(200);
    const cases: Array<Record<string, unknown>> = [
      { folder_id: b.folder_id },
      { folder_id: null },
      { folder_id: a.folder_id, sort: 'size' },
      { folder_id: a.folder_id, sort: 'created_at' },
      { folder_id: a.folder_id, sort: 'updated_at' },
      { folder_id: a.folder_id, order: 'desc' },
    ];
    for (const c of cases) {
      expectError(await o.post('/collections/list', { limit: 1, ...c, cursor: page.next_cursor }), 400, 'invalid_cursor', { field: 'cursor' });
    }
    expectError(await o.post('/collections/list', { folder_id: a.folder_id, cursor: 'garbage!!' }), 400, 'invalid_cursor', { field: 'cursor' });
    expectError(await o.post('/collections/list', { folder_id: a.folder_id, cursor: Buffer.from('[1,"x",0,null,null]').toString('base64url') }), 400, 'invalid_cursor');
    // A list cursor is not a search cursor.
    expectError(await o.post('/collections/search', { folder_id: a.folder_id, query: 's', limit: 1, cursor: page.next_cursor }), 400, 'invalid_cursor');
    expectError(await o.post('/collections/list', { folder_id: 'nope' }), 404, 'folder_not_found', { folder_id: 'nope' });
    // The unknown folder is answered before a bad limit (contract §2 order).
    expectError(await o.post('/collections/list', { folder_id: 'nope', limit: 0 }), 404, 'folder_not_found');
  });
});

function fileRow(over: Partial<StoredFile> & { name: string }): StoredFile {
  const id = randomBytes(16).toString('base64url');
  const at = over.created_at ?? Date.now();
  return {
    id, name_key: nameKey(over.name), visibility: 'Public', size: 0, file_type: 'other', content_type: 'application/octet-stream',
    folder_id: null, status: 'ready', sha256: '0'.repeat(64), created_at: at, updated_at: at, completed_at: at,
    bucket: 'local', blob_key: `files/${id}`, upload_id: null, upload_expires_at: null, grant_id: null, links_revoked_at: null, ...over,
  };
}

describe('list at scale', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('pages 100,000 files in one folder in order, from an index', async () => {
    const p = await mkdir(o, 'big');
    await mkdir(o, 'sub-b', p.folder_id);
    await mkdir(o, 'sub-a', p.folder_id);
    const N = 100_000;
    // Unique names, sizes and times, each in its own shuffled order.
    const perm = (salt: number) => {
      const a = Array.from({ length: N }, (_, i) => i);
      let s = salt;
      for (let i = N - 1; i > 0; i--) {
        s = (s * 1103515245 + 12345) % 2147483648;
        const j = s % (i + 1);
        [a[i], a[j]] = [a[j]!, a[i]!];
      }
      return a;
    };
    const names = perm(1);
    const sizes = perm(2);
    const times = perm(3);
    const modified = perm(4);
    const base = Date.now() - N;
    const rows: StoredFile[] = new Array(N);
    for (let i = 0; i < N; i++) {
      rows[i] = fileRow({
        name: `f${String(names[i]).padStart(6, '0')}.bin`, folder_id: p.folder_id, size: sizes[i]! * 3 + 1, created_at: base + times[i]!, updated_at: base + N + modified[i]!,
      });
    }
    const t0 = performance.now();
    const cols = Object.keys(rows[0]!) as Array<keyof StoredFile>;
    if (o.databaseUrl) {
      // PostgreSQL: multi-row INSERTs (rows as one JSON array each) on a connection of the test's own, then fresh statistics.
      const client = new pg.Client({ connectionString: o.databaseUrl });
      await client.connect();
      try {
        await client.query('begin');
        const BATCH = 20_000;
        for (let i = 0; i < rows.length; i += BATCH) {
          await client.query(
            `insert into files (${cols.join(', ')}) select ${cols.join(', ')} from jsonb_populate_recordset(null::files, $1::jsonb)`,
            [JSON.stringify(rows.slice(i, i + BATCH))],
          );
        }
        await client.query('commit');
        await client.query('analyze files');
      } finally {
        await client.end();
      }
    } else {
      // A second connection with one prepared statement: the origin's own path costs a query build per row.
      const writer = new BetterSqlite3(join(o.dataDir, 'coffer.sqlite'), { fileMustExist: true });
      try {
        const insert = writer.prepare(`insert into files (${cols.join(', ')}) values (${cols.map((c) => '@' + c).join(', ')})`);
        writer.transaction(() => { for (const r of rows) insert.run(r); })();
      } finally {
        writer.close();
      }
    }
    console.log(`inserted ${N} file rows in ${Math.round(performance.now() - t0)} ms`);

    const keyOf: Record<SortField, (r: StoredFile) => string | number> = {
      name: (r) => r.name_key, created_at: (r) => r.created_at, updated_at: (r) => r.updated_at, size: (r) => r.size,
    };
    for (const sort of ['name', 'created_at', 'updated_at', 'size'] as const) {
      for (const order of ['asc', 'desc'] as const) {
        const key = keyOf[sort];
        const expected = [...rows].sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0) * (order === 'asc' ? 1 : -1));
        const t = performance.now();
        const first = await list(o, { folder_id: p.folder_id, limit: 50, sort, order });
        console.log(`first page of ${N} by ${sort} ${order}: ${(performance.now() - t).toFixed(1)} ms`);
        // Folders by name, or by time for created_at and updated_at ("sub-b" was made first, neither changed since).
        const folderOrder = sort === 'created_at' || sort === 'updated_at' ? ['sub-b', 'sub-a'] : ['sub-a', 'sub-b'];
        expect(first.folders.map((f: any) => f.name)).toEqual(order === 'asc' ? folderOrder : [...folderOrder].reverse());
        expect(first.files.map((f: any) => f.file_id)).toEqual(expected.slice(0, 48).map((r) => r.id));
        const second = await list(o, { folder_id: p.folder_id, limit: 50, sort, order, cursor: first.next_cursor });
        expect(second.folders).toEqual([]);
        expect(second.files.map((f: any) => f.file_id)).toEqual(expected.slice(48, 98).map((r) => r.id));
      }
    }

    // The page queries read an index in order: no sort of the whole folder.
    const store = o.origin.stores.meta;
    expect(store).toBeInstanceOf(KyselyMetadataStore);
    const kysely = store as KyselyMetadataStore;
    // Each engine's own plan: SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN (text format).
    let explain: (sql: string, params: unknown[]) => Promise<string>;
    let run: (sql: string, params: unknown[]) => Promise<Array<{ id: string }>>;
    let close: () => Promise<void>;
    let expectIndexed: (table: 'files' | 'folders', plan: string, label: string) => void;
    if (o.databaseUrl) {
      const client = new pg.Client({ connectionString: o.databaseUrl });
      await client.connect();
      // Kysely's PostgreSQL dialect numbers its parameters ($1, $2, …) as pg expects.
      explain = async (sql, params) => (await client.query(`EXPLAIN ${sql}`, params)).rows.map((r) => r['QUERY PLAN'] as string).join('\n');
      run = async (sql, params) => (await client.query(sql, params)).rows;
      close = () => client.end();
      expectIndexed = (table, plan, label) => {
        // The folders table holds two rows: a scan of it is what PostgreSQL rightly picks, so only files must read an index.
        if (table === 'files') expect(plan, label).toMatch(/Index (Only )?Scan( Backward)? using files_\w+ on files/);
        if (table === 'files') expect(plan, label).not.toMatch(/\bSort\b/);
      };
    } else {
      const db = new BetterSqlite3(join(o.dataDir, 'coffer.sqlite'), { readonly: true, fileMustExist: true });
      explain = async (sql, params) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail).join('\n');
      run = async (sql, params) => db.prepare(sql).all(...params) as Array<{ id: string }>;
      close = async () => { db.close(); };
      expectIndexed = (table, plan, label) => {
        expect(plan, label).toMatch(new RegExp(`SEARCH ${table} USING (COVERING )?INDEX ${table}_`));
        expect(plan, label).not.toContain('TEMP B-TREE');
      };
    }
    try {
      const plans: string[] = [];
      for (const sort of ['name', 'created_at', 'updated_at', 'size'] as const) {
        for (const order of ['asc', 'desc'] as const) {
          const mid = rows[12345]!;
          for (const after of [null, { value: keyOf[sort](mid), id: mid.id }]) {
            for (const table of ['files', 'folders'] as const) {
              const folderAfter = sort === 'created_at' || sort === 'updated_at' ? { value: mid[sort], id: mid.id } : { value: 'm', id: mid.id };
              const q: PageQuery = { parentId: p.folder_id, sort, order, after: table === 'folders' && after ? folderAfter : after, limit: 101 };
              const compiled = kysely.compilePage(table, q);
              const plan = await explain(compiled.sql, [...compiled.parameters]);
              plans.push(plan);
              expectIndexed(table, plan, `${table} ${sort} ${order} ${after ? 'after' : 'first'}:\n${plan}`);
              // The same query, run, answers the same rows the service listed.
              if (table === 'files' && after === null) {
                const got = (await run(compiled.sql, [...compiled.parameters])).map((r) => r.id);
                const key = keyOf[sort];
                const expected = [...rows].sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0) * (order === 'asc' ? 1 : -1));
                expect(got).toEqual(expected.slice(0, 101).map((r) => r.id));
              }
            }
          }
        }
      }
      expect(plans).toHaveLength(32);
    } finally {
      await close();
    }
  });
});

describe('search', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  const names = (r: any) => ({ folders: r.folders.map((f: any) => f.name).sort(), files: r.files.map((f: any) => f.name).sort() });
  async function search(body: Record<string, unknown>): Promise<any> {
    const r = await o.post('/collections/search', body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  }

  it('finds direct children, folders and files, whose name contains the query in any case', async () => {
    const s = await mkdir(o, unique('search'));
    const reportFolder = await mkdir(o, 'Report-2024', s.folder_id);
    await mkdir(o, 'misc', s.folder_id);
    await upload(o, 'report.pdf', s.folder_id);
    await upload(o, 'Annual REPORT final.txt', s.folder_id);
    await upload(o, 'other.txt', s.folder_id);
    await upload(o, 'report-deep.txt', reportFolder.folder_id);
    await openUpload(o, 'report-pending.bin', s.folder_id);

    for (const q of ['report', 'REPORT', 'RePoRt', ' report ']) {
      const r = await search({ folder_id: s.folder_id, query: q });
      expect(names(r), q).toEqual({ folders: ['Report-2024'], files: ['Annual REPORT final.txt', 'report.pdf'] });
      expect(r.next_cursor).toBeNull();
      expect(r.folders[0]).toMatchObject({ folder_id: reportFolder.folder_id, path: `${s.path}/Report-2024` });
      expect(r.files[0]).toMatchObject({ status: 'ready', folder_id: s.folder_id });
    }
    expect(names(await search({ folder_id: s.folder_id, query: 'deep' }))).toEqual({ folders: [], files: [] });
    expect(names(await search({ folder_id: reportFolder.folder_id, query: 'deep' }))).toEqual({ folders: [], files: ['report-deep.txt'] });
    expect(names(await search({ folder_id: s.folder_id, query: '.txt' }))).toEqual({ folders: [], files: ['Annual REPORT final.txt', 'other.txt'] });
    expect(names(await search({ folder_id: s.folder_id, query: 'nothing-like-this' }))).toEqual({ folders: [], files: [] });
  });

  it('searches the root when folder_id is absent or null, direct children only', async () => {
    const tag = unique('rootq').toLowerCase();
    const top = await mkdir(o, `${tag}-folder`);
    const f = await upload(o, `${tag}-file.txt`, null);
    await upload(o, `${tag}-nested.txt`, top.folder_id);
    for (const body of [{ query: tag }, { query: tag.toUpperCase(), folder_id: null }]) {
      const r = await search(body);
      expect(r.folders.map((x: any) => x.folder_id)).toEqual([top.folder_id]);
      expect(r.files.map((x: any) => x.file_id)).toEqual([f.file_id]);
    }
  });

  it('compares unicode without regard to case', async () => {
    const s = await mkdir(o, unique('uni'));
    await upload(o, 'Äpfel.txt', s.folder_id);
    await upload(o, 'äpfel-klein.txt', s.folder_id);
    await mkdir(o, 'ÖSTERREICH', s.folder_id);
    await upload(o, 'apfel.txt', s.folder_id);
    for (const q of ['ä', 'Ä', 'äPFEL']) {
      expect(names(await search({ folder_id: s.folder_id, query: q })), q).toEqual({ folders: [], files: ['Äpfel.txt', 'äpfel-klein.txt'] });
    }
    expect(names(await search({ folder_id: s.folder_id, query: 'österreich' }))).toEqual({ folders: ['ÖSTERREICH'], files: [] });
  });

  it('treats LIKE wildcards % and _ and the escape character as literal text', async () => {
    const s = await mkdir(o, unique('wild'));
    await upload(o, '100%_done.txt', s.folder_id);
    await upload(o, '100x done.txt', s.folder_id);
    await upload(o, '100 percent.txt', s.folder_id);
    await upload(o, 'a_b.txt', s.folder_id);
    await upload(o, 'axb.txt', s.folder_id);
    await upload(o, 'back\\slash.txt', s.folder_id);
    expect(names(await search({ folder_id: s.folder_id, query: '%' }))).toEqual({ folders: [], files: ['100%_done.txt'] });
    expect(names(await search({ folder_id: s.folder_id, query: '_' }))).toEqual({ folders: [], files: ['100%_done.txt', 'a_b.txt'] });
    expect(names(await search({ folder_id: s.folder_id, query: 'a_b' }))).toEqual({ folders: [], files: ['a_b.txt'] });
    expect(names(await search({ folder_id: s.folder_id, query: '100%' }))).toEqual({ folders: [], files: ['100%_done.txt'] });
    expect(names(await search({ folder_id: s.folder_id, query: '100_' }))).toEqual({ folders: [], files: [] });
    expect(names(await search({ folder_id: s.folder_id, query: '\\' }))).toEqual({ folders: [], files: ['back\\slash.txt'] });
  });

  it('pages with the cursor, never skipping or repeating', async () => {
    const s = await mkdir(o, unique('spage'));
    const want: string[] = [];
    for (let i = 0; i < 4; i++) want.push((await mkdir(o, `hit-folder-${i}`, s.folder_id)).folder_id);
    for (let i = 0; i < 5; i++) want.push((await upload(o, `hit-${i % 2}.txt`, s.folder_id)).file_id);
    await upload(o, 'miss.txt', s.folder_id);
    await mkdir(o, 'miss-folder', s.folder_id);
    const { pages, ids } = await listAll(o, { folder_id: s.folder_id, query: 'HIT', limit: 2 }, '/collections/search');
    expect(ids).toHaveLength(9);
    expect(new Set(ids)).toEqual(new Set(want));
    expect(pages).toHaveLength(5);
    for (const page of pages.slice(0, -1)) expect(entryIds(page)).toHaveLength(2);
    // Folders come first.
    expect(ids.slice(0, 4).sort()).toEqual(want.slice(0, 4).sort());
    // A search cursor belongs to its query.
    expectError(await o.post('/collections/search', { folder_id: s.folder_id, query: 'miss', limit: 2, cursor: pages[0].next_cursor }), 400, 'invalid_cursor', { field: 'cursor' });
    expectError(await o.post('/collections/list', { folder_id: s.folder_id, limit: 2, cursor: pages[0].next_cursor }), 400, 'invalid_cursor');
  });

  it('answers 400 for an empty query or a bad limit, and 404 for an unknown folder', async () => {
    const s = await mkdir(o, unique('sbad'));
    for (const query of ['', '   ', '\t']) {
      const r = await o.post('/collections/search', { folder_id: s.folder_id, query });
      expect(r.status).toBe(400);
      expect(r.body.error.details.field).toBe('query');
    }
    expectError(await o.post('/collections/search', { folder_id: s.folder_id }), 400, 'invalid_request', { field: 'query' });
    for (const limit of [0, 1001, 2.5]) {
      const r = await o.post('/collections/search', { folder_id: s.folder_id, query: 'x', limit });
      expect(r.status).toBe(400);
      expect(r.body.error.details.field).toBe('limit');
    }
    expectError(await o.post('/collections/search', { folder_id: 'nope', query: 'x' }), 404, 'folder_not_found', { folder_id: 'nope' });
    expectError(await o.post('/collections/search', { folder_id: 'nope', query: '' }), 404, 'folder_not_found');
  });
});
