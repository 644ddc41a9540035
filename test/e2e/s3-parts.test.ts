/**
 * Reading an object by its parts (contract §12; docs/s3.md), as S3 documents it: GetObject and
 * HeadObject with partNumber answer 206 with that part's bytes, Content-Range and
 * x-amz-mp-parts-count, parts of different sizes included; a part past the last is 416
 * InvalidPartNumber; an object stored whole is one part (206, the whole object, no parts
 * count); partNumber with Range is 400 InvalidRequest. GetObjectAttributes answers ETag,
 * ObjectSize, StorageClass, the checksum a PUT gave, and ObjectParts in pages. With the SDK,
 * boto3 and the aws CLI, on both storage configurations.
 */
import { createHash, randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, test } from 'vitest';
import {
  CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectAttributesCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { expectS3Error } from '../helpers/s3-api.js';
import { AWS, PYTHON } from '../helpers/s3-clients.js';
import { signedRequest } from '../helpers/s3-signed.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const BOTO3_SCRIPT = resolve(dirname(fileURLToPath(import.meta.url)), '../helpers/boto3-parts.py');
const MiB = 1024 * 1024;

const t = useS3Fixture('p');
let Bucket = '';
/** A multipart object of three parts of different sizes. */
const parts = [randomBytes(5 * MiB + 3), randomBytes(5 * MiB), randomBytes(1234)];
const whole = Buffer.concat(parts);
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
let multipartEtag = '';

beforeAll(async () => {
  Bucket = await t.newBucket();
  const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket, Key: 'dir/multi.bin' }));
  const sent = [];
  for (const [i, Body] of parts.entries()) sent.push({ PartNumber: i + 1, ETag: (await t.s3.send(new UploadPartCommand({ Bucket, Key: 'dir/multi.bin', UploadId, PartNumber: i + 1, Body }))).ETag! });
  multipartEtag = (await t.s3.send(new CompleteMultipartUploadCommand({ Bucket, Key: 'dir/multi.bin', UploadId, MultipartUpload: { Parts: sent } }))).ETag!;
  await t.s3.send(new PutObjectCommand({ Bucket, Key: 'single.txt', Body: 'stored whole', ChecksumAlgorithm: 'SHA256' }));
}, 120_000);

const bytesOf = async (out: { Body?: { transformToByteArray(): Promise<Uint8Array> } }) => Buffer.from(await out.Body!.transformToByteArray());

describe('GetObject and HeadObject with partNumber', () => {
  test('each part of a multipart object: 206, its Content-Range and bytes, and the parts count', async () => {
    let start = 0;
    for (const [i, part] of parts.entries()) {
      const got = await t.s3.send(new GetObjectCommand({ Bucket, Key: 'dir/multi.bin', PartNumber: i + 1 }));
      expect([got.$metadata.httpStatusCode, got.ContentRange, got.ContentLength, got.PartsCount, got.ETag]).toEqual([
        206, `bytes ${start}-${start + part.length - 1}/${whole.length}`, part.length, 3, multipartEtag,
      ]);
      expect((await bytesOf(got)).equals(part)).toBe(true);
      start += part.length;
    }
    const head = await t.s3.send(new HeadObjectCommand({ Bucket, Key: 'dir/multi.bin', PartNumber: 2 }));
    expect([head.$metadata.httpStatusCode, head.ContentLength, head.PartsCount, head.ContentRange]).toEqual([206, parts[1]!.length, 3, `bytes ${parts[0]!.length}-${parts[0]!.length + parts[1]!.length - 1}/${whole.length}`]);
    // Without partNumber: the whole object, no parts count.
    const all = await t.s3.send(new HeadObjectCommand({ Bucket, Key: 'dir/multi.bin' }));
    expect([all.$metadata.httpStatusCode, all.ContentLength, all.PartsCount]).toEqual([200, whole.length, undefined]);
  });

  test('a part past the last is 416 InvalidPartNumber; 0 or 10001 is 400 InvalidArgument; with Range it is 400 InvalidRequest', async () => {
    const e = await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket, Key: 'dir/multi.bin', PartNumber: 4 })), 416, 'InvalidPartNumber');
    expect(e.message).toBe('The requested partnumber is not satisfiable');
    // A HEAD answer has no body: the status says it.
    const head = await signedRequest(t.url, t.key, { method: 'HEAD', path: `/${Bucket}/dir/multi.bin`, query: { partNumber: '4' } });
    expect(head.status).toBe(416);
    for (const n of ['0', '10001', 'x']) {
      const r = await signedRequest(t.url, t.key, { method: 'GET', path: `/${Bucket}/dir/multi.bin`, query: { partNumber: n } });
      expect([r.status, r.body.toString()]).toEqual([400, expect.stringContaining('<Code>InvalidArgument</Code>')]);
    }
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket, Key: 'dir/multi.bin', PartNumber: 1, Range: 'bytes=0-9' })), 400, 'InvalidRequest');
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket, Key: 'nothing.bin', PartNumber: 1 })), 404, 'NoSuchKey');
  });

  test('an object stored whole is one part: part 1 is the whole object (206, no parts count), part 2 is 416 InvalidPartNumber', async () => {
    const got = await t.s3.send(new GetObjectCommand({ Bucket, Key: 'single.txt', PartNumber: 1 }));
    expect([got.$metadata.httpStatusCode, got.ContentRange, got.PartsCount, (await bytesOf(got)).toString()]).toEqual([206, 'bytes 0-11/12', undefined, 'stored whole']);
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket, Key: 'single.txt', PartNumber: 2 })), 416, 'InvalidPartNumber');
  });
});

