/**
 * The S3 interface (contract §12) through @aws-sdk/client-s3, unchanged, at the root of the S3
 * port: buckets, objects (PUT streamed, GET with Range and conditions,
 * HEAD, DELETE, DeleteObjects, CopyObject), the mapping onto folders and files, S3's XML errors,
 * and the SDK's own checksum trailers.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import {
  CopyObjectCommand, CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand, DeleteObjectsCommand, GetBucketLocationCommand, GetObjectCommand,
  HeadBucketCommand, HeadObjectCommand, ListBucketsCommand, PutObjectCommand,
} from '@aws-sdk/client-s3';
import { uploadBytes } from '../helpers/origin.js';
import { expectS3Error, filesIn, folderAt } from '../helpers/s3-api.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const t = useS3Fixture('t');

const md5 = (b: Buffer | string) => createHash('md5').update(b).digest('hex');
const bucketName = () => `t-${randomBytes(5).toString('hex')}`;
async function newBucket(client = t.s3, acl?: 'public-read'): Promise<string> {
  const name = bucketName();
  await client.send(new CreateBucketCommand({ Bucket: name, ...(acl ? { ACL: acl } : {}) }));
  return name;
}
const text = async (out: { Body?: unknown }) => Buffer.from(await (out.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());

describe('buckets are top-level folders', () => {
  test('CreateBucket makes a Private folder (Public with public-read); ListBuckets, HeadBucket and GetBucketLocation see it; DeleteBucket removes an empty one', async () => {
    const client = t.s3;
    const priv = await newBucket(client);
    const pub = await newBucket(client, 'public-read');
    const root = await t.o.post('/collections/list', { limit: 1000 });
    const byName = new Map((root.body.folders as Array<{ name: string; visibility: string }>).map((f) => [f.name, f.visibility]));
    expect(byName.get(priv)).toBe('Private');
    expect(byName.get(pub)).toBe('Public');
    const listed = (await client.send(new ListBucketsCommand({}))).Buckets!.map((b) => b.Name);
    expect(listed).toEqual(expect.arrayContaining([priv, pub]));
    await client.send(new HeadBucketCommand({ Bucket: priv }));
    expect((await client.send(new GetBucketLocationCommand({ Bucket: priv }))).LocationConstraint ?? '').toBe('');
    await client.send(new DeleteBucketCommand({ Bucket: pub }));
    expect((await client.send(new ListBucketsCommand({}))).Buckets!.map((b) => b.Name)).not.toContain(pub);
  });

  test('S3 errors: NoSuchBucket, BucketAlreadyOwnedByYou, InvalidBucketName, BucketNotEmpty', async () => {
    const b = await newBucket();
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: 'no-such-bucket-here' })), 404, 'NotFound');
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: 'no-such-bucket-here', Key: 'x' })), 404, 'NoSuchBucket');
    await expectS3Error(t.s3.send(new CreateBucketCommand({ Bucket: b })), 409, 'BucketAlreadyOwnedByYou');
    await expectS3Error(t.s3.send(new CreateBucketCommand({ Bucket: 'Not_Valid' })), 400, 'InvalidBucketName');
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'deep/inside/file.txt', Body: 'x' }));
    await expectS3Error(t.s3.send(new DeleteBucketCommand({ Bucket: b })), 409, 'BucketNotEmpty');
    await t.s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'deep/inside/file.txt' }));
    await t.s3.send(new DeleteBucketCommand({ Bucket: b }));
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: b })), 404, 'NotFound');
  });

  test('an unsigned request is refused with S3\'s XML error body', async () => {
    const res = await fetch(`${t.url}/`);
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toMatch(/^application\/xml/);
    expect(await res.text()).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<Error><Code>AccessDenied<\/Code><Message>[^<]+<\/Message>.*<RequestId>\w+<\/RequestId><\/Error>$/s);
  });
});

describe('objects', () => {
  test('PutObject maps a key onto folders and a file; GetObject and HeadObject answer with the MD5 ETag, type and metadata', async () => {
    const b = await newBucket(t.s3, 'public-read');
    const body = Buffer.from('hello, coffer\n');
    const put = await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'photos/2026/note.txt', Body: body, ContentType: 'text/plain; charset=utf-8', Metadata: { author: 'ada', 'mtime-x': '1700000000' }, CacheControl: 'max-age=60' }));
    expect(put.ETag).toBe(`"${md5(body)}"`);
    const files = await filesIn(t.o, await folderAt(t.o, `${b}/photos/2026`));
    expect(files).toEqual([expect.objectContaining({ name: 'note.txt', size: body.length, content_type: 'text/plain; charset=utf-8', visibility: 'Public' })]);
    const got = await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'photos/2026/note.txt' }));
    expect((await text(got)).equals(body)).toBe(true);
    expect(got).toMatchObject({ ETag: `"${md5(body)}"`, ContentType: 'text/plain; charset=utf-8', ContentLength: body.length, Metadata: { author: 'ada', 'mtime-x': '1700000000' }, CacheControl: 'max-age=60' });
    const head = await t.s3.send(new HeadObjectCommand({ Bucket: b, Key: 'photos/2026/note.txt' }));
    expect(head).toMatchObject({ ETag: `"${md5(body)}"`, ContentLength: body.length, AcceptRanges: 'bytes' });
    expect(head.LastModified!.getTime()).toBeGreaterThan(Date.now() - 60_000);
    // x-amz-acl private makes the file Private; an empty object is an object.
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'photos/secret.bin', Body: Buffer.alloc(0), ACL: 'private' }));
    expect(await filesIn(t.o, await folderAt(t.o, `${b}/photos`))).toEqual([expect.objectContaining({ name: 'secret.bin', size: 0, visibility: 'Private', content_type: 'application/octet-stream' })]);
    const empty = await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'photos/secret.bin' }));
    expect((await text(empty)).length).toBe(0);
    expect(empty.ETag).toBe(`"${md5('')}"`);
  });

  test('a body of several 5 MiB parts streams through and comes back whole; its SHA-256 is the file\'s', async () => {
    const b = await newBucket();
    const body = randomBytes(12 * 1024 * 1024 + 7);
    const put = await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'big.bin', Body: body }));
    expect(put.ETag).toBe(`"${md5(body)}"`);
    const [file] = await filesIn(t.o, await folderAt(t.o, b));
    const record = await t.o.post('/collections/file/get', { file_id: file!.file_id });
    expect(record.body.sha256).toBe(createHash('sha256').update(body).digest('hex'));
    expect((await text(await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'big.bin' })))).equals(body)).toBe(true);
  });

  test('the SDK\'s checksum trailers (CRC32 by default, CRC32C, SHA-1, SHA-256) are checked and answered', async () => {
    const b = await newBucket();
    const body = randomBytes(300_000);
    t.sent.length = 0;
    // A stream: what this SDK sends by default is aws-chunked, unsigned, with a CRC32 trailer.
    const put = await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'crc.bin', Body: Readable.from([body.subarray(0, 1000), body.subarray(1000)]), ContentLength: body.length }));
    const sent = t.sent.at(-1)!;
    expect(sent['x-amz-content-sha256']).toBe('STREAMING-UNSIGNED-PAYLOAD-TRAILER');
    expect(sent['x-amz-trailer']).toBe('x-amz-checksum-crc32');
    expect(put.ChecksumCRC32).toBeTruthy();
    expect((await text(await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'crc.bin' })))).equals(body)).toBe(true);
    // A buffer: the payload's SHA-256 is signed, the CRC32 sent as a header.
    const buffered = await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'crc2.bin', Body: body }));
    expect(t.sent.at(-1)!['x-amz-content-sha256']).toBe(createHash('sha256').update(body).digest('hex'));
    expect(buffered.ChecksumCRC32).toBe(put.ChecksumCRC32);
    for (const algorithm of ['CRC32C', 'SHA1', 'SHA256'] as const) {
      const out = await t.s3.send(new PutObjectCommand({ Bucket: b, Key: `sum-${algorithm}.bin`, Body: body, ChecksumAlgorithm: algorithm }));
      expect(out.ETag).toBe(`"${md5(body)}"`);
      expect((await text(await t.s3.send(new GetObjectCommand({ Bucket: b, Key: `sum-${algorithm}.bin` })))).equals(body)).toBe(true);
    }
    // A checksum header that does not match the body: BadDigest, and nothing is stored.
    await expectS3Error(t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'wrong.bin', Body: body, ChecksumSHA256: createHash('sha256').update('other').digest('base64') })), 400, 'BadDigest');
    await expectS3Error(t.s3.send(new HeadObjectCommand({ Bucket: b, Key: 'wrong.bin' })), 404, 'NotFound');
  });

  test('Range (206, suffix, InvalidRange) and conditions (304, PreconditionFailed)', async () => {
    const b = await newBucket();
    const body = Buffer.from('0123456789abcdefghij');
    const { ETag } = await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'r.txt', Body: body }));
    const part = await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'r.txt', Range: 'bytes=5-9' }));
    expect(part.ContentRange).toBe('bytes 5-9/20');
    expect((await text(part)).toString()).toBe('56789');
    expect(part.$metadata.httpStatusCode).toBe(206);
    expect((await text(await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'r.txt', Range: 'bytes=-3' })))).toString()).toBe('hij');
    expect((await text(await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'r.txt', Range: 'bytes=15-' })))).toString()).toBe('fghij');
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'r.txt', Range: 'bytes=20-30' })), 416, 'InvalidRange');
    // The SDK names a bodiless 304 "Unknown".
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'r.txt', IfNoneMatch: ETag })), 304, 'Unknown');
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'r.txt', IfModifiedSince: new Date(Date.now() + 60_000) })), 304, 'Unknown');
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'r.txt', IfMatch: '"0000"' })), 412, 'PreconditionFailed');
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'r.txt', IfUnmodifiedSince: new Date(Date.now() - 3_600_000) })), 412, 'PreconditionFailed');
    expect((await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'r.txt', IfMatch: ETag }))).ContentLength).toBe(20);
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'missing.txt' })), 404, 'NoSuchKey');
    await expectS3Error(t.s3.send(new HeadObjectCommand({ Bucket: b, Key: 'missing.txt' })), 404, 'NotFound');
  });

  test('a PUT over a key replaces the file; of files the programmatic interface gave one name, S3 sees the newest, and a DELETE removes them all', async () => {
    const b = await newBucket();
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'dir/same.txt', Body: 'first' }));
    const dir = await folderAt(t.o, `${b}/dir`);
    const [first] = await filesIn(t.o, dir);
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'dir/same.txt', Body: 'second' }));
    const after = await filesIn(t.o, dir);
    expect(after).toHaveLength(1);
    expect(after[0]!.file_id).not.toBe(first!.file_id);
    expect((await t.o.post('/collections/file/get', { file_id: first!.file_id })).status).toBe(404);
    // Two more of the same name through the programmatic interface: S3 sees the newest.
    await uploadBytes(t.o, Buffer.from('third'), { name: 'same.txt', folder_id: dir });
    await uploadBytes(t.o, Buffer.from('fourth!'), { name: 'same.txt', folder_id: dir });
    expect(await filesIn(t.o, dir)).toHaveLength(3);
    expect((await text(await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'dir/same.txt' })))).toString()).toBe('fourth!');
    await t.s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'dir/same.txt' }));
    await expectS3Error(t.s3.send(new HeadObjectCommand({ Bucket: b, Key: 'dir/same.txt' })), 404, 'NotFound');
    // The folder S3 made for the key went with its last file.
    expect((await t.o.post('/collections/folder/get', { folder_id: dir })).status).toBe(404);
    // Deleting what is not there is no error, as in S3.
    await t.s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'never/was.txt' }));
  });

  test('a folder made through the programmatic interface stays when S3 empties it', async () => {
    const b = await newBucket();
    const kept = await t.o.post('/collections/folder/create', { name: 'kept', visibility: 'Public', parent_id: await folderAt(t.o, b) });
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'kept/f.txt', Body: 'x' }));
    await t.s3.send(new DeleteObjectCommand({ Bucket: b, Key: 'kept/f.txt' }));
    expect((await t.o.post('/collections/folder/get', { folder_id: kept.body.folder_id })).status).toBe(200);
  });

  test('DeleteObjects removes many keys in one call, quietly or saying each', async () => {
    const b = await newBucket();
    const keys = ['a.txt', 'x/b.txt', 'x/c.txt', 'x/y/d.txt'];
    for (const Key of keys) await t.s3.send(new PutObjectCommand({ Bucket: b, Key, Body: Key }));
    const out = await t.s3.send(new DeleteObjectsCommand({ Bucket: b, Delete: { Objects: [...keys, 'absent.txt', 'x//bad'].map((Key) => ({ Key })) } }));
    expect(out.Deleted!.map((d) => d.Key).sort()).toEqual([...keys, 'absent.txt'].sort());
    expect(out.Errors!.map((e) => [e.Key, e.Code])).toEqual([['x//bad', 'InvalidArgument']]);
    for (const Key of keys) await expectS3Error(t.s3.send(new HeadObjectCommand({ Bucket: b, Key })), 404, 'NotFound');
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'q.txt', Body: 'q' }));
    const quiet = await t.s3.send(new DeleteObjectsCommand({ Bucket: b, Delete: { Objects: [{ Key: 'q.txt' }], Quiet: true } }));
    expect(quiet.Deleted ?? []).toEqual([]);
    await expectS3Error(t.s3.send(new HeadObjectCommand({ Bucket: b, Key: 'q.txt' })), 404, 'NotFound');
  });

  test('CopyObject copies bytes and metadata (COPY) or takes new ones (REPLACE), across buckets', async () => {
    const src = await newBucket();
    const dst = await newBucket();
    const body = randomBytes(6 * 1024 * 1024);
    await t.s3.send(new PutObjectCommand({ Bucket: src, Key: 'orig.bin', Body: body, ContentType: 'application/x-test', Metadata: { tag: 'one' } }));
    const copied = await t.s3.send(new CopyObjectCommand({ Bucket: dst, Key: 'copies/a.bin', CopySource: `${src}/orig.bin` }));
    expect(copied.CopyObjectResult?.ETag).toBe(`"${md5(body)}"`);
    const a = await t.s3.send(new GetObjectCommand({ Bucket: dst, Key: 'copies/a.bin' }));
    expect((await text(a)).equals(body)).toBe(true);
    expect(a).toMatchObject({ ContentType: 'application/x-test', Metadata: { tag: 'one' } });
    await t.s3.send(new CopyObjectCommand({ Bucket: dst, Key: 'copies/b.bin', CopySource: `/${src}/orig.bin`, MetadataDirective: 'REPLACE', ContentType: 'text/plain', Metadata: { tag: 'two' } }));
    expect(await t.s3.send(new HeadObjectCommand({ Bucket: dst, Key: 'copies/b.bin' }))).toMatchObject({ ContentType: 'text/plain', Metadata: { tag: 'two' } });
    await expectS3Error(t.s3.send(new CopyObjectCommand({ Bucket: dst, Key: 'c.bin', CopySource: `${src}/none.bin` })), 404, 'NoSuchKey');
  });

  test('keys Coffer cannot keep as names are refused, saying why', async () => {
    const b = await newBucket();
    for (const Key of ['a//b.txt', 'a/./b.txt', 'a/../b.txt', ' lead.txt', 'x/trail /y.txt', 'bell\u0007.txt', `${'n'.repeat(256)}.txt`]) {
      await expectS3Error(t.s3.send(new PutObjectCommand({ Bucket: b, Key, Body: 'x' })), 400, 'InvalidArgument');
    }
    await expectS3Error(t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'k/'.repeat(600), Body: 'x' })), 400, 'KeyTooLongError');
    // A key ending in "/" makes its folder.
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'made/here/', Body: '' }));
    expect(await folderAt(t.o, `${b}/made/here`)).toBeTruthy();
    // Unicode and spaces inside a name are kept as they are.
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'été/a b+c&d.txt', Body: 'u' }));
    expect((await text(await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'été/a b+c&d.txt' })))).toString()).toBe('u');
  });
});
