/**
 * What a test origin's blob store holds, looked at from outside the origin: the embedded store's
 * files under dataDir/blobs/, or, for an origin on S3 (`blobStore` set), the bucket itself.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, ListPartsCommand, NoSuchKey, NotFound,
} from '@aws-sdk/client-s3';
import { expect } from 'vitest';
import { poll } from '../kit/poll.js';
import { testS3Client } from './s3.js';

/** An origin as far as its stored bytes go (a TestOrigin). */
export interface StoreOf {
  dataDir: string;
  blobStore?: string;
}

/** The object key of a file (src/service/service.ts). */
const objectKey = (fileId: string): string => `files/${fileId}`;

function s3Of(o: StoreOf): { bucket: string; endpoint: string } | null {
  if (!o.blobStore) return null;
  const url = new URL(o.blobStore);
  return { bucket: url.hostname, endpoint: url.searchParams.get('endpoint')! };
}

async function withClient<T>(endpoint: string, fn: (client: ReturnType<typeof testS3Client>) => Promise<T>): Promise<T> {
  const client = testS3Client(endpoint);
  try {
    return await fn(client);
  } finally {
    client.destroy();
  }
}

async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * Reads a ready file's bytes straight from the store. In the embedded store
 * (dataDir/blobs/objects/files/<file_id>) the object is either one file, or a directory of its
 * parts `1`…`n` with a `manifest.json` ({size, sha256, parts: [sizes]}); both give back the whole bytes.
 * A plain data dir stands for an origin on the embedded store.
 */
export async function readStoredObject(origin: StoreOf | string, fileId: string): Promise<Buffer> {
  const o: StoreOf = typeof origin === 'string' ? { dataDir: origin } : origin;
  const s3 = s3Of(o);
  if (s3) {
    return withClient(s3.endpoint, async (client) => {
      const out = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: objectKey(fileId) }));
      return Buffer.from(await out.Body!.transformToByteArray());
    });
  }
  const path = join(o.dataDir, 'blobs', 'objects', 'files', fileId);
  const info = await stat(path);
  if (info.isFile()) return readFile(path);
  if (!info.isDirectory()) throw new Error(`${path} is neither a file nor a directory`);
  const manifest = JSON.parse(await readFile(join(path, 'manifest.json'), 'utf8')) as { size: number; parts: number[] };
  const parts = await Promise.all(manifest.parts.map((_, i) => readFile(join(path, String(i + 1)))));
  parts.forEach((p, i) => {
    if (p.length !== manifest.parts[i]) throw new Error(`${path}/${i + 1} holds ${p.length} bytes; its manifest says ${manifest.parts[i]}`);
  });
  const bytes = Buffer.concat(parts);
  if (bytes.length !== manifest.size) throw new Error(`${path} holds ${bytes.length} bytes; its manifest says ${manifest.size}`);
  return bytes;
}

/** Whether the store holds the object of a file. */
export async function storedObjectExists(o: StoreOf, fileId: string): Promise<boolean> {
  const s3 = s3Of(o);
  if (!s3) return stat(join(o.dataDir, 'blobs', 'objects', 'files', fileId)).then(() => true, () => false);
  return withClient(s3.endpoint, async (client) => {
    try {
      await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: objectKey(fileId) }));
      return true;
    } catch (err) {
      if (err instanceof NotFound || err instanceof NoSuchKey || (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
      throw err;
    }
  });
}

/** The file ids whose objects the store holds. */
export async function storedObjectIds(o: StoreOf): Promise<string[]> {
  const s3 = s3Of(o);
  if (!s3) return listDir(join(o.dataDir, 'blobs', 'objects', 'files'));
  return withClient(s3.endpoint, async (client) => {
    const out = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'files/' }));
    return (out.Contents ?? []).map((c) => c.Key!.slice('files/'.length));
  });
}

/** The multipart uploads the store still holds open. */
export async function openUploadIds(o: StoreOf): Promise<string[]> {
  const s3 = s3Of(o);
  if (!s3) return listDir(join(o.dataDir, 'blobs', 'multipart'));
  return withClient(s3.endpoint, async (client) => {
    const out = await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
    return (out.Uploads ?? []).map((u) => u.UploadId!);
  });
}

/**
 * What the store holds of an open upload's parts: the embedded store's files in
 * blobs/multipart/<uploadId> (every stored version of a part), or the parts S3 lists
 * (ListParts); [] once the upload is gone.
 */
export async function storedParts(o: StoreOf, uploadId: string): Promise<string[]> {
  const s3 = s3Of(o);
  if (!s3) return listDir(join(o.dataDir, 'blobs', 'multipart', uploadId));
  return withClient(s3.endpoint, async (client) => {
    const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
    const upload = (uploads.Uploads ?? []).find((u) => u.UploadId === uploadId);
    if (!upload) return [];
    const out = await client.send(new ListPartsCommand({ Bucket: s3.bucket, Key: upload.Key!, UploadId: uploadId }));
    return (out.Parts ?? []).map((p) => String(p.PartNumber));
  });
}

/** Waits until the blob store no longer holds `what`, then asserts it. */
export async function expectGone(what: string, held: () => Promise<boolean>, ms = 3000): Promise<void> {
  await poll(async () => !(await held()), { timeoutMs: ms, intervalMs: 20 });
  expect(await held(), `${what} should be gone`).toBe(false);
}

/** Whether the store still holds an open upload: its blobs/multipart/<uploadId> dir, or S3's multipart upload. */
export async function uploadHeld(o: StoreOf, uploadId: string): Promise<boolean> {
  if (!s3Of(o)) return stat(join(o.dataDir, 'blobs', 'multipart', uploadId)).then(() => true, () => false);
  return (await openUploadIds(o)).includes(uploadId);
}
