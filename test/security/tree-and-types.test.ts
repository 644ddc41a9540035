/**
 * The folder tree has a depth limit (MAX_FOLDER_DEPTH, 256 levels) enforced at create and
 * move, and every walk up the tree fails closed: a chain cut short (too long, or a folder
 * unknown) counts as Private, at the origin and at the edge. Content types that could not be
 * sent back as a header are refused at initiate.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { MAX_FOLDER_DEPTH } from '../../src/core/upload.js';
import { newId } from '../../src/core/ids.js';
import { nameKey } from '../../src/core/names.js';
import { isSendableContentType } from '../../src/core/file-types.js';
import { EdgeState, type EdgeFile, type EdgeFolder } from '../../src/edge/state.js';

const EDGE_TOKEN = 'tree-edge-token-' + randomBytes(12).toString('hex');


describe('folder nesting limit', () => {
  let o: TestOrigin;
  /** levels[d - 1] is the folder at depth d (the root's children are at depth 1). */
  const levels: any[] = [];

  const mkdir = (name: string, parentId: string | null, visibility = 'Public') =>
    o.post('/collections/folder/create', { name, visibility, parent_id: parentId });

  beforeAll(async () => {
    o = await startTestOrigin({ COFFER_EDGE_TOKEN: EDGE_TOKEN });
  });
  afterAll(async () => {
    await o?.close();
  });

  it(`creates ${MAX_FOLDER_DEPTH} levels and refuses the next with 409 folder_too_deep`, async () => {
    expect(MAX_FOLDER_DEPTH).toBe(256);
    let parent: string | null = null;
    for (let d = 1; d <= MAX_FOLDER_DEPTH; d++) {
      const r = await mkdir(`l${d}`, parent);
      expect(r.status, `depth ${d}: ${JSON.stringify(r.body)}`).toBe(200);
      levels.push(r.body);
      parent = r.body.folder_id;
    }
    expect(levels[MAX_FOLDER_DEPTH - 1].path.split('/').length - 1).toBe(MAX_FOLDER_DEPTH);
    expectError(await mkdir('too-deep', parent), 409, 'folder_too_deep', { max_depth: MAX_FOLDER_DEPTH });
    // The deepest level's chain is whole: its visibility comes from every folder above it.
    const file = await uploadBytes(o, randomBytes(10), { folder_id: levels[MAX_FOLDER_DEPTH - 1].folder_id });
    expect(file.effective_visibility).toBe('Public');
    expect((await o.post('/collections/folder/update', { folder_id: levels[0].folder_id, visibility: 'Private' })).status).toBe(200);
    expect((await o.post('/collections/file/get', { file_id: file.file_id })).body.effective_visibility).toBe('Private');
    expect((await o.post('/collections/folder/update', { folder_id: levels[0].folder_id, visibility: 'Public' })).status).toBe(200);
  }, 120_000);

  it('refuses a move that would put any folder of the moved subtree below the limit', async () => {
    const top = await mkdir(`mover-${randomBytes(4).toString('hex')}`, null);
    expect(top.status).toBe(200);
    const child = await mkdir('child', top.body.folder_id);
    expect(child.status).toBe(200);
    // Under depth 255 the top would be at 256 and its child at 257.
    expectError(await o.post('/collections/folder/update', { folder_id: top.body.folder_id, parent_id: levels[254].folder_id }), 409, 'folder_too_deep', { max_depth: MAX_FOLDER_DEPTH });
    // Under the deepest level, even a folder with nothing in it.
    expectError(await o.post('/collections/folder/update', { folder_id: child.body.folder_id, parent_id: levels[255].folder_id }), 409, 'folder_too_deep');
    // Where the whole subtree fits, the move is made.
    const moved = await o.post('/collections/folder/update', { folder_id: top.body.folder_id, parent_id: levels[253].folder_id });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body.path.split('/').length - 1).toBe(255);
  });

  it('fails closed on a chain longer than the limit (made before it existed): Private at the origin and for edges', async () => {
    // Written straight to the store, as an older version without the limit could have.
    const meta = o.origin.stores.meta;
    let parent: string | null = null;
    await meta.transaction(async (tx) => {
      for (let d = 1; d <= MAX_FOLDER_DEPTH + 10; d++) {
        const id = newId();
        const name = `legacy${d}`;
        await tx.insertFolder({ id, name, name_key: nameKey(name), visibility: 'Public', parent_id: parent, created_at: Date.now(), updated_at: Date.now() });
        parent = id;
      }
    });
    const file = await uploadBytes(o, randomBytes(10), { folder_id: parent });
    expect(file.effective_visibility, 'every folder is Public, but the walk up was cut short').toBe('Private');
    const listing = await o.post('/collections/list', { folder_id: parent });
    expect(listing.status).toBe(200);
    expect(listing.body.files[0].effective_visibility).toBe('Private');
    // An edge re-checking the file is told Private too.
    const res = await fetch(`${o.url}/_edge/file/${file.file_id}`, { headers: { authorization: `Bearer ${EDGE_TOKEN}` } });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { file: { visibility: string }; folders: Array<{ visibility: string }> };
    expect(answer.file.visibility === 'Private' || answer.folders.some((f) => f.visibility === 'Private')).toBe(true);
  });
});

