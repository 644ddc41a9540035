/**
 * A signed payload's SHA-256, hashed once (src/s3/payload.ts, src/core/sha256-relay.ts;
 * bench/README.md, "S3 benchmark"): a PutObject body over several parts, sent in pieces that
 * do not fall on 1 MiB, is stored with the SHA-256 of exactly its bytes; a body that does not
 * match its signed hash is XAmzContentSHA256Mismatch and nothing is stored, whichever part
 * the difference is in; an x-amz-checksum-sha256 beside it is checked against the same digest.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { filesIn, folderAt, makeKey, s3Client, type S3Key } from '../helpers/s3-api.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';

const MiB = 1024 * 1024;

let o: TestOrigin;
let key: S3Key;
let s3: S3Client;

beforeAll(async () => {
  o = await startTestOrigin({ COFFER_LOG_LEVEL: 'warn' });
  key = await makeKey(o);
  s3 = s3Client(o.origin.s3Url, key).client;
});
afterAll(async () => {
  s3?.destroy();
  await o?.close();
});

async function newBucket(): Promise<string> {
  const Bucket = `h-${randomBytes(5).toString('hex')}`;
  await s3.send(new CreateBucketCommand({ Bucket }));
  return Bucket;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Pieces of odd sizes, as a socket might hand them on. */
async function* pieces(body: Buffer): AsyncGenerator<Buffer> {
  for (let at = 0, n = 0; at < body.length; n++) {
    const size = [65_521, 300_007, 1_048_577, 17][n % 4]!;
    yield body.subarray(at, at + size);
    at += size;
  }
}

/** PUT signed over `declared` as the payload's SHA-256, the body sent in pieces. */
function put(path: string, body: Buffer, declared: string, extra: Record<string, string> = {}): Promise<RawAnswer> {
  const url = new URL(o.origin.s3Url);
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const scope = `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`;
  const headers: Record<string, string> = { ...extra, host: url.host, 'x-amz-content-sha256': declared, 'x-amz-date': amzDate };
  const names = Object.keys(headers).sort();
  const canonical = ['PUT', path, '', names.map((n) => `${n}:${headers[n]}\n`).join(''), names.join(';'), declared].join('\n');
  const hmac = (k: Buffer | string, t: string) => createHmac('sha256', k).update(t).digest();
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${key.secret}`, amzDate.slice(0, 8)), 'us-east-1'), 's3'), 'aws4_request');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${key.keyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${hmac(signingKey, toSign).toString('hex')}`;
  headers['content-length'] = String(body.length);
  return rawRequest(o.origin.s3Url, path, { method: 'PUT', headers, body: pieces(body), timeoutMs: 30_000 });
}

describe('a signed PutObject over several parts', () => {
  test('is stored with the SHA-256 of its bytes, and its ETag is their MD5', async () => {
    const b = await newBucket();
    const body = randomBytes(11 * MiB + 12_345);
    const a = await put(`/${b}/big.bin`, body, sha256(body));
    expect(a.status).toBe(200);
    expect(a.headers.etag).toBe(`"${createHash('md5').update(body).digest('hex')}"`);
    const [file] = await filesIn(o, await folderAt(o, b));
    const record = await o.post('/collections/file/get', { file_id: file!.file_id });
    expect([record.body.size, record.body.sha256]).toEqual([body.length, sha256(body)]);
  });

  test('a difference in its first, a middle or its last part is XAmzContentSHA256Mismatch, and nothing is stored', async () => {
    const b = await newBucket();
    const body = randomBytes(11 * MiB + 3);
    for (const at of [10, 6 * MiB, body.length - 1]) {
      const sent = Buffer.from(body);
      sent[at] = sent[at]! ^ 0xff;
      const a = await put(`/${b}/changed-${at}.bin`, sent, sha256(body));
      expect([at, a.status, /<Code>([^<]+)<\/Code>/.exec(a.body.toString())?.[1]]).toEqual([at, 400, 'XAmzContentSHA256Mismatch']);
    }
    expect((await o.post('/collections/list', { folder_id: await folderAt(o, b), limit: 100 })).body.files).toEqual([]);
  });

  test('an x-amz-checksum-sha256 beside it is checked against the same digest', async () => {
    const b = await newBucket();
    const body = randomBytes(6 * MiB + 1);
    const base64 = createHash('sha256').update(body).digest('base64');
    const good = await put(`/${b}/sum.bin`, body, sha256(body), { 'x-amz-checksum-sha256': base64 });
    expect([good.status, good.headers['x-amz-checksum-sha256']]).toEqual([200, base64]);
    const wrong = await put(`/${b}/wrong.bin`, body, sha256(body), { 'x-amz-checksum-sha256': createHash('sha256').update('other').digest('base64') });
    expect([wrong.status, /<Code>([^<]+)<\/Code>/.exec(wrong.body.toString())?.[1]]).toEqual([400, 'BadDigest']);
    expect((await filesIn(o, await folderAt(o, b))).map((f) => f.name)).toEqual(['sum.bin']);
  });
});
