/**
 * The MetadataStore port's behaviour, one suite for every adapter: the embedded SQLite store and
 * PostgreSQL (a fresh database on the run's throwaway cluster, test/helpers/postgres.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameKey } from '../../src/core/names.js';
import type { Keyset, MetadataStore, MetadataTx, SortField, SortOrder, StoredFile, StoredFolder } from '../../src/core/ports.js';
import { openSqliteStore } from '../../src/adapters/metadata/sqlite.js';
import { openPostgresStore } from '../../src/adapters/metadata/postgres.js';
import { openMetadataStore } from '../../src/adapters/open.js';
import { createDatabase } from '../helpers/postgres.js';

interface Engine {
  store: MetadataStore;
  cleanup(): Promise<void>;
}

const engines: Array<[string, () => Promise<Engine>]> = [
  ['sqlite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'coffer-meta-'));
    const path = join(dir, 'meta.sqlite');
    return { store: await openSqliteStore(path), cleanup: () => rm(dir, { recursive: true, force: true }) };
  }],
  ['postgres', async () => {
    const url = await createDatabase();
    return { store: await openPostgresStore(url), cleanup: async () => {} };
  }],
];

const T0 = 1_790_000_000_000;
const id = () => randomBytes(12).toString('base64url');

function folder(name: string, parentId: string | null, over: Partial<StoredFolder> = {}): StoredFolder {
  return { id: id(), name, name_key: nameKey(name), visibility: 'Public', parent_id: parentId, created_at: T0, updated_at: T0, s3_implicit: null, ...over };
}

function file(name: string, folderId: string | null, over: Partial<StoredFile> = {}): StoredFile {
  const fid = over.id ?? id();
  return {
    id: fid, name, name_key: nameKey(name), visibility: 'Private', size: 1234, file_type: 'document', content_type: 'text/plain',
    folder_id: folderId, status: 'ready', sha256: 'ab'.repeat(32), created_at: T0, updated_at: T0, completed_at: T0,
    bucket: 'local', blob_key: `files/${fid}`, upload_id: null, upload_expires_at: null, grant_id: null, links_revoked_at: null, s3_etag: null, s3_meta: null, ...over,
  };
}

/** SQLite's BINARY order: UTF-8 bytes. */
const byteCompare = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
function compareKeys(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return byteCompare(String(a), String(b));
}

