/**
 * Who may do what through the S3 interface (contract §12 with §10's keys): SigV4 with the key's
 * id and secret, refused for unknown, wrong, revoked and expired credentials; scopes; folder
 * confinement (outside is as if it did not exist); presigned URLs (the SDK's presigner) and a
 * body sent as signed aws-chunked chunks, each chunk's signature checked.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, describe, expect, test } from 'vitest';
import {
  CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, ListBucketsCommand, ListObjectsV2Command, PutObjectCommand, type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { SignatureV4 } from '@smithy/signature-v4';
import { ManualClock } from '../kit/index.js';
import { expectS3Error, folderAt, makeKey, s3Client, type S3Key } from '../helpers/s3-api.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

/** The origin's time: keys expire as the test moves it. */
const clock = new ManualClock(Date.now());
const t = useS3Fixture('a', { origin: { clock } });
const clients: S3Client[] = [];
const clientFor = (key: S3Key): S3Client => {
  const c = s3Client(t.url, key).client;
  clients.push(c);
  return c;
};
afterAll(() => {
  for (const c of clients) c.destroy();
});

const text = async (out: { Body?: unknown }) => Buffer.from(await (out.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray()).toString();
const put = (client: S3Client, Bucket: string, Key: string, Body: string) => client.send(new PutObjectCommand({ Bucket, Key, Body }));
const get = async (client: S3Client, Bucket: string, Key: string) => text(await client.send(new GetObjectCommand({ Bucket, Key })));

describe('credentials', () => {
  test('a key\'s id and secret sign; unknown ids, wrong secrets, revoked and expired keys are refused at once', async () => {
    const b = await t.newBucket();
    await put(t.s3, b, 'x.txt', 'x');
    await expectS3Error(clientFor({ keyId: 'nosuchkey', secret: t.key.secret }).send(new ListBucketsCommand({})), 403, 'InvalidAccessKeyId');
    await expectS3Error(clientFor({ keyId: t.key.keyId, secret: `${t.key.secret}x` }).send(new ListBucketsCommand({})), 403, 'SignatureDoesNotMatch');
    const doomed = await makeKey(t.o);
    const client = clientFor(doomed);
    expect(await get(client, b, 'x.txt')).toBe('x');
    expect((await t.o.post('/collections/keys/revoke', { key_id: doomed.keyId })).status).toBe(200);
    await expectS3Error(client.send(new GetObjectCommand({ Bucket: b, Key: 'x.txt' })), 403, 'InvalidAccessKeyId');
    const made = await t.o.post('/collections/keys/create', { name: 'short', scopes: ['read'], expires_in: 1 });
    const short = clientFor({ keyId: made.body.key_id, secret: made.body.key });
    await clock.advance(1100);
    await expectS3Error(short.send(new ListBucketsCommand({})), 403, 'InvalidAccessKeyId');
  });
});

describe('scopes and confinement', () => {
  test('read lists and gets but writes nothing; write puts and deletes but reads nothing', async () => {
    const b = await t.newBucket();
    await put(t.s3, b, 'doc.txt', 'hello');
    const reader = clientFor(await makeKey(t.o, ['read']));
    const writer = clientFor(await makeKey(t.o, ['write']));
    expect(await get(reader, b, 'doc.txt')).toBe('hello');
    expect((await reader.send(new ListObjectsV2Command({ Bucket: b }))).Contents!.map((c) => c.Key)).toEqual(['doc.txt']);
    await expectS3Error(put(reader, b, 'new.txt', 'no'), 403, 'AccessDenied');
    await expectS3Error(reader.send(new DeleteObjectCommand({ Bucket: b, Key: 'doc.txt' })), 403, 'AccessDenied');
    await expectS3Error(reader.send(new CreateBucketCommand({ Bucket: `a-${randomBytes(5).toString('hex')}` })), 403, 'AccessDenied');
    await put(writer, b, 'new.txt', 'yes');
    await expectS3Error(writer.send(new GetObjectCommand({ Bucket: b, Key: 'new.txt' })), 403, 'AccessDenied');
    await expectS3Error(writer.send(new ListObjectsV2Command({ Bucket: b })), 403, 'AccessDenied');
    await writer.send(new DeleteObjectCommand({ Bucket: b, Key: 'doc.txt' }));
    expect((await reader.send(new ListObjectsV2Command({ Bucket: b }))).Contents!.map((c) => c.Key)).toEqual(['new.txt']);
  });

  test('a key confined to a folder sees its subtree and the way down to it; the rest is as if it did not exist', async () => {
    const b = await t.newBucket();
    const other = await t.newBucket();
    await put(t.s3, b, 'team/in.txt', 'in');
    await put(t.s3, b, 'out.txt', 'out');
    await put(t.s3, other, 'o.txt', 'o');
    const confined = clientFor(await makeKey(t.o, ['read', 'write'], await folderAt(t.o, `${b}/team`)));
    expect((await confined.send(new ListBucketsCommand({}))).Buckets!.map((x) => x.Name)).toEqual([b]);
    expect((await confined.send(new ListObjectsV2Command({ Bucket: b }))).Contents!.map((c) => c.Key)).toEqual(['team/in.txt']);
    expect(await get(confined, b, 'team/in.txt')).toBe('in');
    await put(confined, b, 'team/deep/new.txt', 'new');
    expect(await get(t.s3, b, 'team/deep/new.txt')).toBe('new');
    await expectS3Error(confined.send(new GetObjectCommand({ Bucket: b, Key: 'out.txt' })), 404, 'NoSuchKey');
    await expectS3Error(put(confined, b, 'out.txt', 'overwrite'), 403, 'AccessDenied');
    await expectS3Error(put(confined, b, 'elsewhere/x.txt', 'x'), 403, 'AccessDenied');
    await expectS3Error(confined.send(new GetObjectCommand({ Bucket: other, Key: 'o.txt' })), 404, 'NoSuchBucket');
    // Deleting what it cannot see removes nothing.
    await confined.send(new DeleteObjectCommand({ Bucket: b, Key: 'out.txt' }));
    expect(await get(t.s3, b, 'out.txt')).toBe('out');
  });
});

describe('presigned URLs and signed chunks', () => {
  test('a presigned GET and PUT work as given on the S3 port; changed or expired ones are refused', async () => {
    const b = await t.newBucket();
    await put(t.s3, b, 'dir/shared file.txt', 'shared bytes');
    const url = await getSignedUrl(t.s3, new GetObjectCommand({ Bucket: b, Key: 'dir/shared file.txt' }), { expiresIn: 300 });
    const ok = await fetch(url);
    expect([ok.status, await ok.text()]).toEqual([200, 'shared bytes']);
    const other = await fetch(url.replace('shared%20file.txt', 'other.txt'));
    expect([other.status, await other.text()]).toEqual([403, expect.stringContaining('<Code>SignatureDoesNotMatch</Code>')]);
    const expired = await fetch(await getSignedUrl(t.s3, new GetObjectCommand({ Bucket: b, Key: 'dir/shared file.txt' }), { expiresIn: 1, signingDate: new Date(Date.now() - 10_000) }));
    expect([expired.status, await expired.text()]).toEqual([403, expect.stringMatching(/<Code>AccessDenied<\/Code><Message>Request has expired/)]);
    const upload = await getSignedUrl(t.s3, new PutObjectCommand({ Bucket: b, Key: 'up.txt' }), { expiresIn: 300 });
    expect((await fetch(upload, { method: 'PUT', body: 'put by URL' })).status).toBe(200);
    expect(await get(t.s3, b, 'up.txt')).toBe('put by URL');
  });

  test('a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body is stored when every chunk signature holds, refused when one does not', async () => {
    const b = await t.newBucket();
    const data = randomBytes(150_000);
    const ok = await chunkedPut(b, 'chunked.bin', data, 64 * 1024);
    expect(ok.status, ok.body).toBe(200);
    expect(ok.etag).toBe(`"${createHash('md5').update(data).digest('hex')}"`);
    const got = await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'chunked.bin' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(data)).toBe(true);
    const bad = await chunkedPut(b, 'tampered.bin', data, 64 * 1024, (body) => {
      body[70_000] = body[70_000]! ^ 1;
    });
    expect([bad.status, bad.body]).toEqual([403, expect.stringContaining('<Code>SignatureDoesNotMatch</Code>')]);
    expect((await t.s3.send(new ListObjectsV2Command({ Bucket: b }))).Contents!.map((c) => c.Key)).toEqual(['chunked.bin']);
  });
});