describe('GetObjectAttributes', () => {
  test('ETag (unquoted), ObjectSize, StorageClass and ObjectParts in pages of x-amz-max-parts after x-amz-part-number-marker', async () => {
    const first = await t.s3.send(new GetObjectAttributesCommand({ Bucket, Key: 'dir/multi.bin', ObjectAttributes: ['ETag', 'ObjectSize', 'StorageClass', 'ObjectParts'], MaxParts: 2 }));
    expect(first.ETag).toBe(multipartEtag.replace(/"/g, ''));
    expect([first.ObjectSize, first.StorageClass, first.LastModified instanceof Date]).toEqual([whole.length, 'STANDARD', true]);
    expect(first.ObjectParts).toMatchObject({
      TotalPartsCount: 3, PartNumberMarker: '0', NextPartNumberMarker: '2', MaxParts: 2, IsTruncated: true,
      Parts: [{ PartNumber: 1, Size: parts[0]!.length }, { PartNumber: 2, Size: parts[1]!.length }],
    });
    const rest = await t.s3.send(new GetObjectAttributesCommand({ Bucket, Key: 'dir/multi.bin', ObjectAttributes: ['ObjectParts'], PartNumberMarker: '2' }));
    expect(rest.ObjectParts).toMatchObject({ TotalPartsCount: 3, IsTruncated: false, Parts: [{ PartNumber: 3, Size: 1234 }] });
    expect([rest.ETag, rest.ObjectSize]).toEqual([undefined, undefined]);
  });

  test('an object stored whole: no ObjectParts; the SHA-256 its PUT gave as Checksum', async () => {
    const got = await t.s3.send(new GetObjectAttributesCommand({ Bucket, Key: 'single.txt', ObjectAttributes: ['ETag', 'Checksum', 'ObjectParts', 'ObjectSize'] }));
    expect(got.ETag).toBe(md5(Buffer.from('stored whole')));
    expect(got.ObjectParts).toBeUndefined();
    expect(got.Checksum?.ChecksumSHA256).toBe(createHash('sha256').update('stored whole').digest('base64'));
    const plain = await t.s3.send(new GetObjectAttributesCommand({ Bucket, Key: 'dir/multi.bin', ObjectAttributes: ['Checksum'] }));
    expect(plain.Checksum).toBeUndefined();
  });

  test('no attributes or an unknown one is 400 InvalidArgument; a missing key is 404 NoSuchKey', async () => {
    const none = await signedRequest(t.url, t.key, { method: 'GET', path: `/${Bucket}/single.txt`, query: { attributes: '' } });
    expect([none.status, none.body.toString()]).toEqual([400, expect.stringContaining('<Code>InvalidArgument</Code>')]);
    const bogus = await signedRequest(t.url, t.key, { method: 'GET', path: `/${Bucket}/single.txt`, query: { attributes: '' }, headers: { 'x-amz-object-attributes': 'ETag,Colour' } });
    expect([bogus.status, bogus.body.toString()]).toEqual([400, expect.stringContaining('Invalid attribute name specified.')]);
    await expectS3Error(t.s3.send(new GetObjectAttributesCommand({ Bucket, Key: 'nothing', ObjectAttributes: ['ETag'] })), 404, 'NoSuchKey');
  });
});

test('boto3: get_object and head_object with PartNumber, get_object_attributes with pages', async () => {
  const seen = JSON.parse(await t.c.ok(PYTHON, [BOTO3_SCRIPT, Bucket, 'dir/multi.bin']));
  const a = parts[0]!.length;
  const b = parts[1]!.length;
  expect(seen).toEqual({
    part1: [206, `bytes 0-${a - 1}/${whole.length}`, 3, a, md5(parts[0]!)],
    part2: [206, `bytes ${a}-${a + b - 1}/${whole.length}`, 3, b, md5(parts[1]!)],
    part3: [206, `bytes ${a + b}-${whole.length - 1}/${whole.length}`, 3, 1234, md5(parts[2]!)],
    head3: [1234, 3],
    part4: [416, 'InvalidPartNumber'],
    attributes: { etag: multipartEtag.replace(/"/g, ''), size: whole.length, class: 'STANDARD', count: 3, truncated: true, next: 2, parts: [[1, a], [2, b]] },
    rest: [false, [[3, 1234]]],
  });
});

test('aws CLI: s3api head-object --part-number and get-object-attributes', async () => {
  const aws = (...args: string[]) => t.c.ok(AWS, ['--endpoint-url', t.url, '--output', 'json', 's3api', ...args]);
  const head = JSON.parse(await aws('head-object', '--bucket', Bucket, '--key', 'dir/multi.bin', '--part-number', '2'));
  expect([head.ContentLength, head.PartsCount]).toEqual([parts[1]!.length, 3]);
  const attrs = JSON.parse(await aws('get-object-attributes', '--bucket', Bucket, '--key', 'dir/multi.bin', '--object-attributes', 'ETag', 'ObjectSize', 'ObjectParts'));
  expect(attrs).toMatchObject({ ETag: multipartEtag.replace(/"/g, ''), ObjectSize: whole.length, ObjectParts: { TotalPartsCount: 3, IsTruncated: false } });
  expect(attrs.ObjectParts.Parts.map((p: { PartNumber: number; Size: number }) => [p.PartNumber, p.Size])).toEqual([[1, parts[0]!.length], [2, parts[1]!.length], [3, 1234]]);
});
