/**
 * The versions API on buckets that are never versioned (contract §12; docs/s3.md), as S3
 * answers an unversioned bucket: ListObjectVersions lists every object as its one version
 * "null", latest; versionId=null names the object; any other id is 400 InvalidArgument
 * ("Invalid version id specified"); x-amz-bypass-governance-retention is accepted. And
 * DeleteBucket on a bucket whose only content is open multipart uploads deletes it and aborts
 * them (their parts gone from the blob store), as `aws s3 rb --force` expects.
 */
import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import {
  CopyObjectCommand, CreateBucketCommand, CreateMultipartUploadCommand, DeleteBucketCommand, GetObjectCommand, HeadBucketCommand,
  ListMultipartUploadsCommand, ListObjectVersionsCommand, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { expectS3Error } from '../helpers/s3-api.js';
import { PYTHON } from '../helpers/s3-clients.js';
import { signedRequest } from '../helpers/s3-signed.js';
import { expectGone, openUploadIds, uploadHeld } from '../helpers/stored-object.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const BOTO3_SCRIPT = resolve(dirname(fileURLToPath(import.meta.url)), '../helpers/boto3-versions.py');
const MiB = 1024 * 1024;

const t = useS3Fixture('v');

const aws = t.aws;

/** An open multipart upload with one part; answers its UploadId and the blob store's new uploads. */
async function openUpload(Bucket: string, Key: string): Promise<{ uploadId: string; held: string[] }> {
  const before = new Set(await openUploadIds(t.o));
  const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
  await t.s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body: randomBytes(MiB) }));
  const held = (await openUploadIds(t.o)).filter((id) => !before.has(id));
  return { uploadId: UploadId!, held };
}

describe('ListObjectVersions and versionId on an unversioned bucket', () => {
  test('boto3: list_object_versions (prefix, delimiter, pages), versionId=null on get/head/delete, others refused, force_destroy empties it', async () => {
    const b = await t.newBucket();
    const seen = JSON.parse(await t.c.ok(PYTHON, [BOTO3_SCRIPT, b]));
    expect(seen.versions).toEqual([
      ['a.txt', 'null', true, 5, 'STANDARD'], ['dir/b.txt', 'null', true, 9, 'STANDARD'], ['dir/c.txt', 'null', true, 9, 'STANDARD'], ['z.txt', 'null', true, 5, 'STANDARD'],
    ]);
    expect(seen.delete_markers).toEqual([]);
    expect(seen.truncated).toBe(false);
    expect([seen.top, seen.prefixes, seen.under_dir]).toEqual([['a.txt', 'z.txt'], ['dir/'], ['dir/b.txt', 'dir/c.txt']]);
    expect(seen.paged).toEqual([['a.txt'], ['dir/b.txt'], ['dir/c.txt'], ['z.txt']]);
    expect([seen.get_null, seen.head_null]).toEqual(['a.txt', 5]);
    expect(seen.get_bogus).toEqual([400, 'InvalidArgument', 'Invalid version id specified']);
    // A HEAD answer has no body: the status says it.
    expect(seen.head_bogus.slice(0, 1)).toEqual([400]);
    expect(seen.delete_bogus).toEqual([400, 'InvalidArgument', 'Invalid version id specified']);
    expect(seen.versioning).toEqual([]);
    expect(seen.a_after_delete.slice(0, 1)).toEqual([404]);
    expect(seen.deleted).toEqual([['dir/b.txt', 'null']]);
    expect(seen.errors).toEqual([['z.txt', 'InvalidArgument']]);
    expect(seen.left).toEqual(['dir/c.txt', 'z.txt']);
    expect(seen.bucket_after.slice(0, 1)).toEqual([404]);
  });

  test('aws s3api list-object-versions lists each object with VersionId null', async () => {
    const b = await t.newBucket(['one.txt', 'sub/two.txt']);
    const out = JSON.parse(await aws('s3api', 'list-object-versions', '--bucket', b, '--output', 'json'));
    expect(out.Versions.map((v: { Key: string; VersionId: string; IsLatest: boolean }) => [v.Key, v.VersionId, v.IsLatest])).toEqual([['one.txt', 'null', true], ['sub/two.txt', 'null', true]]);
    expect(out.DeleteMarkers).toBeUndefined();
  });

  test('key-marker and version-id-marker: after (key, "null") is after the key; a marker id without a key, or not "null", is refused', async () => {
    const b = await t.newBucket(['a.txt', 'b.txt', 'c/d.txt', 'c/e.txt', 'f.txt']);
    const keys = async (input: Partial<ConstructorParameters<typeof ListObjectVersionsCommand>[0]>) => {
      const out = await t.s3.send(new ListObjectVersionsCommand({ Bucket: b, ...input }));
      return { versions: (out.Versions ?? []).map((v) => v.Key), prefixes: (out.CommonPrefixes ?? []).map((p) => p.Prefix), next: [out.NextKeyMarker, out.NextVersionIdMarker], truncated: out.IsTruncated };
    };
    expect(await keys({ KeyMarker: 'b.txt', VersionIdMarker: 'null' })).toEqual({ versions: ['c/d.txt', 'c/e.txt', 'f.txt'], prefixes: [], next: [undefined, undefined], truncated: false });
    expect(await keys({ KeyMarker: 'b.txt' })).toMatchObject({ versions: ['c/d.txt', 'c/e.txt', 'f.txt'] });
    expect(await keys({ MaxKeys: 2 })).toEqual({ versions: ['a.txt', 'b.txt'], prefixes: [], next: ['b.txt', 'null'], truncated: true });
    // A common prefix ends a page: the next starts after everything under it.
    expect(await keys({ Delimiter: '/', MaxKeys: 3 })).toEqual({ versions: ['a.txt', 'b.txt'], prefixes: ['c/'], next: ['c/', undefined], truncated: true });
    expect(await keys({ Delimiter: '/', KeyMarker: 'c/' })).toMatchObject({ versions: ['f.txt'], prefixes: [] });
    expect(await keys({ MaxKeys: 0 })).toEqual({ versions: [], prefixes: [], next: [undefined, undefined], truncated: false });
    await expectS3Error(t.s3.send(new ListObjectVersionsCommand({ Bucket: b, VersionIdMarker: 'null' })), 400, 'InvalidArgument');
    await expectS3Error(t.s3.send(new ListObjectVersionsCommand({ Bucket: b, KeyMarker: 'a.txt', VersionIdMarker: 'abc' })), 400, 'InvalidArgument');
    await expectS3Error(t.s3.send(new ListObjectVersionsCommand({ Bucket: `${b}-none` })), 404, 'NoSuchBucket');
  });

  test('a copy source naming versionId=null copies the object; another version id is InvalidArgument', async () => {
    const b = await t.newBucket(['src.txt']);
    await t.s3.send(new CopyObjectCommand({ Bucket: b, Key: 'dst.txt', CopySource: `${b}/src.txt?versionId=null` }));
    const got = await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'dst.txt', VersionId: 'null' }));
    expect([await got.Body!.transformToString(), got.VersionId]).toEqual(['src.txt', 'null']);
    await expectS3Error(t.s3.send(new CopyObjectCommand({ Bucket: b, Key: 'dst2.txt', CopySource: `${b}/src.txt?versionId=3HL4kqtJlcpXroDTDmjVBH40Nrjfkd` })), 400, 'InvalidArgument');
  });

  test('encoding-type=url encodes Key, Prefix, Delimiter, KeyMarker and NextKeyMarker, and nothing else', async () => {
    const b = await t.newBucket(['a b+c/é 1.txt', 'a b+c/é 2.txt', 'a b+c/é 3.txt']);
    const answer = await signedRequest(t.url, t.key, {
      method: 'GET', path: `/${b}`, query: { versions: '', 'encoding-type': 'url', prefix: 'a b+c/', 'key-marker': 'a b+c/é 1.txt', 'max-keys': '1', delimiter: '+' },
    });
    const xml = answer.body.toString();
    expect(answer.status, xml).toBe(200);
    const field = (name: string) => [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((m) => m[1]);
    expect(field('Key')).toEqual(['a%20b%2Bc/%C3%A9%202.txt']);
    expect(field('Prefix')).toEqual(['a%20b%2Bc/']);
    expect(field('Delimiter')).toEqual(['%2B']);
    expect(field('KeyMarker')).toEqual(['a%20b%2Bc/%C3%A9%201.txt']);
    expect(field('NextKeyMarker')).toEqual(['a%20b%2Bc/%C3%A9%202.txt']);
    expect([field('Name'), field('VersionId'), field('NextVersionIdMarker'), field('EncodingType')]).toEqual([[b], ['null'], ['null'], ['url']]);
  });
});

