/**
 * Conditional writes of one key racing through two origins that share one PostgreSQL
 * database and one blob store (contract §12; docs/s3.md): `If-None-Match: *` PutObjects and
 * CompleteMultipartUploads sent to both at once have exactly one winner, the others 412
 * PreconditionFailed, and either origin reads the winner's bytes. The origins take turns on
 * the key through the store's lock, not through memory they share.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  CompleteMultipartUploadCommand, CreateBucketCommand, CreateMultipartUploadCommand, GetObjectCommand, PutObjectCommand, UploadPartCommand, type S3Client,
} from '@aws-sdk/client-s3';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { createDatabase } from '../helpers/postgres.js';
import { makeKey, s3Client } from '../helpers/s3-api.js';

let a: TestOrigin;
let b: TestOrigin;
let dataDir = '';
let clients: S3Client[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'coffer-s3-cond-origins-'));
  const settings = { COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: 'cond-origins-key', COFFER_SIGNING_SECRET: 'cond-origins-secret', COFFER_LOG_LEVEL: 'warn' };
  const databaseUrl = await createDatabase();
  // One after the other: the second finds the blob store the first was given for the data dir.
  a = await startTestOrigin(settings, { databaseUrl });
  b = await startTestOrigin(settings, { databaseUrl });
  const key = await makeKey(a);
  clients = [s3Client(a.origin.s3Url, key).client, s3Client(b.origin.s3Url, key).client];
}, 120_000);
afterAll(async () => {
  for (const c of clients) c.destroy();
  await Promise.all([a?.close(), b?.close()]);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function outcomes(calls: Array<Promise<unknown>>): Promise<string[]> {
  return (await Promise.allSettled(calls)).map((s) => (s.status === 'fulfilled' ? 'ok' : `${(s.reason as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode} ${(s.reason as Error).name}`));
}

const read = async (c: S3Client, Bucket: string, Key: string) => Buffer.from(await (await c.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToByteArray());

test('If-None-Match: * PutObjects through both origins at once: one winner, the others 412', async () => {
  const Bucket = `o-${randomBytes(5).toString('hex')}`;
  await clients[0]!.send(new CreateBucketCommand({ Bucket }));
  const bodies = Array.from({ length: 6 }, () => randomBytes(200_000));
  const seen = await outcomes(bodies.map((Body, i) => clients[i % 2]!.send(new PutObjectCommand({ Bucket, Key: 'k.bin', Body, IfNoneMatch: '*' }))));
  expect(seen.filter((s) => s === 'ok')).toHaveLength(1);
  expect(seen.filter((s) => s !== 'ok')).toEqual(Array(5).fill('412 PreconditionFailed'));
  const winner = bodies[seen.indexOf('ok')]!;
  for (const c of clients) expect((await read(c, Bucket, 'k.bin')).equals(winner)).toBe(true);
});

test('If-None-Match: * Completes through both origins at once: one winner, the other 412', async () => {
  const Bucket = `o-${randomBytes(5).toString('hex')}`;
  await clients[0]!.send(new CreateBucketCommand({ Bucket }));
  const bodies = [randomBytes(300_000), randomBytes(300_000)];
  const uploads = await Promise.all(bodies.map(async (Body, i) => {
    const c = clients[i]!;
    const { UploadId } = await c.send(new CreateMultipartUploadCommand({ Bucket, Key: 'm.bin' }));
    const { ETag } = await c.send(new UploadPartCommand({ Bucket, Key: 'm.bin', UploadId, PartNumber: 1, Body }));
    return { UploadId: UploadId!, Parts: [{ PartNumber: 1, ETag: ETag! }] };
  }));
  const seen = await outcomes(uploads.map((u, i) => clients[i]!.send(new CompleteMultipartUploadCommand({
    Bucket, Key: 'm.bin', UploadId: u.UploadId, MultipartUpload: { Parts: u.Parts }, IfNoneMatch: '*',
  }))));
  expect([...seen].sort()).toEqual(['412 PreconditionFailed', 'ok']);
  const winner = bodies[seen.indexOf('ok')]!;
  for (const c of clients) expect((await read(c, Bucket, 'm.bin')).equals(winner)).toBe(true);
});