/** node:crypto as the SDK signer's hash interface (an HMAC when given a secret). */
class Sha256 {
  private readonly h;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const b = (d: string | ArrayBuffer | ArrayBufferView) => (typeof d === 'string' ? Buffer.from(d) : ArrayBuffer.isView(d) ? Buffer.from(d.buffer, d.byteOffset, d.byteLength) : Buffer.from(d));
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', b(secret));
    this.update = (data) => void this.h.update(b(data));
  }
  update: (data: string | ArrayBuffer | ArrayBufferView) => void;
  async digest(): Promise<Uint8Array> {
    return this.h.digest();
  }
}

/** A PUT whose body is aws-chunked with signed chunks, as SigV4's streaming mode defines it. */
async function chunkedPut(bucket: string, key: string, data: Buffer, chunk: number, tamper?: (body: Buffer) => void): Promise<{ status: number; body: string; etag?: string }> {
  const url = new URL(`${t.url}/${bucket}/${key}`);
  const at = new Date();
  const amzDate = at.toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/us-east-1/s3/aws4_request`;
  const hmac = (k: Buffer | string, s: string) => createHmac('sha256', k).update(s).digest();
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${t.key.secret}`, day), 'us-east-1'), 's3'), 'aws4_request');
  const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
  const pieces: Buffer[] = [];
  for (let off = 0; ; off += chunk) {
    pieces.push(data.subarray(off, off + chunk));
    if (off >= data.length) break;
  }
  const framing = pieces.reduce((n, p) => n + p.length.toString(16).length + ';chunk-signature='.length + 64 + 4 + p.length, 0);
  const signer = new SignatureV4({ credentials: { accessKeyId: t.key.keyId, secretAccessKey: t.key.secret }, region: 'us-east-1', service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false });
  const signed = await signer.sign({
    method: 'PUT', protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: url.pathname,
    headers: {
      host: url.host, 'content-encoding': 'aws-chunked', 'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
      'x-amz-decoded-content-length': String(data.length), 'content-length': String(framing),
    },
  }, { signingDate: at });
  let previous = /Signature=([0-9a-f]{64})/.exec(signed.headers.authorization!)![1]!;
  const body = Buffer.concat(pieces.flatMap((p) => {
    previous = hmac(signingKey, ['AWS4-HMAC-SHA256-PAYLOAD', amzDate, scope, previous, sha(''), sha(p)].join('\n')).toString('hex');
    return [Buffer.from(`${p.length.toString(16)};chunk-signature=${previous}\r\n`), p, Buffer.from('\r\n')];
  }));
  expect(body.length).toBe(framing);
  tamper?.(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'PUT', headers: signed.headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, etag: res.headers.etag }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