describe.each(engines)('MetadataStore on %s', (engine, open) => {
  let e: Engine;
  let store: MetadataStore;
  beforeAll(async () => {
    e = await open();
    store = e.store;
  });
  afterAll(async () => {
    await store?.close();
    await e?.cleanup();
  });

  const inTx = <T>(fn: (tx: MetadataTx) => Promise<T>) => store.transaction(fn);

  it('says which engine it is and migrates again without harm', async () => {
    expect(store.dialect).toBe(engine);
    await store.migrate();
    await store.migrate();
  });

  it('keeps folders: get, find by name (case-sensitive), update, chain, descendants, children, delete', async () => {
    const top = folder('Photos', null);
    const mid = folder('2026', top.id, { visibility: 'Private' });
    const leaf = folder('June', mid.id);
    const sibling = folder('photos', null);
    await inTx(async (tx) => {
      for (const f of [top, mid, leaf, sibling]) await tx.insertFolder(f);
    });
    expect(await store.read.getFolder(top.id)).toEqual(top);
    expect(await store.read.getFolder('nope')).toBeUndefined();
    expect((await store.read.findFolderByName(null, 'Photos'))?.id).toBe(top.id);
    expect((await store.read.findFolderByName(null, 'photos'))?.id).toBe(sibling.id);
    expect(await store.read.findFolderByName(null, 'PHOTOS')).toBeUndefined();
    expect((await store.read.findFolderByName(top.id, '2026'))?.id).toBe(mid.id);
    expect(await store.read.findFolderByName(null, '2026')).toBeUndefined();

    expect((await store.read.folderChain(leaf.id)).map((f) => f.id)).toEqual([leaf.id, mid.id, top.id]);
    expect(await store.read.folderChain(top.id)).toEqual([top]);
    expect(await store.read.folderChain('nope')).toEqual([]);
    expect((await store.read.descendantFolderIds(top.id)).sort()).toEqual([mid.id, leaf.id].sort());
    expect(await store.read.descendantFolderIds(leaf.id)).toEqual([]);

    await inTx(async (tx) => {
      await tx.insertFile(file('a.txt', mid.id));
      await tx.insertFile(file('b.txt', mid.id, { status: 'uploading', sha256: null, completed_at: null, upload_id: 'u1', upload_expires_at: T0 + 1 }));
    });
    expect(await store.read.countChildren(mid.id)).toEqual({ files: 2, folders: 1 });
    expect(await store.read.countChildren(leaf.id)).toEqual({ files: 0, folders: 0 });
    expect((await store.read.filesInFolders([top.id, mid.id, leaf.id])).map((f) => f.name).sort()).toEqual(['a.txt', 'b.txt']);

    await inTx((tx) => tx.updateFolder(mid.id, { name: '2027', name_key: '2027', visibility: 'Public', updated_at: T0 + 5 }));
    expect(await store.read.getFolder(mid.id)).toEqual({ ...mid, name: '2027', name_key: '2027', visibility: 'Public', updated_at: T0 + 5 });

    await inTx(async (tx) => {
      await tx.deleteFiles((await tx.filesInFolders([mid.id])).map((f) => f.id));
      // Parents first in the list: the store deletes children before parents.
      await tx.deleteFolders([top.id, mid.id, leaf.id]);
    });
    for (const f of [top, mid, leaf]) expect(await store.read.getFolder(f.id)).toBeUndefined();
    expect(await store.read.getFolder(sibling.id)).toEqual(sibling);
  });

  it('keeps folder names unique under one parent, the root included', async () => {
    const parent = folder('unique-parent', null);
    await inTx((tx) => tx.insertFolder(parent));
    await inTx((tx) => tx.insertFolder(folder('same', parent.id)));
    await expect(inTx((tx) => tx.insertFolder(folder('same', parent.id)))).rejects.toThrow();
    await inTx((tx) => tx.insertFolder(folder('Same', parent.id)));
    await inTx((tx) => tx.insertFolder(folder('root-same', null)));
    await expect(inTx((tx) => tx.insertFolder(folder('root-same', null)))).rejects.toThrow();
  });

  it('keeps files with every field as it was written (numbers as numbers, large sizes exact)', async () => {
    const big = file('big.bin', null, { size: 10_000 * 5 * 1024 * 1024, created_at: T0 + 1, updated_at: T0 + 2, completed_at: T0 + 3 });
    const open = file('open.bin', null, { status: 'uploading', sha256: null, completed_at: null, upload_id: 'up-1', upload_expires_at: T0 + 86_400_000 });
    await inTx(async (tx) => {
      await tx.insertFile(big);
      await tx.insertFile(open);
    });
    const got = await store.read.getFile(big.id);
    expect(got).toEqual(big);
    expect(typeof got!.size).toBe('number');
    expect(typeof got!.created_at).toBe('number');
    expect(await store.read.getFile(open.id)).toEqual(open);
    expect(await store.read.getFile('nope')).toBeUndefined();

    await inTx((tx) => tx.updateFile(open.id, { status: 'ready', sha256: 'cd'.repeat(32), completed_at: T0 + 9, updated_at: T0 + 9, upload_expires_at: null }));
    expect(await store.read.getFile(open.id)).toEqual({ ...open, status: 'ready', sha256: 'cd'.repeat(32), completed_at: T0 + 9, updated_at: T0 + 9, upload_expires_at: null });
    expect((await store.allReadyFiles()).map((f) => f.id)).toEqual(expect.arrayContaining([big.id, open.id]));

    await inTx((tx) => tx.deleteFiles([big.id, open.id]));
    expect(await store.read.getFile(big.id)).toBeUndefined();
    expect(await store.read.getFile(open.id)).toBeUndefined();
  });

  it('finds files in many folders at once (past one batch of bound values)', async () => {
    const parent = folder('many', null);
    const kids = Array.from({ length: 620 }, (_, i) => folder(`k${i}`, parent.id));
    await inTx(async (tx) => {
      await tx.insertFolder(parent);
      for (const k of kids) await tx.insertFolder(k);
      await tx.insertFile(file('first.txt', kids[0]!.id));
      await tx.insertFile(file('last.txt', kids[619]!.id));
    });
    const found = await store.read.filesInFolders(kids.map((k) => k.id));
    expect(found.map((f) => f.name).sort()).toEqual(['first.txt', 'last.txt']);
    expect((await store.read.descendantFolderIds(parent.id)).length).toBe(620);
    expect(await store.read.countChildren(parent.id)).toEqual({ files: 0, folders: 620 });
    expect((await store.allFolders()).filter((f) => f.parent_id === parent.id).length).toBe(620);
  });

  it('keeps parts: upsert replaces, listed in order, deleted with their file', async () => {
    const f = file('parts.bin', null, { status: 'uploading', sha256: null, completed_at: null, upload_id: 'up-p', upload_expires_at: T0 + 1000 });
    await inTx((tx) => tx.insertFile(f));
    await inTx(async (tx) => {
      for (const n of [3, 1, 2]) await tx.upsertPart({ file_id: f.id, part_number: n, size: 5_242_880, etag: `e${n}`, updated_at: T0 + n });
    });
    await inTx((tx) => tx.upsertPart({ file_id: f.id, part_number: 2, size: 17, etag: 'e2b', updated_at: T0 + 20, md5: 'ab'.repeat(16) }));
    expect(await store.read.getPart(f.id, 2)).toEqual({ file_id: f.id, part_number: 2, size: 17, etag: 'e2b', updated_at: T0 + 20, md5: 'ab'.repeat(16) });
    expect((await store.read.getPart(f.id, 1))?.md5).toBeNull();
    expect(await store.read.getPart(f.id, 9)).toBeUndefined();
    expect((await store.read.listParts(f.id)).map((p) => [p.part_number, p.etag])).toEqual([[1, 'e1'], [2, 'e2b'], [3, 'e3']]);
    expect((await store.read.partNumbers(f.id)).sort()).toEqual([1, 2, 3]);
    await inTx((tx) => tx.deleteParts(f.id));
    expect(await store.read.listParts(f.id)).toEqual([]);
    await inTx((tx) => tx.upsertPart({ file_id: f.id, part_number: 1, size: 1, etag: 'x', updated_at: T0 }));
    await inTx((tx) => tx.deleteFiles([f.id]));
    expect(await store.read.listParts(f.id)).toEqual([]);
  });

  it('appends events in order, reads them after a sequence number, and knows the last', async () => {
    const before = await store.lastEventSeq();
    const seqs: number[] = [];
    await inTx(async (tx) => {
      seqs.push(await tx.appendEvent({ type: 'folder.created', folder_id: 'f1', data: { name: 'x', n: 1 } }, T0 + 1));
      seqs.push(await tx.appendEvent({ type: 'file.ready', file_id: 'a', folder_id: null, data: { nested: { ok: true }, list: [1, 2] } }, T0 + 2));
    });
    seqs.push(await inTx((tx) => tx.appendEvent({ type: 'file.deleted', file_id: 'a', data: {} }, T0 + 3)));
    expect(seqs[0]).toBeGreaterThan(before);
    expect(seqs[1]).toBeGreaterThan(seqs[0]!);
    expect(seqs[2]).toBeGreaterThan(seqs[1]!);
    expect(await store.lastEventSeq()).toBe(seqs[2]);
    const events = await store.eventsAfter(before, 10);
    expect(events).toEqual([
      { seq: seqs[0], type: 'folder.created', file_id: null, folder_id: 'f1', data: { name: 'x', n: 1 }, created_at: T0 + 1 },
      { seq: seqs[1], type: 'file.ready', file_id: 'a', folder_id: null, data: { nested: { ok: true }, list: [1, 2] }, created_at: T0 + 2 },
      { seq: seqs[2], type: 'file.deleted', file_id: 'a', folder_id: null, data: {}, created_at: T0 + 3 },
    ]);
    expect((await store.eventsAfter(before, 2)).map((ev) => ev.seq)).toEqual(seqs.slice(0, 2));
    expect((await store.eventsAfter(seqs[1]!, 10)).map((ev) => ev.seq)).toEqual([seqs[2]]);
    expect(await store.eventsAfter(seqs[2]!, 10)).toEqual([]);
    // A rolled-back append leaves no event behind.
    await expect(inTx(async (tx) => {
      await tx.appendEvent({ type: 'folder.deleted', folder_id: 'gone', data: {} }, T0);
      throw new Error('rollback');
    })).rejects.toThrow('rollback');
    expect(await store.eventsAfter(seqs[2]!, 10)).toEqual([]);
  });

  it('queues blobs for deletion until they are forgotten', async () => {
    await store.forgetBlobDeletions((await store.pendingBlobDeletions(1000)).map((b) => b.id));
    await inTx((tx) => tx.queueBlobDeletion([
      { bucket: 'local', blob_key: 'files/1', upload_id: 'u1', object: 0 },
      { bucket: 'local', blob_key: 'files/2', upload_id: null, object: 1 },
    ], T0));
    await inTx((tx) => tx.queueBlobDeletion([{ bucket: 'b2', blob_key: 'files/3', upload_id: 'u3', object: 1 }], T0 + 1));
    const pending = await store.pendingBlobDeletions(10);
    expect(pending.map(({ id: _id, ...rest }) => rest)).toEqual([
      { bucket: 'local', blob_key: 'files/1', upload_id: 'u1', object: 0 },
      { bucket: 'local', blob_key: 'files/2', upload_id: null, object: 1 },
      { bucket: 'b2', blob_key: 'files/3', upload_id: 'u3', object: 1 },
    ]);
    expect(pending.every((b) => typeof b.id === 'number')).toBe(true);
    expect((await store.pendingBlobDeletions(2)).map((b) => b.id)).toEqual(pending.slice(0, 2).map((b) => b.id));
    await store.forgetBlobDeletions([pending[0]!.id, pending[2]!.id]);
    expect((await store.pendingBlobDeletions(10)).map((b) => b.blob_key)).toEqual(['files/2']);
    await store.forgetBlobDeletions([pending[1]!.id]);
    expect(await store.pendingBlobDeletions(10)).toEqual([]);
    // Many at once (past one batch).
    const many = Array.from({ length: 700 }, (_, i) => ({ bucket: 'local', blob_key: `files/m${i}`, upload_id: null, object: 1 }));
    await inTx((tx) => tx.queueBlobDeletion(many, T0));
    const all = await store.pendingBlobDeletions(1000);
    expect(all.length).toBe(700);
    await store.forgetBlobDeletions(all.map((b) => b.id));
    expect(await store.pendingBlobDeletions(10)).toEqual([]);
  });

  it('keeps sessions, ends them once, and sweeps the expired ones', async () => {
    const s1 = { token_hash: 'h1-' + id(), csrf_token: 'c1', created_at: T0, expires_at: T0 + 1000, root_fingerprint: 'f1' };
    const s2 = { token_hash: 'h2-' + id(), csrf_token: 'c2', created_at: T0, expires_at: T0 + 2000, root_fingerprint: 'f2' };
    const s3 = { token_hash: 'h3-' + id(), csrf_token: 'c3', created_at: T0, expires_at: T0 + 3000, root_fingerprint: 'f3' };
    await inTx(async (tx) => {
      for (const s of [s1, s2, s3]) await tx.insertSession(s);
    });
    expect(await store.read.getSession(s1.token_hash)).toEqual(s1);
    expect(await store.read.getSession('nope')).toBeUndefined();
    expect(await inTx((tx) => tx.deleteSession(s3.token_hash))).toBe(true);
    expect(await inTx((tx) => tx.deleteSession(s3.token_hash))).toBe(false);
    // Expiry at or before `now` is expired.
    expect(await store.deleteExpiredSessions(T0 + 999)).toBe(0);
    expect(await store.deleteExpiredSessions(T0 + 1000)).toBe(1);
    expect(await store.read.getSession(s1.token_hash)).toBeUndefined();
    expect(await store.read.getSession(s2.token_hash)).toEqual(s2);
    expect(await store.deleteExpiredSessions(T0 + 5000)).toBe(1);
  });

  it('finds expired uploads: open ones only, soonest first, up to the limit', async () => {
    const now = T0 + 10_000_000;
    const mk = (name: string, expires: number, status: 'uploading' | 'ready' = 'uploading') =>
      file(name, null, { status, sha256: null, completed_at: null, upload_id: 'u-' + name, upload_expires_at: expires });
    const late = mk('late', now);
    const early = mk('early', now - 50);
    const future = mk('future', now + 1);
    const readyOld = mk('ready', now - 100, 'ready');
    await inTx(async (tx) => {
      for (const f of [late, early, future, readyOld]) await tx.insertFile(f);
    });
    const stale = await store.expiredUploads(now, 10);
    expect(stale.map((f) => f.id)).toEqual([early.id, late.id]);
    expect((await store.expiredUploads(now, 1)).map((f) => f.id)).toEqual([early.id]);
    await inTx((tx) => tx.deleteFiles([late.id, early.id, future.id, readyOld.id]));
  });

  it('rolls a transaction back when its function throws, and returns its value otherwise', async () => {
    const f = folder('rolled-back', null);
    await expect(inTx(async (tx) => {
      await tx.insertFolder(f);
      expect(await tx.getFolder(f.id)).toEqual(f);
      throw new Error('nope');
    })).rejects.toThrow('nope');
    expect(await store.read.getFolder(f.id)).toBeUndefined();
    expect(await inTx(async (tx) => {
      await tx.insertFolder(f);
      return 42;
    })).toBe(42);
    expect(await store.read.getFolder(f.id)).toEqual(f);
    // The relaxed flush still commits.
    const g = folder('not-durable', null);
    await store.transaction((tx) => tx.insertFolder(g), { durable: false });
    expect(await store.read.getFolder(g.id)).toEqual(g);
  });

  describe('S3 rows (contract §12)', () => {
    it('finds the ready files of one exact name in a folder, newest first', async () => {
      const top = folder(`named-${id()}`, null);
      await inTx((tx) => tx.insertFolder(top));
      const older = file('same.txt', top.id, { completed_at: T0 + 1 });
      const newer = file('same.txt', top.id, { completed_at: T0 + 5 });
      const uploading = file('same.txt', top.id, { status: 'uploading', completed_at: null, sha256: null });
      const otherCase = file('Same.txt', top.id, { completed_at: T0 + 9 });
      await inTx(async (tx) => {
        for (const f of [older, newer, uploading, otherCase]) await tx.insertFile(f);
      });
      expect((await store.read.s3.filesNamed(top.id, 'same.txt')).map((f) => f.id)).toEqual([newer.id, older.id]);
      expect(await store.read.s3.filesNamed(top.id, 'none')).toEqual([]);
      expect((await inTx((tx) => tx.s3.filesNamed(top.id, 'Same.txt', 'update'))).map((f) => f.id)).toEqual([otherCase.id]);
    });

    it('lists a folder in S3 key order (UTF-8 bytes, a folder as its name and "/"), newest first among equal names, in pages', async () => {
      const top = folder(`entries-${id()}`, null);
      await inTx((tx) => tx.insertFolder(top));
      // "photos-2024/" sorts before "photos/" ("-" < "/"), and "photos" (a file) before both.
      const folders = ['photos', 'photos-2024', 'Zed', 'é'].map((n) => folder(n, top.id));
      const files = ['photos', 'photos.txt', 'a b', 'Z', '😀', 'z'].map((n) => file(n, top.id));
      const dupe = file('photos.txt', top.id, { completed_at: T0 + 50 });
      await inTx(async (tx) => {
        for (const f of folders) await tx.insertFolder(f);
        for (const f of [...files, dupe]) await tx.insertFile(f);
      });
      const expected = [...folders.map((f) => `${f.name}/`), ...files.map((f) => f.name), 'photos.txt'].sort(byteCompare);
      const all = await store.read.s3.entries(top.id, null, 100);
      expect(all.more).toBe(false);
      expect(all.entries.map((e) => e.key)).toEqual(expected);
      expect(all.entries.filter((e) => e.key === 'photos.txt').map((e) => e.kind === 'file' && e.file.id)).toEqual([dupe.id, files[1]!.id]);
      expect(all.entries.find((e) => e.key === 'Zed/')).toMatchObject({ kind: 'folder', folder: { id: folders[2]!.id } });
      // Page by page, each after the last key seen: every key once, in order.
      const seen: string[] = [];
      let after: string | null = null;
      for (;;) {
        const page = await store.read.s3.entries(top.id, after, 3);
        const keys = page.entries.map((e) => e.key);
        seen.push(...keys.filter((k, i) => k !== keys[i - 1] && k !== after));
        if (!page.more) break;
        after = keys.at(-1)!;
      }
      expect(seen).toEqual([...new Set(expected)]);
      expect((await store.read.s3.entries(top.id, 'photos/', 100)).entries.map((e) => e.key)).toEqual(expected.filter((k) => byteCompare(k, 'photos/') > 0));
    });

    it('keeps multipart uploads by bucket and key, lists them by prefix (case-sensitive) after a marker, and drops them with their file', async () => {
      const bucket = folder(`uploads-${id()}`, null);
      await inTx((tx) => tx.insertFolder(bucket));
      const made: Array<{ key: string; fileId: string }> = [];
      for (const key of ['a/1', 'a/2', 'A/3', 'b/1', 'a/2']) {
        const f = file(key.split('/').pop()!, bucket.id, { status: 'uploading', completed_at: null, sha256: null });
        await inTx(async (tx) => {
          await tx.insertFile(f);
          await tx.s3.insertUpload({ file_id: f.id, bucket_id: bucket.id, object_key: key, created_at: T0 });
        });
        made.push({ key, fileId: f.id });
      }
      const order = [...made].sort((x, y) => byteCompare(x.key, y.key) || byteCompare(x.fileId, y.fileId));
      expect((await store.read.s3.listUploads(bucket.id, '', null, 100)).map((u) => u.file_id)).toEqual(order.map((u) => u.fileId));
      expect((await store.read.s3.listUploads(bucket.id, 'a/', null, 100)).map((u) => u.object_key)).toEqual(['a/1', 'a/2', 'a/2']);
      const first = order.find((u) => u.key === 'a/1')!;
      expect((await store.read.s3.listUploads(bucket.id, 'a/', { key: first.key, fileId: first.fileId }, 1)).map((u) => u.object_key)).toEqual(['a/2']);
      expect(await store.read.s3.getUpload(first.fileId)).toEqual({ file_id: first.fileId, bucket_id: bucket.id, object_key: 'a/1', created_at: T0 });
      await inTx((tx) => tx.deleteFiles([first.fileId]));
      expect(await store.read.s3.getUpload(first.fileId)).toBeUndefined();
      const second = made[1]!;
      await inTx((tx) => tx.s3.deleteUpload(second.fileId));
      expect(await store.read.s3.getUpload(second.fileId)).toBeUndefined();
    });
  });

  describe('keyset paging', () => {
    // Names that differ only in case, accents, scripts beyond the BMP, LIKE metacharacters and
    // characters that sort differently by bytes than in a linguistic collation.
    const NAMES = [
      'alpha', 'Alpha', 'ALPHA', 'beta', 'Béta', 'bz', 'b_z', 'b%z', 'b\\z', '_lead', '%lead', 'zeta', 'Zeta',
      'émile', 'emile', 'Ωmega', '日本', '😀 smile', '\uff5etilde', 'a-b', 'a b', 'a.b', '100%', '100_', '1000', 'same', 'same',
    ];
    let parent: StoredFolder;
    let folders: StoredFolder[];
    let files: StoredFile[];

    beforeAll(async () => {
      parent = folder('paging-' + id(), null);
      // Timestamps and sizes repeat, so ties are broken by id.
      folders = NAMES.slice(0, 14).map((n, i) => folder(n === 'same' ? 'same-folder' : n, parent.id, { created_at: T0 + (i % 4), updated_at: T0 + ((i * 7) % 5) }));
      files = NAMES.map((n, i) => file(n, parent.id, { size: (i * 37) % 6, created_at: T0 + (i % 5), updated_at: T0 + ((i * 3) % 4) }));
      const uploading = file('alpha-uploading', parent.id, { status: 'uploading', sha256: null, completed_at: null, upload_id: 'u', upload_expires_at: T0 });
      const elsewhere = file('alpha-elsewhere', null);
      await store.transaction(async (tx) => {
        await tx.insertFolder(parent);
        for (const f of folders) await tx.insertFolder(f);
        for (const f of [...files, uploading, elsewhere]) await tx.insertFile(f);
      });
    });

    const folderValue = (f: StoredFolder, sort: SortField) => (sort === 'created_at' ? f.created_at : sort === 'updated_at' ? f.updated_at : f.name_key);
    const fileValue = (f: StoredFile, sort: SortField) => (sort === 'name' ? f.name_key : f[sort]);

    function expected<T extends { id: string }>(rows: T[], value: (r: T) => string | number, order: SortOrder, contains?: string): string[] {
      const kept = contains === undefined ? rows : rows.filter((r) => String(value(r)).includes(contains));
      const sorted = [...kept].sort((a, b) => compareKeys(value(a), value(b)) || byteCompare(a.id, b.id));
      if (order === 'desc') sorted.reverse();
      return sorted.map((r) => r.id);
    }

    async function pageAll<T extends { id: string }>(list: (after: Keyset | null) => Promise<T[]>, value: (r: T) => string | number): Promise<string[]> {
      const seen: string[] = [];
      let after: Keyset | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const page = await list(after);
        seen.push(...page.map((r) => r.id));
        if (page.length < 4) return seen;
        const last = page[page.length - 1]!;
        after = { value: value(last), id: last.id };
      }
      throw new Error('paging did not end');
    }

    for (const sort of ['name', 'created_at', 'updated_at', 'size'] as const) {
      for (const order of ['asc', 'desc'] as const) {
        it(`pages folders then files by ${sort} ${order}, in byte order, never skipping or repeating`, async () => {
          const q = { parentId: parent.id, sort, order, limit: 4 };
          const gotFolders = await pageAll((after) => store.listFolders({ ...q, after }), (f) => folderValue(f, sort));
          // Folders have no size: they sort by name then.
          expect(gotFolders).toEqual(expected(folders, (f) => folderValue(f, sort), order));
          const gotFiles = await pageAll((after) => store.listFiles({ ...q, after }), (f) => fileValue(f, sort));
          expect(gotFiles).toEqual(expected(files, (f) => fileValue(f, sort), order));
          // Records come back whole.
          const one = (await store.listFiles({ ...q, after: null, limit: 1 }))[0]!;
          expect(one).toEqual(files.find((f) => f.id === one.id));
        });
      }
    }

    for (const text of ['alpha', 'b_z', 'b%z', '%', '_', '\\', 'é', '😀', '100%', 'a b', 'zzz-none']) {
      it(`searches names containing ${JSON.stringify(text)} literally (LIKE metacharacters escaped)`, async () => {
        const key = nameKey(text);
        const q = { parentId: parent.id, sort: 'name' as const, order: 'asc' as const, limit: 4, nameContains: key };
        const gotFolders = await pageAll((after) => store.listFolders({ ...q, after }), (f) => f.name_key);
        expect(gotFolders).toEqual(expected(folders, (f) => f.name_key, 'asc', key));
        const gotFiles = await pageAll((after) => store.listFiles({ ...q, after }), (f) => f.name_key);
        expect(gotFiles).toEqual(expected(files, (f) => f.name_key, 'asc', key));
      });
    }

    it('lists the root as the folder with no parent', async () => {
      const rootFolders = await store.listFolders({ parentId: null, sort: 'name', order: 'asc', after: null, limit: 1000 });
      expect(rootFolders.some((f) => f.id === parent.id)).toBe(true);
      expect(rootFolders.every((f) => f.parent_id === null)).toBe(true);
      const rootFiles = await store.listFiles({ parentId: null, sort: 'name', order: 'asc', after: null, limit: 1000 });
      expect(rootFiles.some((f) => f.name === 'alpha-elsewhere')).toBe(true);
      expect(rootFiles.every((f) => f.folder_id === null && f.status === 'ready')).toBe(true);
    });
  });

  describe('concurrency', () => {
    it('runs concurrent transactions without losing an update made under a row lock', async () => {
      const f = file('counter', null, { size: 0 });
      await store.transaction((tx) => tx.insertFile(f));
      await Promise.all(Array.from({ length: 12 }, () => store.transaction(async (tx) => {
        const current = await tx.getFile(f.id, 'update');
        await new Promise((r) => setTimeout(r, 2));
        await tx.updateFile(f.id, { size: current!.size + 1 });
      })));
      expect((await store.read.getFile(f.id))!.size).toBe(12);
    });

    it('gives concurrent appends distinct, increasing sequence numbers, all readable in order', async () => {
      const before = await store.lastEventSeq();
      const seqs = await Promise.all(Array.from({ length: 25 }, (_, i) => store.transaction(async (tx) => {
        await tx.insertFolder(folder(`ev-${i}-${id()}`, null));
        return tx.appendEvent({ type: 'folder.created', folder_id: String(i), data: { i } }, T0);
      })));
      expect(new Set(seqs).size).toBe(25);
      const read = (await store.eventsAfter(before, 100)).map((ev) => ev.seq);
      expect(read).toEqual([...seqs].sort((a, b) => a - b));
    });

    it('settles a uniqueness race: concurrent find-or-create under one parent makes one folder', async () => {
      const parent = folder('race-' + id(), null);
      await store.transaction((tx) => tx.insertFolder(parent));
      const ids = await Promise.all(Array.from({ length: 6 }, () => store.transaction(async (tx) => {
        const existing = await tx.findFolderByName(parent.id, 'contested');
        if (existing) return existing.id;
        const made = folder('contested', parent.id);
        await tx.insertFolder(made);
        return made.id;
      })));
      expect(new Set(ids).size).toBe(1);
      expect(await store.read.countChildren(parent.id)).toEqual({ files: 0, folders: 1 });
    });

    it('serialises folder-tree changes that take the tree lock', async () => {
      let inside = 0;
      let most = 0;
      await Promise.all(Array.from({ length: 5 }, () => store.transaction(async (tx) => {
        await tx.lockFolderTree();
        inside++;
        most = Math.max(most, inside);
        await new Promise((r) => setTimeout(r, 10));
        inside--;
      })));
      expect(most).toBe(1);
    });

    it('runs exclusive sections of one name one at a time, and of different names side by side', async () => {
      let inside = 0;
      let most = 0;
      const section = () => store.exclusive('same-name', async () => {
        inside++;
        most = Math.max(most, inside);
        await new Promise((r) => setTimeout(r, 15));
        inside--;
        return 'done';
      });
      expect(await Promise.all([section(), section(), section()])).toEqual(['done', 'done', 'done']);
      expect(most).toBe(1);
      // A throwing section lets the next one in.
      await expect(store.exclusive('same-name', async () => { throw new Error('inside'); })).rejects.toThrow('inside');
      expect(await section()).toBe('done');
      const both = await Promise.race([
        Promise.all([store.exclusive('a', () => new Promise((r) => setTimeout(() => r(1), 30))), store.exclusive('b', async () => 2)]),
        new Promise((r) => setTimeout(() => r('blocked'), 2000)),
      ]);
      expect(both).toEqual([1, 2]);
    });

    it('runs a tryExclusive of a name only when none is running, and says so at once', async () => {
      let release!: () => void;
      const held = store.tryExclusive('try-name', () => new Promise<string>((r) => { release = () => r('held'); }));
      await new Promise((r) => setTimeout(r, 20));
      expect(await store.tryExclusive('try-name', async () => 'second')).toEqual({ ran: false });
      expect(await store.tryExclusive('another-name', async () => 'side by side')).toEqual({ ran: true, value: 'side by side' });
      release();
      expect(await held).toEqual({ ran: true, value: 'held' });
      await expect(store.tryExclusive('try-name', async () => { throw new Error('inside'); })).rejects.toThrow('inside');
      expect(await store.tryExclusive('try-name', async () => 'after a throw')).toEqual({ ran: true, value: 'after a throw' });
    });

    it('keeps tus rows beside files: compare-and-set on their version, gone with their file', async () => {
      const f = file('tus.bin', null, { status: 'uploading', sha256: null, completed_at: null, grant_id: 'g-tus', size: 700 });
      await store.transaction(async (tx) => {
        await tx.insertFile(f);
        await tx.tus.insert({ file_id: f.id, kind: 'partial', metadata: null, concat: null, tail_key: null, tail_size: 0, next_tail_key: null, version: 0, joined: 0, created_at: T0, made_by: 'grant:g-tus' });
      });
      expect(await store.read.tus.partialBytesOfGrant('g-tus')).toBe(700);
      expect(await store.read.tus.update(f.id, 0, { tail_key: 'tus-tails/x/1', tail_size: 12 })).toBe(true);
      expect(await store.read.tus.update(f.id, 0, { tail_size: 99 })).toBe(false);
      expect(await store.read.tus.get(f.id)).toMatchObject({ version: 1, tail_key: 'tus-tails/x/1', tail_size: 12, kind: 'partial', made_by: 'grant:g-tus' });
      expect((await store.read.tus.ofFiles([f.id, 'nothing'])).map((t) => t.file_id)).toEqual([f.id]);
      await store.transaction((tx) => tx.deleteFiles([f.id]));
      expect(await store.read.tus.get(f.id)).toBeUndefined();
      expect(await store.read.tus.partialBytesOfGrant('g-tus')).toBe(0);
    });
  });
});

