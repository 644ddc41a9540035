/**
 * What the outside attack pass on the one lock found (docs/security.md "An outside attack pass"),
 * each kept as a test that failed before its fix: a trickling client held its slot after its
 * 408, a write-only key read open uploads' names and part MD5s over S3, a Content-Type that is
 * no media type answered 500, and a confined key could rename or delete its own folder.
 */
import net from 'node:net';
import { ListMultipartUploadsCommand, ListPartsCommand, CreateMultipartUploadCommand, UploadPartCommand, DeleteBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError } from '../helpers/api.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectS3Error, makeKey, s3Client } from '../helpers/s3-api.js';

const HEADERS_TIMEOUT_MS = 500;
let o: TestOrigin;
let edge: TestEdge;

beforeAll(async () => {
  o = await startTestOrigin({ COFFER_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS) });
  edge = await startTestEdge(o, () => ({ COFFER_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS) }));
});
afterAll(async () => {
  await edge?.close();
  await o?.close();
});

/**
 * Trickles a header line every 200 ms and never finishes the headers. Resolves with what the
 * server answered once it closed the connection; rejects if it is still open after 10 s.
 */
function trickle(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    // Half-open allowed: like the attacker's client, it goes on sending after the server's FIN.
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => { answer += c; });
    socket.on('error', () => {});
    const pump = setInterval(() => { if (socket.writable) socket.write('X-Slow: 1\r\n'); }, 200);
    const give = setTimeout(() => {
      clearInterval(pump);
      socket.destroy();
      reject(new Error(`still open after 10 s; answered: ${answer.split('\r\n')[0]}`));
    }, 10_000);
    socket.on('close', () => {
      clearInterval(pump);
      clearTimeout(give);
      resolve(answer);
    });
  });
}

describe('a client that trickles its headers', () => {
  test('is answered 408 and loses its connection at the origin, though it keeps sending', async () => {
    expect(await trickle(o.origin.port)).toMatch(/^HTTP\/1\.1 408 /);
  });

  test('is answered 408 and loses its connection at the edge, though it keeps sending', async () => {
    expect(await trickle(edge.edge.port)).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe('S3', () => {
  test('a write-only key reads neither the names of open uploads nor their parts\' MD5s', async () => {
    const folder = await o.post('/collections/folder/create', { name: 'uploads-seen', visibility: 'Private' });
    expect(folder.status).toBe(200);
    const owner = s3Client(o.origin.s3Url, await makeKey(o, ['read', 'write'])).client;
    const at = { Bucket: 'uploads-seen', Key: 'secret-plans.bin' };
    const { UploadId } = await owner.send(new CreateMultipartUploadCommand(at));
    await owner.send(new UploadPartCommand({ ...at, UploadId, PartNumber: 1, Body: Buffer.from('hello') }));

    const writeOnly = s3Client(o.origin.s3Url, await makeKey(o, ['write'])).client;
    await expectS3Error(writeOnly.send(new ListMultipartUploadsCommand({ Bucket: at.Bucket })), 403, 'AccessDenied');
    await expectS3Error(writeOnly.send(new ListPartsCommand({ ...at, UploadId })), 403, 'AccessDenied');
    // It may still upload.
    await writeOnly.send(new PutObjectCommand({ Bucket: at.Bucket, Key: 'drop.txt', Body: 'x' }));
    owner.destroy();
    writeOnly.destroy();
  });

  test('a Content-Type that is no media type is the client\'s error (400), not a fault to retry', async () => {
    await o.post('/collections/folder/create', { name: 'odd-types', visibility: 'Private' });
    const c = s3Client(o.origin.s3Url, await makeKey(o, ['read', 'write'])).client;
    for (const ContentType of [';', 'a/b c', 'image/png, text/html']) {
      await expectS3Error(c.send(new PutObjectCommand({ Bucket: 'odd-types', Key: 'x.bin', Body: 'hello', ContentType })), 400, 'InvalidArgument');
    }
    c.destroy();
  });
});

describe("a confined key and its own folder", () => {
  test('it cannot rename, move or delete the folder it is confined to; it may switch its visibility', async () => {
    const top = (await o.post('/collections/folder/create', { name: 'tenant-own', visibility: 'Private' })).body.folder_id;
    const other = (await o.post('/collections/folder/create', { name: 'tenant-other', visibility: 'Private' })).body.folder_id;
    const made = await o.post('/collections/keys/create', { name: 'own', scopes: ['read', 'write'], folder_id: top });
    const as = { headers: { authorization: `Bearer ${made.body.key}` } };
    expectError(await o.post('/collections/folder/update', { folder_id: top, name: 'renamed' }, as), 403, 'forbidden');
    expectError(await o.post('/collections/folder/update', { folder_id: top, parent_id: other }, as), 403, 'forbidden');
    expectError(await o.post('/collections/folder/delete', { folder_id: top, recursive: true }, as), 403, 'forbidden');
    expect((await o.post('/collections/folder/update', { folder_id: top, visibility: 'Public' }, as)).status).toBe(200);
    const s3 = s3Client(o.origin.s3Url, { keyId: made.body.key_id, secret: made.body.key }).client;
    await expectS3Error(s3.send(new DeleteBucketCommand({ Bucket: 'tenant-own' })), 403, 'AccessDenied');
    s3.destroy();
    expect((await o.post('/collections/folder/get', { folder_id: top })).body).toMatchObject({ name: 'tenant-own', parent_id: null });
  });
});
