/**
 * The second judgement of an S3 conditional write (service/uploads/s3-conditions.ts): a
 * CompleteMultipartUpload with If-None-Match: * whose condition held before its parts were
 * joined, while a write without condition made the key's object before its commit, is 409
 * ConditionalRequestConflict (S3: initiate another upload and send the parts again); the
 * upload is gone and the object is the other write's. The blob store's join is held open
 * so the other write lands in exactly that window.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openBlobStore, openMetadataStore } from '../../src/adapters/open.js';
import { CofferService } from '../../src/service/service.js';
import type { BlobStore, MetadataStore } from '../../src/core/ports.js';
import { ROOT_CALLER } from '../../src/core/access.js';
import { writeCondition } from '../../src/s3/conditional-writes.js';
import type { S3Request } from '../../src/s3/context.js';
import type { Located } from '../../src/service/paths.js';

let dir = '';
let meta: MetadataStore;
let service: CofferService;
/** Resolves the held join; set while one is held. */
let held: { key: string; reached: () => void; release: Promise<void> } | null = null;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coffer-s3-cond-'));
  meta = await openMetadataStore(dir, undefined);
  const real = await openBlobStore(dir, undefined);
  const blobs = new Proxy(real, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== 'completeMultipart') return typeof value === 'function' ? value.bind(target) : value;
      return async (key: string, ...rest: unknown[]) => {
        if (held && held.key === key) {
          held.reached();
          await held.release;
        }
        return (value as (...a: unknown[]) => unknown).call(target, key, ...rest);
      };
    },
  }) as BlobStore;
  service = new CofferService(meta, blobs, { cdnUrl: 'http://cdn.test', signingSecrets: ['s'], uploadTtlSeconds: 3600, maxFileSize: 1 << 24, rootKey: 'root-key-for-test' });
});
afterAll(async () => {
  await meta?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
async function* once(b: Buffer) {
  yield b;
}

test('If-None-Match: * that held before the join and not at the commit: 409 ConditionalRequestConflict, the upload removed, the other write\'s object kept', async () => {
  const sight = await service.paths.sight(ROOT_CALLER);
  const root: Located = { folder: null, place: 'inside' };
  const at = await service.paths.ensureFolders(ROOT_CALLER, sight, root, ['bucket']);
  const upload = await service.multipart.create(ROOT_CALLER, { at, bucketId: at.folder!.id, key: 'k.bin', name: 'k.bin', contentType: 'application/octet-stream', visibility: 'Public', meta: null });
  const u = { uploadId: upload.id, bucketId: at.folder!.id, key: 'k.bin' };
  const mine = randomBytes(1000);
  const etag = await service.multipart.writePart(ROOT_CALLER, u, 1, mine.length, once(mine), () => md5(mine));
  const condition = writeCondition({ headers: new Map([['if-none-match', '*']]), key: 'k.bin' } as unknown as S3Request)!;

  let reached!: () => void;
  const atJoin = new Promise<void>((resolve) => (reached = resolve));
  let release!: () => void;
  held = { key: upload.blob_key, reached, release: new Promise<void>((resolve) => (release = resolve)) };
  const completing = service.multipart.complete(ROOT_CALLER, u, [{ partNumber: 1, etag }], condition).then(() => 'ok', (err: { status?: number; code?: string }) => `${err.status} ${err.code}`);
  await atJoin;
  // The condition held (no object); now another write, without condition, makes one.
  const theirs = Buffer.from('written meanwhile');
  await service.objects.put(ROOT_CALLER, { at, name: 'k.bin', contentType: 'application/octet-stream', visibility: 'Public', meta: null, size: theirs.length, body: once(theirs), etag: () => md5(theirs) });
  release();
  expect(await completing).toBe('409 ConditionalRequestConflict');
  held = null;

  const named = await meta.read.s3.filesNamed(at.folder!.id, 'k.bin');
  expect(named.map((f) => f.s3_etag)).toEqual([md5(theirs)]);
  expect(await meta.read.getFile(upload.id)).toBeUndefined();
  expect(await meta.read.s3.getUpload(upload.id)).toBeUndefined();
});
