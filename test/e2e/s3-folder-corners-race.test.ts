/**
 * Writes racing a recursive delete of the folder they go in (docs/s3.md, "Keys and folders"):
 * a PutObject or UploadPart whose body is held open between its pieces (a CopyObject held at
 * its part's start) while the folder, or its bucket, is deleted through the programmatic
 * interface. The write fails as S3 would fail it (NoSuchBucket when the bucket went,
 * OperationAborted when a folder in it went, NoSuchUpload for a part of an upload gone with its
 * folder; never NoSuchKey for a write), and nothing of it is left: no object, no folder made
 * again, no open upload, no stored bytes.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, test } from 'vitest';
import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateMultipartUploadCommand, GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command,
  PutObjectCommand, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { expectS3Error, folderAt } from '../helpers/s3-api.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';
import { expectGone, storedObjectIds, uploadHeld } from '../helpers/stored-object.js';
import type { OriginStores } from '../../src/start/origin.js';
import { waitFor } from '../kit/poll.js';

/** Blob store uploads with a part open: the server is reading that part's body, which cannot end before the test ends it. */
const receiving = new Set<string>();
/** Blob store uploads whose parts are being joined (a completion). */
const joining = new Set<string>();
/** While set, a part opened or a join waits for it before its bytes flow (a copy, whose body the test does not hold). */
let gate: Promise<void> | null = null;

/** The blob store, telling `receiving` which uploads have a part open. */
const watchParts = ({ meta, blobs }: OriginStores): OriginStores => ({
  meta,
  blobs: new Proxy(blobs, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      const fn = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
      if (prop === 'completeMultipart') {
        return async (key: string, uploadId: string, ...rest: unknown[]) => {
          joining.add(uploadId);
          await gate;
          return fn(key, uploadId, ...rest);
        };
      }
      if (prop !== 'openPart') return fn;
      return async (key: string, uploadId: string, ...rest: unknown[]) => {
        const writer = await fn(key, uploadId, ...rest);
        receiving.add(uploadId);
        await gate;
        return writer;
      };
    },
  }),
});

const t = useS3Fixture('fr', { origin: { wrapStores: watchParts } });

/** The upload open in a folder, once the server reads its body into a part of the store. */
async function receivingIn(folderId: string): Promise<{ fileId: string; blobUpload: string }> {
  let found: { fileId: string; blobUpload: string } | undefined;
  await waitFor(async () => {
    const open = (await t.o.origin.stores.meta.read.filesInFolders([folderId])).find((f) => f.status === 'uploading' && receiving.has(f.upload_id!));
    found = open && { fileId: open.id, blobUpload: open.upload_id! };
    return found !== undefined;
  }, { timeoutMs: 20_000, what: 'the server to read the body into the store' });
  return found!;
}

/** A PutObject of ten bytes, its body held open after the first five. */
function heldPut(Bucket: string, Key: string) {
  const body = new PassThrough();
  const answer = t.s3.send(new PutObjectCommand({ Bucket, Key, Body: body, ContentLength: 10 }));
  answer.catch(() => {});
  body.write('12345');
  return { answer, finish: () => body.end('67890') };
}

const put = (Bucket: string, Key: string, Body: string) => t.s3.send(new PutObjectCommand({ Bucket, Key, Body }));
const keysOf = async (Bucket: string) => ((await t.s3.send(new ListObjectsV2Command({ Bucket }))).Contents ?? []).map((c) => c.Key);
const folderNames = async (id: string) =>
  (await t.o.post('/collections/list', { folder_id: id, limit: 1000 })).body.folders.map((f: { name: string }) => f.name);
const deleteFolder = async (folder_id: string) => expect((await t.o.post('/collections/folder/delete', { folder_id, recursive: true })).status).toBe(200);

describe('PutObject racing a recursive folder delete', () => {
  test('the folder "a" deleted while "a/x" streams in: 409 OperationAborted; the bucket keeps no "a/x", no folder "a", and no bytes of it', async () => {
    const b = await t.newBucket(['a/keep', 'other']);
    const a = await folderAt(t.o, `${b}/a`);
    const put = heldPut(b, 'a/x');
    const open = await receivingIn(a);
    await deleteFolder(a);
    put.finish();
    await expectS3Error(put.answer, 409, 'OperationAborted');
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'a/x' })), 404, 'NoSuchKey');
    expect([await keysOf(b), await folderNames(await folderAt(t.o, b))]).toEqual([['other'], []]);
    await expectGone('the upload', () => uploadHeld(t.o, open.blobUpload));
    expect(await storedObjectIds(t.o)).not.toContain(open.fileId);
    // Sent again, it makes the folder again and is stored.
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'a/x', Body: 'again' }));
    expect(await (await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'a/x' }))).Body!.transformToString()).toBe('again');
  });

  test('the folder "a" deleted while the object "a/" (key ending in "/") streams in: OperationAborted, and no "a/" or "a" left', async () => {
    const b = await t.newBucket(['a/keep']);
    const a = await folderAt(t.o, `${b}/a`);
    const put = heldPut(b, 'a/');
    await receivingIn(a);
    await deleteFolder(a);
    put.finish();
    await expectS3Error(put.answer, 409, 'OperationAborted');
    expect([await keysOf(b), await folderNames(await folderAt(t.o, b))]).toEqual([[], []]);
  });

  test('the bucket deleted while "a/x" or a key at its top streams in: 404 NoSuchBucket, and the bucket stays gone', async () => {
    for (const Key of ['a/x', 'top.txt']) {
      const b = await t.newBucket(['a/keep']);
      const bucketId = await folderAt(t.o, b);
      const put = heldPut(b, Key);
      await receivingIn(Key === 'top.txt' ? bucketId : await folderAt(t.o, `${b}/a`));
      await deleteFolder(bucketId);
      put.finish();
      await expectS3Error(put.answer, 404, 'NoSuchBucket');
      await expectS3Error(t.s3.send(new ListObjectsV2Command({ Bucket: b })), 404, 'NoSuchBucket');
    }
  });
});

