/**
 * Corners S3 clients and conformance suites lean on (contract §12; docs/s3.md): CopyObject onto
 * itself needs `x-amz-metadata-directive: REPLACE` (400 InvalidRequest otherwise, S3's words);
 * CompleteMultipartUpload joins parts in part-number order whatever order they arrived in,
 * a part sent again counting as its last version; user metadata with bytes above ASCII signs
 * (whether the client signed the bytes it sent, or the UTF-8 of the Latin-1 text it wrote) and
 * comes back as the same bytes; presigned URLs with X-Amz-Expires out of range or expired
 * answer S3's codes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateMultipartUploadCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { expectS3Error } from '../helpers/s3-api.js';
import { presign } from '../helpers/s3-presign.js';
import { headerBytes, signedRequest } from '../helpers/s3-signed.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const MiB = 1024 * 1024;
const SELF_COPY = 'This copy request is illegal because it is trying to copy an object to itself without changing the object\'s metadata, storage class, website redirect location or encryption attributes.';

const t = useS3Fixture('k');
const bytesOf = async (out: { Body?: unknown }) => Buffer.from(await (out.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
const md5 = (b: Buffer) => createHash('md5').update(b).digest();

describe('CopyObject onto itself', () => {
  test('without REPLACE it is 400 InvalidRequest and the object is unchanged; with REPLACE its metadata is replaced', async () => {
    const b = await t.newBucket();
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'd/self.txt', Body: 'same', Metadata: { color: 'red' }, ContentType: 'text/plain' }));
    const err = await expectS3Error(t.s3.send(new CopyObjectCommand({ Bucket: b, Key: 'd/self.txt', CopySource: `${b}/d/self.txt` })), 400, 'InvalidRequest');
    expect(err.message).toBe(SELF_COPY);
    await expectS3Error(t.s3.send(new CopyObjectCommand({ Bucket: b, Key: 'd/self.txt', CopySource: `${b}/d/self.txt`, MetadataDirective: 'COPY' })), 400, 'InvalidRequest');
    expect((await t.s3.send(new HeadObjectCommand({ Bucket: b, Key: 'd/self.txt' }))).Metadata).toEqual({ color: 'red' });
    await t.s3.send(new CopyObjectCommand({ Bucket: b, Key: 'd/self.txt', CopySource: `${b}/d/self.txt`, MetadataDirective: 'REPLACE', Metadata: { color: 'blue' }, ContentType: 'text/plain' }));
    const after = await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'd/self.txt' }));
    expect([after.Metadata, (await bytesOf(after)).toString()]).toEqual([{ color: 'blue' }, 'same']);
    // Another key, or the same key in another bucket, copies as before.
    const other = await t.newBucket();
    await t.s3.send(new CopyObjectCommand({ Bucket: other, Key: 'd/self.txt', CopySource: `${b}/d/self.txt` }));
    await t.s3.send(new CopyObjectCommand({ Bucket: b, Key: 'd/copy.txt', CopySource: `${b}/d/self.txt` }));
    expect((await bytesOf(await t.s3.send(new GetObjectCommand({ Bucket: other, Key: 'd/self.txt' })))).toString()).toBe('same');
  });

  test('boto3 copy_object onto itself: InvalidRequest without REPLACE, done with it', async () => {
    const b = await t.newBucket();
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'p.txt', Body: 'py' }));
    const seen = await t.boto3([
      'seen = {}',
      'try:',
      '    s3.copy_object(Bucket=b, Key="p.txt", CopySource={"Bucket": b, "Key": "p.txt"})',
      '    seen["plain"] = "ok"',
      'except ClientError as e:',
      '    seen["plain"] = [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"], e.response["Error"]["Message"]]',
      's3.copy_object(Bucket=b, Key="p.txt", CopySource={"Bucket": b, "Key": "p.txt"}, MetadataDirective="REPLACE", Metadata={"k": "v"})',
      'seen["replaced"] = s3.head_object(Bucket=b, Key="p.txt")["Metadata"]',
      'print(json.dumps(seen))',
    ], b);
    expect(seen).toEqual({ plain: [400, 'InvalidRequest', SELF_COPY], replaced: { k: 'v' } });
  });
});

describe('CompleteMultipartUpload and part order', () => {
  test('a part sent again after later parts: the object is the parts in part-number order, the last version of each', async () => {
    const b = await t.newBucket();
    const at = { Bucket: b, Key: 'order.bin' };
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand(at));
    const first = randomBytes(5 * MiB);
    const second = randomBytes(5 * MiB);
    const third = randomBytes(1000);
    const again = randomBytes(5 * MiB);
    const send = async (PartNumber: number, Body: Buffer) => (await t.s3.send(new UploadPartCommand({ ...at, UploadId, PartNumber, Body }))).ETag!;
    // Arrival: 3, 1, 2, then 1 again.
    const e3 = await send(3, third);
    await send(1, first);
    const e2 = await send(2, second);
    const e1 = await send(1, again);
    const done = await t.s3.send(new CompleteMultipartUploadCommand({ ...at, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: e1 }, { PartNumber: 2, ETag: e2 }, { PartNumber: 3, ETag: e3 }] } }));
    const whole = Buffer.concat([again, second, third]);
    const etag = `"${createHash('md5').update(Buffer.concat([md5(again), md5(second), md5(third)])).digest('hex')}-3"`;
    expect(done.ETag).toBe(etag);
    const got = await t.s3.send(new GetObjectCommand(at));
    expect([got.ETag, got.ContentLength]).toEqual([etag, whole.length]);
    expect((await bytesOf(got)).equals(whole)).toBe(true);
  });
});

describe('user metadata with bytes above ASCII', () => {
  test('signed over the UTF-8 bytes sent (Go, curl): stored as its text, answered as those bytes where the text is beyond Latin-1', async () => {
    const b = await t.newBucket();
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'x.txt', Body: 'x' }));
    const value = Buffer.from('Zoë · 日本 ✓', 'utf8');
    const put = await signedRequest(t.url, t.key, {
      method: 'PUT', path: `/${b}/utf8.txt`, headers: { 'x-amz-meta-title': value.toString('latin1') }, body: Buffer.from('hello'), signAs: 'bytes',
    });
    expect(put.status, put.body.toString()).toBe(200);
    const got = await signedRequest(t.url, t.key, { method: 'GET', path: `/${b}/utf8.txt` });
    expect([got.status, headerBytes(got, 'x-amz-meta-title').equals(value), got.body.toString()]).toEqual([200, true, 'hello']);
    // Other bytes than those signed still fail.
    const swapped = Buffer.from(value);
    swapped[swapped.length - 1] = 0x21;
    const tampered = await signedRequest(t.url, t.key, {
      method: 'PUT', path: `/${b}/swap.txt`, headers: { 'x-amz-meta-title': value.toString('latin1') }, tamper: { 'x-amz-meta-title': swapped.toString('latin1') },
      body: Buffer.from('x'), signAs: 'bytes',
    });
    expect([tampered.status, tampered.body.toString()]).toEqual([403, expect.stringContaining('<Code>SignatureDoesNotMatch</Code>')]);
  });

  test('written as Latin-1 and signed as the UTF-8 of that text (Node): stored, and answered as the same bytes', async () => {
    const b = await t.newBucket();
    const value = Buffer.from('Hello World\xe9', 'latin1');
    const put = await signedRequest(t.url, t.key, {
      method: 'PUT', path: `/${b}/latin1.txt`, headers: { 'x-amz-meta-meta1': value.toString('latin1') }, body: Buffer.from('bar'), signAs: 'utf8',
    });
    expect(put.status, put.body.toString()).toBe(200);
    const got = await signedRequest(t.url, t.key, { method: 'HEAD', path: `/${b}/latin1.txt` });
    expect([got.status, headerBytes(got, 'x-amz-meta-meta1').equals(value)]).toEqual([200, true]);
  });

  test('boto3 (UTF-8 on the wire, signed so) with a non-ASCII metadata header set before the call, as S3 conformance suites do, reads it back', async () => {
    const b = await t.newBucket();
    const seen = await t.boto3([
      'def set_meta(**kwargs):',
      '    kwargs["params"]["headers"]["x-amz-meta-meta1"] = u"Hello World\\xe9"',
      's3.meta.events.register("before-call.s3.PutObject", set_meta)',
      's3.put_object(Bucket=b, Key="foo", Body=b"bar")',
      'got = s3.get_object(Bucket=b, Key="foo")',
      'print(json.dumps({"meta": got["Metadata"]["meta1"], "body": got["Body"].read().decode()}))',
    ], b);
    expect(seen).toEqual({ meta: 'Hello World\u00e9', body: 'bar' });
  });
});

describe('presigned URLs: X-Amz-Expires and expiry as S3 answers them', () => {
  const expectError = async (url: string, status: number, code: string, message: string) => {
    const res = await fetch(url);
    expect([res.status, await res.text()]).toEqual([status, expect.stringContaining(`<Code>${code}</Code><Message>${message}</Message>`)]);
  };

  test('above 604800, negative or not a number is 403 AuthorizationQueryParametersError; 604800 itself is taken', async () => {
    const b = await t.newBucket();
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'f.txt', Body: 'shared' }));
    const url = (expires: number) => presign(t.url, t.key, 'GET', `/${b}/f.txt`, {}, expires);
    await expectError(url(604_801), 403, 'AuthorizationQueryParametersError', 'X-Amz-Expires must be less than a week (in seconds) that is 604800');
    await expectError(url(-1), 403, 'AuthorizationQueryParametersError', 'X-Amz-Expires must be non-negative');
    await expectError(url(Number.NaN), 403, 'AuthorizationQueryParametersError', 'X-Amz-Expires should be a number');
    const week = await fetch(url(604_800));
    expect([week.status, await week.text()]).toEqual([200, 'shared']);
  });

  test('an expired URL is 403 AccessDenied "Request has expired"', async () => {
    const b = await t.newBucket();
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'f.txt', Body: 'shared' }));
    const url = await getSignedUrl(t.s3, new GetObjectCommand({ Bucket: b, Key: 'f.txt' }), { expiresIn: 5, signingDate: new Date(Date.now() - 60_000) });
    await expectError(url, 403, 'AccessDenied', 'Request has expired');
  });
});
