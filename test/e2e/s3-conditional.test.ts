/**
 * S3's conditional writes (contract §12; docs/s3.md), as S3 documents them: PutObject and
 * CompleteMultipartUpload with `If-None-Match: *` write only where the key has no object and
 * with `If-Match` only over the object of that ETag; otherwise 412 PreconditionFailed naming
 * the condition (404 NoSuchKey for If-Match where there is no object), and If-None-Match with
 * an ETag is 501 NotImplemented. Racing conditional writes of one key have exactly one winner,
 * whose bytes the object holds. A Complete refused before its parts were joined leaves the
 * upload open. CopyObject takes the same conditions on its destination. Run on both storage
 * configurations.
 */
import { createHash, randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateMultipartUploadCommand, GetObjectCommand, ListMultipartUploadsCommand, PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { expectS3Error, filesIn, folderAt } from '../helpers/s3-api.js';
import { PYTHON } from '../helpers/s3-clients.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const BOTO3_SCRIPT = resolve(dirname(fileURLToPath(import.meta.url)), '../helpers/boto3-conditional.py');

const t = useS3Fixture('c');

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
const read = async (Bucket: string, Key: string) => Buffer.from(await (await t.s3.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToByteArray());

/** Each call's outcome: 'ok', or the S3 error's status and code. */
async function outcomes(calls: Array<Promise<unknown>>): Promise<Array<'ok' | string>> {
  const settled = await Promise.allSettled(calls);
  return settled.map((s) => {
    if (s.status === 'fulfilled') return 'ok';
    const e = s.reason as { name?: string; $metadata?: { httpStatusCode?: number } };
    return `${e.$metadata?.httpStatusCode} ${e.name}`;
  });
}

describe('conditional PutObject', () => {
  test('If-None-Match: * writes a new key once; a second is 412 naming the condition, and the object keeps the first bytes', async () => {
    const Bucket = await t.newBucket();
    await t.s3.send(new PutObjectCommand({ Bucket, Key: 'a/once.txt', Body: 'first', IfNoneMatch: '*' }));
    const e = await expectS3Error(t.s3.send(new PutObjectCommand({ Bucket, Key: 'a/once.txt', Body: 'second', IfNoneMatch: '*' })), 412, 'PreconditionFailed');
    expect(e.message).toMatch(/^At least one of the pre-conditions you specified did not hold/);
    expect((await read(Bucket, 'a/once.txt')).toString()).toBe('first');
    // Nothing of the refused write is left: one file of the name.
    expect((await filesIn(t.o, await folderAt(t.o, `${Bucket}/a`))).map((f) => f.name)).toEqual(['once.txt']);
  });

  test('If-Match writes over the object of that ETag (quoted or not); another ETag is 412; no object is 404 NoSuchKey', async () => {
    const Bucket = await t.newBucket();
    await t.s3.send(new PutObjectCommand({ Bucket, Key: 'k', Body: 'v1' }));
    await expectS3Error(t.s3.send(new PutObjectCommand({ Bucket, Key: 'k', Body: 'v2', IfMatch: `"${md5(Buffer.from('other'))}"` })), 412, 'PreconditionFailed');
    await t.s3.send(new PutObjectCommand({ Bucket, Key: 'k', Body: 'v2', IfMatch: `"${md5(Buffer.from('v1'))}"` }));
    await t.s3.send(new PutObjectCommand({ Bucket, Key: 'k', Body: 'v3', IfMatch: md5(Buffer.from('v2')) }));
    expect((await read(Bucket, 'k')).toString()).toBe('v3');
    await expectS3Error(t.s3.send(new PutObjectCommand({ Bucket, Key: 'missing', Body: 'x', IfMatch: md5(Buffer.from('v3')) })), 404, 'NoSuchKey');
  });

  test('If-None-Match with an ETag, or both headers, is 501 NotImplemented', async () => {
    const Bucket = await t.newBucket();
    await expectS3Error(t.s3.send(new PutObjectCommand({ Bucket, Key: 'k', Body: 'x', IfNoneMatch: '"abc"' })), 501, 'NotImplemented');
    await expectS3Error(t.s3.send(new PutObjectCommand({ Bucket, Key: 'k', Body: 'x', IfNoneMatch: '*', IfMatch: '"abc"' })), 501, 'NotImplemented');
  });

  test('racing If-None-Match: * PutObjects of one key: exactly one wins, the others are 412, and the object is the winner\'s bytes', async () => {
    const Bucket = await t.newBucket();
    const bodies = Array.from({ length: 5 }, () => randomBytes(64 * 1024 + 17));
    const seen = await outcomes(bodies.map((Body) => t.s3.send(new PutObjectCommand({ Bucket, Key: 'race.bin', Body, IfNoneMatch: '*' }))));
    expect(seen.filter((s) => s === 'ok')).toHaveLength(1);
    expect(seen.filter((s) => s !== 'ok')).toEqual(Array(4).fill('412 PreconditionFailed'));
    const winner = bodies[seen.indexOf('ok')]!;
    expect((await read(Bucket, 'race.bin')).equals(winner)).toBe(true);
  });
});

test('CopyObject onto its destination with If-None-Match: * or If-Match, as PutObject', async () => {
  const Bucket = await t.newBucket();
  await t.s3.send(new PutObjectCommand({ Bucket, Key: 'src', Body: 'source' }));
  await t.s3.send(new PutObjectCommand({ Bucket, Key: 'dst', Body: 'there' }));
  const copy = (input: { IfNoneMatch?: string; IfMatch?: string }, Key = 'dst') => t.s3.send(new CopyObjectCommand({ Bucket, Key, CopySource: `${Bucket}/src`, ...input }));
  await expectS3Error(copy({ IfNoneMatch: '*' }), 412, 'PreconditionFailed');
  await expectS3Error(copy({ IfMatch: `"${md5(Buffer.from('other'))}"` }), 412, 'PreconditionFailed');
  expect((await read(Bucket, 'dst')).toString()).toBe('there');
  await copy({ IfMatch: `"${md5(Buffer.from('there'))}"` });
  expect((await read(Bucket, 'dst')).toString()).toBe('source');
  await copy({ IfNoneMatch: '*' }, 'new');
  expect((await read(Bucket, 'new')).toString()).toBe('source');
});

describe('conditional CompleteMultipartUpload', () => {
  async function upload(Bucket: string, Key: string, body: Buffer): Promise<{ UploadId: string; Parts: Array<{ PartNumber: number; ETag: string }> }> {
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
    const { ETag } = await t.s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body: body }));
    return { UploadId: UploadId!, Parts: [{ PartNumber: 1, ETag: ETag! }] };
  }

  test('racing If-None-Match: * Completes of one key: one wins, the other is 412 and its upload stays open', async () => {
    const Bucket = await t.newBucket();
    const bodies = [randomBytes(300_001), randomBytes(300_002)];
    const uploads = await Promise.all(bodies.map((b) => upload(Bucket, 'big.bin', b)));
    const seen = await outcomes(uploads.map((u) => t.s3.send(new CompleteMultipartUploadCommand({
      Bucket, Key: 'big.bin', UploadId: u.UploadId, MultipartUpload: { Parts: u.Parts }, IfNoneMatch: '*',
    }))));
    expect([...seen].sort()).toEqual(['412 PreconditionFailed', 'ok']);
    const won = seen.indexOf('ok');
    expect((await read(Bucket, 'big.bin')).equals(bodies[won]!)).toBe(true);
    const open = (await t.s3.send(new ListMultipartUploadsCommand({ Bucket }))).Uploads?.map((u) => u.UploadId);
    expect(open).toEqual([uploads[1 - won]!.UploadId]);
    // Refused before its parts were joined: it completes without the condition.
    const loser = uploads[1 - won]!;
    await t.s3.send(new CompleteMultipartUploadCommand({ Bucket, Key: 'big.bin', UploadId: loser.UploadId, MultipartUpload: { Parts: loser.Parts } }));
    expect((await read(Bucket, 'big.bin')).equals(bodies[1 - won]!)).toBe(true);
  });

  test('If-Match on Complete: another ETag is 412, no object is 404 NoSuchKey, the right one completes', async () => {
    const Bucket = await t.newBucket();
    const u = await upload(Bucket, 'm.bin', Buffer.from('parts'));
    const complete = (IfMatch: string) => t.s3.send(new CompleteMultipartUploadCommand({ Bucket, Key: 'm.bin', UploadId: u.UploadId, MultipartUpload: { Parts: u.Parts }, IfMatch }));
    await expectS3Error(complete(`"${md5(Buffer.from('x'))}"`), 404, 'NoSuchKey');
    await t.s3.send(new PutObjectCommand({ Bucket, Key: 'm.bin', Body: 'single' }));
    await expectS3Error(complete(`"${md5(Buffer.from('x'))}"`), 412, 'PreconditionFailed');
    await complete(`"${md5(Buffer.from('single'))}"`);
    expect((await read(Bucket, 'm.bin')).toString()).toBe('parts');
  });
});

test('boto3: put_object and complete_multipart_upload with IfNoneMatch and IfMatch', async () => {
  const Bucket = await t.newBucket();
  const seen = JSON.parse(await t.c.ok(PYTHON, [BOTO3_SCRIPT, Bucket]));
  expect(seen).toEqual({
    first: 'ok', second: [412, 'PreconditionFailed', 'If-None-Match'], body: 'first',
    match_wrong: [412, 'PreconditionFailed', 'If-Match'], match_right: 'ok', match_missing: [404, 'NoSuchKey', null], body_after: 'fourth',
    complete_refused: [412, 'PreconditionFailed', 'If-None-Match'], still_open: true, complete_if_match: 'ok', body_multipart: 'multipart',
  });
});