describe('CopyObject racing a recursive folder delete', () => {
  test('the folder "g" deleted while a copy into "g/" and "g/c" is being stored: OperationAborted, nothing left in "g"', async () => {
    const b = await t.newBucket(['src.txt', 'g/other']);
    for (const Key of ['g/', 'g/c']) {
      const g = await folderAt(t.o, `${b}/g`);
      let release = () => {};
      gate = new Promise((r) => (release = r));
      try {
        const copy = t.s3.send(new CopyObjectCommand({ Bucket: b, Key, CopySource: `${b}/src.txt` }));
        copy.catch(() => {});
        await receivingIn(g);
        await deleteFolder(g);
        release();
        await expectS3Error(copy, 409, 'OperationAborted');
      } finally {
        gate = null;
        release();
      }
      expect([await keysOf(b), await folderNames(await folderAt(t.o, b))]).toEqual([['src.txt'], []]);
      await put(b, 'g/other', 'again');
    }
  });
});

describe('multipart uploads racing a recursive folder delete', () => {
  test('UploadPart streaming while the folder "a" goes: NoSuchUpload once the upload is aborted; CompleteMultipartUpload too; no upload or object left', async () => {
    const b = await t.newBucket(['a/keep']);
    const a = await folderAt(t.o, `${b}/a`);
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'a/m' }));
    const first = await t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'a/m', UploadId, PartNumber: 1, Body: Buffer.alloc(5 << 20, 1) }));
    const open = (await t.o.origin.stores.meta.read.getFile(UploadId!))!.upload_id!;
    receiving.delete(open);
    const body = new PassThrough();
    const part = t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'a/m', UploadId, PartNumber: 2, Body: body, ContentLength: 10 }));
    part.catch(() => {});
    body.write('12345');
    await waitFor(() => receiving.has(open), { timeoutMs: 20_000, what: 'the server to read the part into the store' });
    await deleteFolder(a);
    await expectGone('the upload', () => uploadHeld(t.o, open));
    body.end('67890');
    await expectS3Error(part, 404, 'NoSuchUpload');
    await expectS3Error(t.s3.send(new CompleteMultipartUploadCommand({
      Bucket: b, Key: 'a/m', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: first.ETag }] },
    })), 404, 'NoSuchUpload');
    expect((await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b }))).Uploads ?? []).toEqual([]);
    expect([await keysOf(b), await folderNames(await folderAt(t.o, b))]).toEqual([[], []]);
  });

  test('CompleteMultipartUpload joining while the folder "a", or the bucket, goes: NoSuchUpload, or NoSuchBucket; no object is left', async () => {
    for (const what of ['folder', 'bucket'] as const) {
      const b = await t.newBucket(['a/keep']);
      const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'a/m' }));
      const part = await t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'a/m', UploadId, PartNumber: 1, Body: 'joined' }));
      const blobUpload = (await t.o.origin.stores.meta.read.getFile(UploadId!))!.upload_id!;
      let release = () => {};
      gate = new Promise((r) => (release = r));
      try {
        const done = t.s3.send(new CompleteMultipartUploadCommand({ Bucket: b, Key: 'a/m', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
        done.catch(() => {});
        await waitFor(() => joining.has(blobUpload), { timeoutMs: 20_000, what: 'the join to start' });
        await deleteFolder(await folderAt(t.o, what === 'folder' ? `${b}/a` : b));
        release();
        await expectS3Error(done, 404, what === 'folder' ? 'NoSuchUpload' : 'NoSuchBucket');
      } finally {
        gate = null;
        release();
      }
      await expectGone('the joined object', async () => (await storedObjectIds(t.o)).includes(UploadId!));
      if (what === 'folder') expect([await keysOf(b), await folderNames(await folderAt(t.o, b))]).toEqual([[], []]);
    }
  });

  test('UploadPart and CompleteMultipartUpload after the bucket went with its uploads: NoSuchBucket', async () => {
    const b = await t.newBucket();
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'a/m' }));
    const first = await t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'a/m', UploadId, PartNumber: 1, Body: 'one' }));
    await deleteFolder(await folderAt(t.o, b));
    await expectS3Error(t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'a/m', UploadId, PartNumber: 2, Body: 'two' })), 404, 'NoSuchBucket');
    await expectS3Error(t.s3.send(new CompleteMultipartUploadCommand({
      Bucket: b, Key: 'a/m', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: first.ETag }] },
    })), 404, 'NoSuchBucket');
  });
});
