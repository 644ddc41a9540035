/**
 * S3 multipart uploads (contract §12) through @aws-sdk/client-s3 and @aws-sdk/lib-storage,
 * unchanged: Coffer's upload engine underneath (parts streamed to the blob store, SHA-256 on
 * completion, one file), S3's part rules and errors, UploadPartCopy, ListParts and
 * ListMultipartUploads.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand, HeadObjectCommand,
  ListMultipartUploadsCommand, ListObjectsV2Command, ListPartsCommand, PutObjectCommand, UploadPartCommand, UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { expectS3Error, filesIn, folderAt } from '../helpers/s3-api.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const MiB = 1024 * 1024;
const t = useS3Fixture('m');
const md5 = (b: Buffer) => createHash('md5').update(b).digest();
const multipartEtag = (parts: Buffer[]) => `"${createHash('md5').update(Buffer.concat(parts.map(md5))).digest('hex')}-${parts.length}"`;
const bytesOf = async (out: { Body?: unknown }) => Buffer.from(await (out.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());

describe('multipart uploads', () => {
  test('lib-storage uploads a file in parallel parts: one file, S3\'s multipart ETag, the SHA-256 of all its bytes', async () => {
    const b = await t.newBucket();
    const body = randomBytes(11 * MiB + 123);
    const upload = new Upload({ client: t.s3, params: { Bucket: b, Key: 'videos/clip.mp4', Body: body, ContentType: 'video/mp4' }, partSize: 5 * MiB, queueSize: 4 });
    const done = await upload.done();
    const parts = [0, 1, 2].map((i) => body.subarray(i * 5 * MiB, (i + 1) * 5 * MiB));
    expect(done.ETag).toBe(multipartEtag(parts));
    const files = await filesIn(t.o, await folderAt(t.o, `${b}/videos`));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatchObject({ name: 'clip.mp4', size: body.length, content_type: 'video/mp4' });
    const record = await t.o.post('/collections/file/get', { file_id: files[0]!.file_id });
    expect(record.body).toMatchObject({ status: 'ready', file_type: 'video', sha256: createHash('sha256').update(body).digest('hex') });
    const got = await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'videos/clip.mp4' }));
    expect(got.ETag).toBe(done.ETag);
    expect((await bytesOf(got)).equals(body)).toBe(true);
    expect((await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b }))).Uploads ?? []).toEqual([]);
  });

  test('parts in any order, sent again, listed, and a chosen subset joined; the upload is invisible until complete', async () => {
    const b = await t.newBucket();
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'a/b.bin', ContentType: 'application/x-b', Metadata: { k: 'v' } }));
    const parts = [randomBytes(5 * MiB), randomBytes(2000), randomBytes(1000)];
    const etags: string[] = [];
    for (const n of [3, 1, 2]) {
      etags[n - 1] = (await t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'a/b.bin', UploadId, PartNumber: n, Body: parts[n - 1] }))).ETag!;
    }
    expect(etags).toEqual(parts.map((p) => `"${md5(p).toString('hex')}"`));
    // Part 2 again, with other bytes: it replaces the first version.
    parts[1] = randomBytes(3000);
    etags[1] = (await t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'a/b.bin', UploadId, PartNumber: 2, Body: parts[1] }))).ETag!;
    const listed = await t.s3.send(new ListPartsCommand({ Bucket: b, Key: 'a/b.bin', UploadId }));
    expect(listed.Parts!.map((p) => [p.PartNumber, p.ETag, p.Size])).toEqual(parts.map((p, i) => [i + 1, etags[i], p.length]));
    const uploads = await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b }));
    expect(uploads.Uploads!.map((u) => [u.Key, u.UploadId])).toEqual([['a/b.bin', UploadId]]);
    expect((await t.s3.send(new ListObjectsV2Command({ Bucket: b }))).KeyCount).toBe(0);
    // The JSON interface does not complete an S3 upload.
    const json = await t.o.post('/collections/upload/complete-upload', { file_id: UploadId });
    expect([json.status, json.body.error.code]).toEqual([409, 's3_upload']);

    // Parts 1 and 3 only: part 2 is left out.
    const done = await t.s3.send(new CompleteMultipartUploadCommand({
      Bucket: b, Key: 'a/b.bin', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: etags[0] }, { PartNumber: 3, ETag: etags[2] }] },
    }));
    expect(done.ETag).toBe(multipartEtag([parts[0]!, parts[2]!]));
    const got = await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'a/b.bin' }));
    expect((await bytesOf(got)).equals(Buffer.concat([parts[0]!, parts[2]!]))).toBe(true);
    expect(got).toMatchObject({ ContentType: 'application/x-b', Metadata: { k: 'v' }, ContentLength: 5 * MiB + 1000 });
    // A repeated completion answers the same object.
    const again = await t.s3.send(new CompleteMultipartUploadCommand({
      Bucket: b, Key: 'a/b.bin', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: etags[0] }, { PartNumber: 3, ETag: etags[2] }] },
    }));
    expect(again.ETag).toBe(done.ETag);
    await expectS3Error(t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'a/b.bin', UploadId, PartNumber: 4, Body: 'late' })), 404, 'NoSuchUpload');
  });

  test('S3\'s part rules: EntityTooSmall, InvalidPart, InvalidPartOrder, InvalidArgument, NoSuchUpload after an abort', async () => {
    const b = await t.newBucket();
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'rules.bin' }));
    const small = randomBytes(1 * MiB);
    const big = randomBytes(5 * MiB);
    const e1 = (await t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'rules.bin', UploadId, PartNumber: 1, Body: small }))).ETag!;
    const e2 = (await t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'rules.bin', UploadId, PartNumber: 2, Body: big }))).ETag!;
    const complete = (Parts: Array<{ PartNumber: number; ETag: string }>) => t.s3.send(new CompleteMultipartUploadCommand({ Bucket: b, Key: 'rules.bin', UploadId, MultipartUpload: { Parts } }));
    await expectS3Error(complete([{ PartNumber: 1, ETag: e1 }, { PartNumber: 2, ETag: e2 }]), 400, 'EntityTooSmall');
    await expectS3Error(complete([{ PartNumber: 2, ETag: e1 }]), 400, 'InvalidPart');
    await expectS3Error(complete([{ PartNumber: 7, ETag: e1 }]), 400, 'InvalidPart');
    await expectS3Error(complete([{ PartNumber: 2, ETag: e2 }, { PartNumber: 1, ETag: e1 }]), 400, 'InvalidPartOrder');
    await expectS3Error(t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'rules.bin', UploadId, PartNumber: 10_001, Body: 'x' })), 400, 'InvalidArgument');
    await expectS3Error(t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'other.bin', UploadId, PartNumber: 1, Body: 'x' })), 404, 'NoSuchUpload');
    // A part alone may be small: it is the last.
    const one = await complete([{ PartNumber: 1, ETag: e1 }]);
    expect(one.ETag).toBe(multipartEtag([small]));

    const second = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'aborted.bin' }));
    await t.s3.send(new UploadPartCommand({ Bucket: b, Key: 'aborted.bin', UploadId: second.UploadId, PartNumber: 1, Body: big }));
    await t.s3.send(new AbortMultipartUploadCommand({ Bucket: b, Key: 'aborted.bin', UploadId: second.UploadId }));
    await expectS3Error(t.s3.send(new ListPartsCommand({ Bucket: b, Key: 'aborted.bin', UploadId: second.UploadId })), 404, 'NoSuchUpload');
    await expectS3Error(t.s3.send(new AbortMultipartUploadCommand({ Bucket: b, Key: 'aborted.bin', UploadId: second.UploadId })), 404, 'NoSuchUpload');
    await expectS3Error(t.s3.send(new HeadObjectCommand({ Bucket: b, Key: 'aborted.bin' })), 404, 'NotFound');
    expect((await t.o.post('/collections/file/get', { file_id: second.UploadId })).status).toBe(404);
  });

  test('UploadPartCopy takes parts from ranges of existing objects', async () => {
    const b = await t.newBucket();
    const source = randomBytes(5 * MiB + 4321);
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'src.bin', Body: source }));
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: 'copy/dst.bin' }));
    const ranges = [[0, 5 * MiB - 1], [5 * MiB, 5 * MiB + 4320]] as const;
    const etags: string[] = [];
    for (const [i, [start, end]] of ranges.entries()) {
      const out = await t.s3.send(new UploadPartCopyCommand({ Bucket: b, Key: 'copy/dst.bin', UploadId, PartNumber: i + 1, CopySource: `${b}/src.bin`, CopySourceRange: `bytes=${start}-${end}` }));
      etags.push(out.CopyPartResult!.ETag!);
    }
    expect(etags).toEqual(ranges.map(([start, end]) => `"${md5(source.subarray(start, end + 1)).toString('hex')}"`));
    await expectS3Error(t.s3.send(new UploadPartCopyCommand({ Bucket: b, Key: 'copy/dst.bin', UploadId, PartNumber: 3, CopySource: `${b}/src.bin`, CopySourceRange: `bytes=0-${5 * MiB + 4321}` })), 416, 'InvalidRange');
    await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: b, Key: 'copy/dst.bin', UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) } }));
    expect((await bytesOf(await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'copy/dst.bin' })))).equals(source)).toBe(true);
  });

  test('ListMultipartUploads pages by key and upload id, with a prefix and a delimiter', async () => {
    const b = await t.newBucket();
    const made: Array<[string, string]> = [];
    for (const Key of ['x/1', 'x/2', 'y/1', 'z']) made.push([Key, (await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key }))).UploadId!]);
    const page1 = await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b, MaxUploads: 2 }));
    expect(page1.IsTruncated).toBe(true);
    expect(page1.Uploads!.map((u) => u.Key)).toEqual(['x/1', 'x/2']);
    const page2 = await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b, MaxUploads: 2, KeyMarker: page1.NextKeyMarker, UploadIdMarker: page1.NextUploadIdMarker }));
    expect(page2.Uploads!.map((u) => [u.Key, u.UploadId])).toEqual(made.slice(2));
    const grouped = await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b, Delimiter: '/' }));
    expect(grouped.CommonPrefixes!.map((p) => p.Prefix)).toEqual(['x/', 'y/']);
    expect(grouped.Uploads!.map((u) => u.Key)).toEqual(['z']);
    expect((await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b, Prefix: 'x/' }))).Uploads!.map((u) => u.Key)).toEqual(['x/1', 'x/2']);
  });
});