describe('PostgreSQL store: several origins', () => {
  it('lets one tryExclusive of a name run at a time across stores, answers the others at once, and lets go when a store dies', async () => {
    const url = await createDatabase();
    const [store, other] = await Promise.all([openPostgresStore(url), openPostgresStore(url)]);
    let third: MetadataStore | null = await openPostgresStore(url);
    try {
      let release = null as (() => void) | null;
      const held = store.tryExclusive('upload-x', () => new Promise<string>((r) => { release = () => r('first'); }));
      while (!release) await new Promise((r) => setTimeout(r, 10));
      expect(await other.tryExclusive('upload-x', async () => 'second')).toEqual({ ran: false });
      expect(await store.tryExclusive('upload-x', async () => 'again here')).toEqual({ ran: false });
      expect(await other.tryExclusive('upload-y', async () => 'other name')).toEqual({ ran: true, value: 'other name' });
      release?.();
      expect(await held).toEqual({ ran: true, value: 'first' });
      expect(await other.tryExclusive('upload-x', async () => 'now')).toEqual({ ran: true, value: 'now' });
      // A holder whose store closes (as an origin that stops) lets go.
      let entered = false as boolean;
      const orphan = third.tryExclusive('upload-z', () => new Promise(() => { entered = true; }));
      orphan.catch(() => {});
      while (!entered) await new Promise((r) => setTimeout(r, 10));
      expect(await store.tryExclusive('upload-z', async () => 1)).toEqual({ ran: false });
      await third.close();
      third = null;
      expect(await store.tryExclusive('upload-z', async () => 1)).toEqual({ ran: true, value: 1 });
    } finally {
      await Promise.all([store.close(), other.close(), third?.close()]);
    }
  });

  it('keeps exclusive sections and row locks apart across stores (origins) on one database', async () => {
    const url = await createDatabase();
    const [store, other] = await Promise.all([openPostgresStore(url), openPostgresStore(url)]);
    try {
      const log: string[] = [];
      const section = (s: MetadataStore, who: string) => s.exclusive('shared', async () => {
        log.push(`${who}+`);
        await new Promise((r) => setTimeout(r, 20));
        log.push(`${who}-`);
      });
      await Promise.all([section(store, 'a'), section(other, 'b'), section(store, 'c'), section(other, 'd')]);
      expect(log.length).toBe(8);
      for (let i = 0; i < log.length; i += 2) expect(log[i]!.slice(0, 1)).toBe(log[i + 1]!.slice(0, 1));
      // Row locks hold across stores too.
      const f = file('cross-counter', null, { size: 0 });
      await store.transaction((tx) => tx.insertFile(f));
      await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? store : other).transaction(async (tx) => {
        const current = await tx.getFile(f.id, 'update');
        await new Promise((r) => setTimeout(r, 2));
        await tx.updateFile(f.id, { size: current!.size + 1 });
      })));
      expect((await other.read.getFile(f.id))!.size).toBe(8);
    } finally {
      await Promise.all([store.close(), other.close()]);
    }
  });

  it('migrates once when several origins open a fresh database at the same moment', async () => {
    const url = await createDatabase();
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore(url)));
    try {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client.query('select name from coffer_migrations order by name');
      await client.end();
      expect(rows.length).toBeGreaterThanOrEqual(3);
      expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
      await stores[0]!.transaction((tx) => tx.insertFolder(folder('after-migrate', null)));
      expect(await stores[3]!.read.findFolderByName(null, 'after-migrate')).toBeDefined();
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('is what COFFER_DATABASE_URL selects, for postgres:// and postgresql:// alike; other URLs are refused clearly', async () => {
    const url = await createDatabase();
    const dir = await mkdtemp(join(tmpdir(), 'coffer-open-'));
    try {
      for (const u of [url, url.replace(/^postgres:/, 'postgresql:')]) {
        const s = await openMetadataStore(dir, u);
        expect(s.dialect).toBe('postgres');
        await s.close();
      }
      await expect(openMetadataStore(dir, 'mysql://x@localhost/db')).rejects.toThrow(/PostgreSQL URL \(postgres:\/\//);
      const bad = new URL(url);
      bad.pathname = '/no_such_database';
      bad.password = 'secret-pw';
      const err = await openMetadataStore(dir, bad.toString()).then(() => null, (x: Error) => x);
      expect(err?.message).toMatch(/no_such_database/);
      expect(err?.message).not.toMatch(/secret-pw/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