describe('the edge walks up the tree and fails closed', () => {
  const file = (folderId: string | null): EdgeFile => ({
    file_id: 'f' + randomBytes(6).toString('hex'), name: 'a.png', visibility: 'Public', folder_id: folderId, size: 1,
    content_type: 'image/png', sha256: '0'.repeat(64), completed_at: 0, updated_at: 0,
  });
  const chain = (n: number, prefix: string): EdgeFolder[] =>
    Array.from({ length: n }, (_, i) => ({ folder_id: `${prefix}${i}`, name: `${prefix}${i}`, visibility: 'Public' as const, parent_id: i === 0 ? null : `${prefix}${i - 1}` }));
  const stateWith = (folders: EdgeFolder[], files: EdgeFile[]): EdgeState => {
    const state = new EdgeState({ fileReady() {}, fileGone() {} });
    state.load({ seq: 1, folders, files });
    return state;
  };

  it(`treats a file below a chain longer than ${MAX_FOLDER_DEPTH} folders as Private, and one at the limit by its folders`, () => {
    const atLimit = file(`ok${MAX_FOLDER_DEPTH - 1}`);
    expect(stateWith(chain(MAX_FOLDER_DEPTH, 'ok'), [atLimit]).visibilityOf(atLimit)).toBe('Public');
    const n = MAX_FOLDER_DEPTH + 1;
    const f = file(`deep${n - 1}`);
    expect(stateWith(chain(n, 'deep'), [f]).visibilityOf(f)).toBe('Private');
    const longer = file('deeper9999');
    expect(stateWith(chain(10_000, 'deeper'), [longer]).visibilityOf(longer)).toBe('Private');
  });

  it('treats a file whose folder, or a folder above it, is unknown as Private', () => {
    const orphan = file('nowhere');
    expect(stateWith([], [orphan]).visibilityOf(orphan)).toBe('Private');
    const folders = chain(5, 'gap').filter((f) => f.folder_id !== 'gap2');
    const below = file('gap4');
    expect(stateWith(folders, [below]).visibilityOf(below)).toBe('Private');
  });

  it('treats a file below a cycle of folders as Private', () => {
    const loop: EdgeFolder[] = [
      { folder_id: 'c1', name: 'c1', visibility: 'Public', parent_id: 'c2' },
      { folder_id: 'c2', name: 'c2', visibility: 'Public', parent_id: 'c1' },
    ];
    const f = file('c1');
    expect(stateWith(loop, [f]).visibilityOf(f)).toBe('Private');
  });
});

describe('content types at initiate', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin();
  });
  afterAll(async () => {
    await o?.close();
  });

  const initiate = (contentType: string) =>
    o.post('/collections/upload/file', { name: 'a.bin', visibility: 'Public', size: 1, file_type: 'other', content_type: contentType });

  const refused = [
    'text/plain; charset="日本"', // not Latin-1 even
    'text/plain; charset="é"', // not ASCII
    'text/plain; x="\u0001"', // a control character in a quoted string
    'text/plain; x="a\u007fb"', // DEL
    'text/plain\r\nX-Injected: 1',
    'text/plain\n; a=b',
    'text/plain\u00a0; a=b', // a non-ASCII space
    'text/plain;\u2028a=b',
    'text/\u00e9',
    'text/plain\u0000',
    'text',
    '/plain',
    'text/plain/extra',
    'text /plain',
    'text/plain; =b',
    'text/plain; a=',
    'text/plain; a="unterminated',
    `text/${'a'.repeat(300)}`,
  ];
  const accepted = [
    'image/png',
    'text/plain; charset=utf-8',
    'text/plain;charset=UTF-8',
    'text/plain ;\tcharset="utf-8"',
    'application/vnd.api+json',
    "application/x.weird!#$%&'*+-.^_`|~",
    'multipart/form-data; boundary="a b\\"c"',
  ];

  it('refuses every type that could not be sent back as a header with 400 invalid_content_type', async () => {
    for (const type of refused) {
      expect(isSendableContentType(type), JSON.stringify(type)).toBe(false);
      const r = await initiate(type);
      expect(r.status, `${JSON.stringify(type)} → ${JSON.stringify(r.body)}`).toBe(400);
      expectError(r, 400, 'invalid_content_type', { field: 'content_type' });
    }
    // file/update takes no content_type: the type is fixed at initiate.
    const file = await uploadBytes(o, randomBytes(3));
    expect((await o.post('/collections/file/update', { file_id: file.file_id, content_type: 'text/plain; x="日本"' })).status).toBe(400);
  });

  it('accepts every RFC 9110 media type made of token characters and ASCII quoted strings, stored as given', async () => {
    for (const type of accepted) {
      expect(isSendableContentType(type), JSON.stringify(type)).toBe(true);
      const r = await initiate(type);
      expect(r.status, `${JSON.stringify(type)} → ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body.content_type).toBe(type);
      // What is stored can be sent as a header.
      expect(() => new Headers({ 'content-type': r.body.content_type })).not.toThrow();
    }
  });
});
