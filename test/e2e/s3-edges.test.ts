/**
 * The S3 interface and the delivery network (contract §12): a PUT, a completed multipart upload
 * or a copy over an existing key, a DeleteObject and a DeleteObjects each make the old bytes 404
 * at every one of three edges before the call answers, and a new object is at every edge as a
 * HIT once its PUT answered.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateBucketCommand, CreateMultipartUploadCommand, DeleteObjectCommand, DeleteObjectsCommand,
  PutObjectCommand, UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { RunningEdge } from '../../src/edge/server.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { filesIn, folderAt } from '../helpers/s3-api.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const t = useS3Fixture('e');
const running: TestEdge[] = [];
const edges: RunningEdge[] = [];

beforeAll(async () => {
  for (let i = 0; i < 3; i++) {
    running.push(await startTestEdge(t.o));
    edges.push(running.at(-1)!.edge);
  }
});
// After hooks run last-registered first: the edges close before the fixture's origin.
afterAll(async () => {
  await Promise.all(running.map((e) => e.close()));
});

/** What each edge answers for a file's delivery URL: status, X-Cache, and the body or the error code. */
async function atEdges(fileId: string): Promise<Array<{ status: number; cache: string | null; body: string }>> {
  return Promise.all(edges.map(async (e) => {
    const res = await fetch(`${e.url}/files/${fileId}`);
    return { status: res.status, cache: res.headers.get('x-cache'), body: res.status === 200 ? await res.text() : (await res.json()).error.code };
  }));
}
const everywhere = (status: 200 | 404, body = '') => Array(3).fill(status === 200 ? { status, cache: 'HIT', body } : { status, cache: null, body: 'not_found' });
/** The id of the one file a key names (by the programmatic interface). */
async function idOf(bucket: string, folder: string | null, name: string): Promise<string> {
  const files = (await filesIn(t.o, await folderAt(t.o, folder ? `${bucket}/${folder}` : bucket))).filter((f) => f.name === name);
  expect(files).toHaveLength(1);
  return files[0]!.file_id;
}

/** A new Public bucket: its files are delivered without a signed link. */
async function publicBucket(): Promise<string> {
  const b = `e-${randomBytes(5).toString('hex')}`;
  await t.s3.send(new CreateBucketCommand({ Bucket: b, ACL: 'public-read' }));
  return b;
}

describe('S3 writes and deletes at every edge', () => {
  test('a replacing PUT, multipart completion and copy purge the old bytes before answering; the new ones are HITs', async () => {
    const b = await publicBucket();
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'site/v.txt', Body: 'one' }));
    const first = await idOf(b, 'site', 'v.txt');
    expect(await atEdges(first)).toEqual(everywhere(200, 'one'));

    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'site/v.txt', Body: 'two' }));
    const second = await idOf(b, 'site', 'v.txt');
    expect(await atEdges(first)).toEqual(everywhere(404));
    expect(await atEdges(second)).toEqual(everywhere(200, 'two'));

    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'site/v.txt' }));
    const part = await t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'site/v.txt', UploadId, PartNumber: 1, Body: 'three' }));
    await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: b, Key: 'site/v.txt', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
    expect(await idOf(b, 'site', 'v.txt')).toBe(UploadId);
    expect(await atEdges(second)).toEqual(everywhere(404));
    expect(await atEdges(UploadId!)).toEqual(everywhere(200, 'three'));

    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'other.txt', Body: 'four' }));
    await t.s3.send(new CopyObjectCommand({ Bucket: b, Key: 'site/v.txt', CopySource: `${b}/other.txt` }));
    const copied = await idOf(b, 'site', 'v.txt');
    expect(await atEdges(UploadId!)).toEqual(everywhere(404));
    expect(await atEdges(copied)).toEqual(everywhere(200, 'four'));
  });

  test('DeleteObject and DeleteObjects make the bytes 404 at every edge before answering', async () => {
    const b = await publicBucket();
    for (const Key of ['a.txt', 'd/b.txt', 'd/c.txt']) await t.s3.send(new PutObjectCommand({ Bucket: b, Key, Body: Key }));
    const a = await idOf(b, null, 'a.txt');
    const [bId, cId] = [await idOf(b, 'd', 'b.txt'), await idOf(b, 'd', 'c.txt')];
    expect(await atEdges(a)).toEqual(everywhere(200, 'a.txt'));
    await t.s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'a.txt' }));
    expect(await atEdges(a)).toEqual(everywhere(404));
    expect(await atEdges(cId)).toEqual(everywhere(200, 'd/c.txt'));
    await t.s3.send(new DeleteObjectsCommand({ Bucket: b, Delete: { Objects: [{ Key: 'd/b.txt' }, { Key: 'd/c.txt' }] } }));
    expect(await atEdges(bId)).toEqual(everywhere(404));
    expect(await atEdges(cId)).toEqual(everywhere(404));
  });

  test('the object "a/" (the file of the empty name in "a") is delivered by its id at every edge; replaced or deleted, its bytes are 404 everywhere', async () => {
    const b = await publicBucket();
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'a/', Body: 'slash one' }));
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'a/x.txt', Body: 'inside' }));
    const first = await idOf(b, 'a', '');
    expect(await atEdges(first)).toEqual(everywhere(200, 'slash one'));
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'a/', Body: 'slash two' }));
    const second = await idOf(b, 'a', '');
    expect(await atEdges(first)).toEqual(everywhere(404));
    expect(await atEdges(second)).toEqual(everywhere(200, 'slash two'));
    await t.s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'a/' }));
    expect(await atEdges(second)).toEqual(everywhere(404));
    expect(await atEdges(await idOf(b, 'a', 'x.txt'))).toEqual(everywhere(200, 'inside'));
  });
});