describe('DeleteBucket with open multipart uploads', () => {
  test('a bucket whose only content is open uploads is deleted; the uploads are aborted and their parts leave the blob store', async () => {
    const b = await t.newBucket();
    const one = await openUpload(b, 'big/one.bin');
    const two = await openUpload(b, 'two.bin');
    for (const id of [...one.held, ...two.held]) expect(await uploadHeld(t.o, id)).toBe(true);
    expect((await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b }))).Uploads?.length).toBe(2);
    expect((await t.s3.send(new DeleteBucketCommand({ Bucket: b }))).$metadata.httpStatusCode).toBe(204);
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: b })), 404, 'NotFound');
    await expectS3Error(t.s3.send(new ListMultipartUploadsCommand({ Bucket: b })), 404, 'NoSuchBucket');
    for (const id of [...one.held, ...two.held]) await expectGone(`upload ${id}`, () => uploadHeld(t.o, id), 10_000);
    // Made again, the name holds nothing of the old bucket.
    await t.s3.send(new CreateBucketCommand({ Bucket: b }));
    expect((await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b }))).Uploads ?? []).toEqual([]);
  });

  test('a bucket with an object besides an open upload is BucketNotEmpty, and the upload stays open', async () => {
    const b = await t.newBucket(['kept.txt']);
    const u = await openUpload(b, 'open.bin');
    await expectS3Error(t.s3.send(new DeleteBucketCommand({ Bucket: b })), 409, 'BucketNotEmpty');
    expect((await t.s3.send(new ListMultipartUploadsCommand({ Bucket: b }))).Uploads?.map((x) => x.UploadId)).toEqual([u.uploadId]);
    for (const id of u.held) expect(await uploadHeld(t.o, id)).toBe(true);
  });

  test('aws s3 rb --force removes a bucket with objects and an open multipart upload', async () => {
    const b = await t.newBucket(['x/y.txt', 'z.txt']);
    const u = await openUpload(b, 'pending.bin');
    await aws('s3', 'rb', '--force', `s3://${b}`);
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: b })), 404, 'NotFound');
    for (const id of u.held) await expectGone(`upload ${id}`, () => uploadHeld(t.o, id), 10_000);
  });
});
