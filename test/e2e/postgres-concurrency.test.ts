/**
 * Issue 6 point 1: two origins on one PostgreSQL database (and one blob directory) completing,
 * deleting and aborting the same file at once end in one consistent state: no ready file
 * without its bytes, no object or upload left behind, every answer one the contract allows.
 * The same races inside one origin on the embedded store must end as well.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobStore } from '../../src/core/ports.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { createDatabase } from '../helpers/postgres.js';
import { sha256 } from '../kit/index.js';

const CHUNK = 5 * 1024 * 1024;

const setups: Array<[string, 'postgres' | 'sqlite']> = [
  ['two origins on one PostgreSQL database', 'postgres'],
  ['one origin on the embedded store', 'sqlite'],
];

describe.each(setups)('%s', (_title, engine) => {
  let a: TestOrigin;
  let b: TestOrigin;
  let dataDir: string;
  /** Joins of parts, by either origin. */
  let joins = 0;

  beforeAll(async () => {
    // One data dir: the embedded blob store works across processes sharing its directory.
    dataDir = await mkdtemp(join(tmpdir(), 'coffer-two-origins-'));
    const settings = { COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: 'two-origins-key', COFFER_SIGNING_SECRET: 'two-origins-secret' };
    if (engine === 'postgres') {
      const databaseUrl = await createDatabase();
      [a, b] = await Promise.all([startTestOrigin(settings, { databaseUrl }), startTestOrigin(settings, { databaseUrl })]);
    } else {
      // SQLite belongs to one origin: both roles are played by it.
      a = b = await startTestOrigin(settings);
    }
    for (const o of new Set([a, b])) {
      const blobs = o.origin.stores.blobs as BlobStore;
      const join = blobs.completeMultipart.bind(blobs);
      blobs.completeMultipart = (...args) => {
        joins++;
        return join(...args);
      };
    }
  });

  afterAll(async () => {
    await Promise.all([...new Set([a, b])].map((o) => o?.close()));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const objectPath = (fileId: string) => join(dataDir, 'blobs', 'objects', 'files', fileId);
  const uploadPath = (uploadId: string) => join(dataDir, 'blobs', 'multipart', uploadId);

  async function initiate(o: TestOrigin, size: number): Promise<any> {
    const r = await o.post('/collections/upload/file', { name: 'race.bin', visibility: 'Public', size, file_type: 'other' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  }

  /** Sends every part, part n to origin n % 2 (any chunk to any origin), all at once. */
  async function sendParts(s: any, bytes: Buffer): Promise<void> {
    await Promise.all(Array.from({ length: s.part_count }, async (_, i) => {
      const n = i + 1;
      const o = n % 2 ? a : b;
      const body = bytes.subarray((n - 1) * s.chunk_size, n * s.chunk_size).toString('base64');
      const r = await o.post('/collections/upload/file-progress', { bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: n, body });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }));
  }

  async function readObject(o: TestOrigin, key: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of await o.origin.stores.blobs.read(key)) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  /** Waits until neither origin has blobs left to remove. */
  async function trashEmptied(): Promise<void> {
    const until = Date.now() + 5000;
    for (;;) {
      await Promise.all([a.origin.service.emptyTrash(), b.origin.service.emptyTrash()]);
      if ((await a.origin.stores.meta.pendingBlobDeletions(1)).length === 0) return;
      if (Date.now() > until) throw new Error('blobs still queued for deletion');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** The one state a file may end in: gone with nothing left, or ready and whole. */
  async function expectConsistent(s: any, bytes: Buffer): Promise<'gone' | 'ready'> {
    await trashEmptied();
    const [ga, gb] = await Promise.all([a.post('/collections/file/get', { file_id: s.fileId }), b.post('/collections/file/get', { file_id: s.fileId })]);
    expect(ga.status).toBe(gb.status);
    expect(await a.origin.stores.meta.read.listParts(s.fileId)).toEqual([]);
    expect(existsSync(uploadPath(s.uploadId)), 'the multipart upload is removed').toBe(false);
    if (ga.status === 404) {
      expect(ga.body.error.code).toBe('file_not_found');
      expect(existsSync(objectPath(s.fileId)), 'no object is left for a file that is gone').toBe(false);
      return 'gone';
    }
    expect(ga.status).toBe(200);
    expect(ga.body).toEqual(gb.body);
    expect(ga.body.status).toBe('ready');
    expect(ga.body.sha256).toBe(sha256(bytes));
    expect(sha256(await readObject(a, s.key))).toBe(sha256(bytes));
    expect(sha256(await readObject(b, s.key))).toBe(sha256(bytes));
    return 'ready';
  }

  it('takes the parts of one upload through both origins, and two completes at once join them once into one record', async () => {
    const bytes = randomBytes(2 * CHUNK + 12_345);
    const s = await initiate(a, bytes.length);
    await sendParts(s, bytes);
    const before = joins;
    const [ra, rb] = await Promise.all([a.post('/collections/upload/complete-upload', { file_id: s.fileId }), b.post('/collections/upload/complete-upload', { file_id: s.fileId })]);
    expect(ra.status, JSON.stringify(ra.body)).toBe(200);
    expect(rb.status, JSON.stringify(rb.body)).toBe(200);
    expect(ra.body).toEqual(rb.body);
    expect(ra.body.sha256).toBe(sha256(bytes));
    expect(ra.body.size).toBe(bytes.length);
    expect(joins - before).toBe(1);
    expect(await expectConsistent(s, bytes)).toBe('ready');
  });

  it('joins once however the two completes interleave (repeated)', async () => {
    for (let i = 0; i < 8; i++) {
      const bytes = randomBytes(1000 + i);
      const s = await initiate(i % 2 ? a : b, bytes.length);
      await sendParts(s, bytes);
      const before = joins;
      const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const [ra, rb] = await Promise.all([
        a.post('/collections/upload/complete-upload', { file_id: s.fileId }),
        delay(i % 3).then(() => b.post('/collections/upload/complete-upload', { file_id: s.fileId })),
      ]);
      expect([ra.status, rb.status]).toEqual([200, 200]);
      expect(ra.body).toEqual(rb.body);
      expect(joins - before).toBe(1);
      expect(await expectConsistent(s, bytes)).toBe('ready');
    }
  });

  it('answers two deletes at once with one 200 and one 404, and removes the object', async () => {
    for (let i = 0; i < 5; i++) {
      const bytes = randomBytes(3000);
      const s = await initiate(a, bytes.length);
      await sendParts(s, bytes);
      expect((await b.post('/collections/upload/complete-upload', { file_id: s.fileId })).status).toBe(200);
      const results = await Promise.all([a.post('/collections/file/delete', { file_id: s.fileId }), b.post('/collections/file/delete', { file_id: s.fileId })]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 404]);
      const lost = results.find((r) => r.status === 404)!;
      expect(lost.body.error.code).toBe('file_not_found');
      expect(results.find((r) => r.status === 200)!.body).toEqual({ file_id: s.fileId, deleted: true });
      expect(await expectConsistent(s, bytes)).toBe('gone');
    }
  });

  it('settles complete against delete or abort on the other origin, every time, in one consistent state', async () => {
    const outcomes = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      const bytes = randomBytes(i % 5 === 0 ? CHUNK + 777 : 2000 + i);
      const s = await initiate(a, bytes.length);
      await sendParts(s, bytes);
      const [completer, remover] = i % 2 ? [a, b] : [b, a];
      const abort = i % 4 === 3;
      const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const [done, removed] = await Promise.all([
        completer.post('/collections/upload/complete-upload', { file_id: s.fileId }),
        // From at once to after a typical complete: both sides win some.
        delay((i * 7) % 25).then(() => remover.post(abort ? '/collections/upload/abort' : '/collections/file/delete', { file_id: s.fileId })),
      ]);
      // Complete won (200, the right digest) or found the file gone (404); nothing else.
      expect([200, 404], JSON.stringify(done.body)).toContain(done.status);
      if (done.status === 200) expect(done.body.sha256).toBe(sha256(bytes));
      else expect(done.body.error.code).toBe('file_not_found');
      // A delete always finds the file; an abort finds it ready if complete won.
      if (!abort) expect(removed.status, JSON.stringify(removed.body)).toBe(200);
      else if (done.status === 200) expect([200, 409]).toContain(removed.status);
      else expect(removed.status).toBe(200);
      const state = await expectConsistent(s, bytes);
      if (state === 'ready') {
        // Only an abort that came too late leaves the file, and then it says so.
        expect(abort).toBe(true);
        expect(done.status).toBe(200);
        expect(removed.status).toBe(409);
        expect(removed.body.error.code).toBe('upload_completed');
      } else if (abort) {
        expect(done.status).toBe(404);
      }
      const key = `${abort ? 'abort' : 'delete'}:${done.status}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    // Which side wins depends on timing; the state is consistent either way.
    expect([...outcomes.values()].reduce((x, y) => x + y, 0)).toBe(20);
  });

  it('keeps one folder for two creates of the same name at once, and refuses the second', async () => {
    const results = await Promise.all([a, b, a, b].map((o) => o.post('/collections/folder/create', { name: 'contested', visibility: 'Public' })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('folder_exists');
  });

  it('deletes a folder while files are being started in it on the other origin: no file is left in a folder that is gone', async () => {
    for (let i = 0; i < 5; i++) {
      const folder = await a.post('/collections/folder/create', { name: `busy-${i}`, visibility: 'Public' });
      expect(folder.status).toBe(200);
      const id = folder.body.folder_id;
      const [starts, removed] = await Promise.all([
        Promise.all(Array.from({ length: 4 }, () => b.post('/collections/upload/file', { name: 'x.bin', visibility: 'Public', size: 10, file_type: 'other', folder_id: id }))),
        a.post('/collections/folder/delete', { folder_id: id, recursive: true }),
      ]);
      expect(removed.status, JSON.stringify(removed.body)).toBe(200);
      for (const r of starts) {
        expect([200, 404], JSON.stringify(r.body)).toContain(r.status);
        if (r.status === 404) expect(r.body.error.code).toBe('folder_not_found');
        // Started before the delete: the delete took it along.
        else expect((await a.post('/collections/upload/status', { file_id: r.body.fileId })).status).toBe(404);
      }
      expect((await b.post('/collections/folder/get', { folder_id: id })).status).toBe(404);
      await trashEmptied();
      for (const r of starts.filter((x) => x.status === 200)) expect(existsSync(uploadPath(r.body.uploadId))).toBe(false);
    }
  });
});
