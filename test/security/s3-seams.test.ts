/**
 * The S3 interface where it meets the rest of the service (issue 23, findings 1, 7 and 10):
 * it is not on the Playground's origin and its object answers follow the edge's rules for user
 * bytes; a presigned URL's signed payload hash cannot be replaced by a header; XML bodies are
 * bounded by S3's limits before they are parsed, and only once the request is authenticated.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CreateBucketCommand, CreateMultipartUploadCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectS3Error, makeKey, s3Client, type S3Key } from '../helpers/s3-api.js';
import { presign } from '../helpers/s3-presign.js';
import { sha256 } from '../kit/index.js';

let o: TestOrigin;
let owner: S3Key;
let s3: S3Client;
let bucket: string;

beforeAll(async () => {
  o = await startTestOrigin({ COFFER_LOG_LEVEL: 'warn' });
  owner = await makeKey(o);
  s3 = s3Client(o.origin.s3Url, owner).client;
  bucket = `seams-${randomBytes(4).toString('hex')}`;
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const put = (Key: string, Body: string, ContentType: string) => s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body, ContentType }));
  await put('page.html', '<script>fetch("/session")</script>', 'text/html');
  await put('note.txt', '<script>fetch("/session")</script>', 'text/plain');
  await put('pic.svg', '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', 'image/svg+xml');
});
afterAll(async () => {
  s3?.destroy();
  await o?.close();
});

const link = (method: string, key: string, query: Record<string, string> = {}) => presign(o.origin.s3Url, owner, method, `/${bucket}/${key}`, query);
const shown = (res: Response) => ({
  status: res.status,
  type: res.headers.get('content-type'),
  disposition: res.headers.get('content-disposition')?.split(';')[0] ?? null,
  nosniff: res.headers.get('x-content-type-options'),
  sandbox: /^sandbox\b/.test(res.headers.get('content-security-policy') ?? ''),
});

describe('user bytes are never served by the Playground\'s origin (finding 1)', () => {
  test('the origin has no S3 routes: a presigned link pointed at {base_url}/s3 answers 404 without the bytes', async () => {
    const onPort = link('GET', 'page.html');
    const onOrigin = onPort.replace(o.origin.s3Url, `${o.url}/s3`);
    const res = await fetch(onOrigin);
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain('<script>');
    for (const r of o.origin.app.declaredRoutes) expect(r.url.startsWith('/s3'), r.url).toBe(false);
  });

  test('GetObject and HeadObject of active types are attachments, never sniffed, in a sandbox', async () => {
    for (const method of ['GET', 'HEAD']) {
      expect(shown(await fetch(link(method, 'page.html'), { method }))).toEqual({ status: 200, type: 'text/html', disposition: 'attachment', nosniff: 'nosniff', sandbox: true });
      expect(shown(await fetch(link(method, 'pic.svg'), { method }))).toEqual({ status: 200, type: 'image/svg+xml', disposition: 'attachment', nosniff: 'nosniff', sandbox: true });
    }
  });

  test('response-content-type cannot make bytes active, nor response-content-disposition make an active type inline', async () => {
    const asHtml = await fetch(link('GET', 'note.txt', { 'response-content-type': 'text/html; charset=utf-8' }));
    expect(shown(asHtml)).toEqual({ status: 200, type: 'text/html; charset=utf-8', disposition: 'attachment', nosniff: 'nosniff', sandbox: true });
    for (const type of ['application/xhtml+xml', 'image/svg+xml', 'text/javascript', 'application/xml', 'TEXT/HTML', 'text/html, text/plain']) {
      expect(shown(await fetch(link('GET', 'note.txt', { 'response-content-type': type }))).disposition, type).toBe('attachment');
    }
    const inline = await fetch(link('GET', 'page.html', { 'response-content-disposition': 'inline' }));
    expect(shown(inline).disposition).toBe('attachment');
    const ranged = await fetch(link('GET', 'page.html', { 'response-content-disposition': 'inline; filename="x.html"' }), { headers: { range: 'bytes=0-3' } });
    expect(shown(ranged)).toEqual({ status: 206, type: 'text/html', disposition: 'attachment', nosniff: 'nosniff', sandbox: true });
    // An attachment the link asks for is kept as asked.
    const named = await fetch(link('GET', 'page.html', { 'response-content-disposition': 'attachment; filename="saved.html"' }));
    expect(named.headers.get('content-disposition')).toBe('attachment; filename="saved.html"');
  });

  test('passive types stay inline, still unsniffed and sandboxed', async () => {
    const plain = await fetch(link('GET', 'note.txt'));
    expect(shown(plain)).toEqual({ status: 200, type: 'text/plain', disposition: null, nosniff: 'nosniff', sandbox: true });
    const json = await fetch(link('GET', 'page.html', { 'response-content-type': 'application/json' }));
    expect(shown(json)).toEqual({ status: 200, type: 'application/json', disposition: null, nosniff: 'nosniff', sandbox: true });
  });
});

describe('a presigned payload hash binds the body (finding 7)', () => {
  const signed = 'the bytes the link was made for';
  const other = '<script>other bytes</script>';

  test('a header cannot replace the signed X-Amz-Content-Sha256; a body that does not match it is refused; nothing is written', async () => {
    const url = link('PUT', 'bound.txt', { 'X-Amz-Content-Sha256': sha256(signed) });
    const swapped = await fetch(url, { method: 'PUT', body: other, headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } });
    expect(swapped.status).toBe(400);
    expect(await swapped.text()).toContain('<Code>InvalidArgument</Code>');
    const otherHash = await fetch(url, { method: 'PUT', body: other, headers: { 'x-amz-content-sha256': sha256(other) } });
    expect(otherHash.status).toBe(400);
    const mismatch = await fetch(url, { method: 'PUT', body: other });
    expect(mismatch.status).toBe(400);
    expect(await mismatch.text()).toContain('<Code>XAmzContentSHA256Mismatch</Code>');
    await expectS3Error(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'bound.txt' })), 404, 'NotFound');
    // The body it was signed for goes in, with or without the header repeating the hash.
    expect((await fetch(url, { method: 'PUT', body: signed, headers: { 'x-amz-content-sha256': sha256(signed) } })).status).toBe(200);
    expect((await fetch(url, { method: 'PUT', body: signed })).status).toBe(200);
    expect((await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'bound.txt' }))).ContentLength).toBe(signed.length);
  });
});

describe('XML bodies are bounded before they are parsed, after authentication (finding 10)', () => {
  const FOUR_MIB = 4 * 1024 * 1024;
  const filled = (root: string, element: string, bytes: number) => {
    const open = `<${root}>`;
    const close = `</${root}>`;
    return open + element.repeat(Math.floor((bytes - open.length - close.length) / element.length)) + close;
  };
  const xmlError = async (res: Response) => ({ status: res.status, code: /<Code>(\w+)<\/Code>/.exec(await res.text())?.[1] });

  async function uploadId(key: string): Promise<string> {
    return (await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }))).UploadId!;
  }

  test('a 4 MiB CompleteMultipartUpload of empty elements is MalformedXML by its element count, not by a parse', async () => {
    const id = await uploadId('big.bin');
    const body = filled('CompleteMultipartUpload', '<Part/>', FOUR_MIB);
    const started = performance.now();
    const res = await fetch(link('POST', 'big.bin', { uploadId: id }), { method: 'POST', body });
    const text = await res.text();
    expect(res.status).toBe(400);
    expect(text).toContain('<Code>MalformedXML</Code>');
    expect(text).toContain('more elements than a body of at most 10000 parts');
    // Real time: a parse of 4 MiB of elements would take seconds of CPU.
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test('more parts than S3 allows is refused, however well-formed; so is a body larger than 10000 parts need', async () => {
    const id = await uploadId('many.bin');
    const part = '<Part><PartNumber>1</PartNumber><ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag></Part>';
    const many = await fetch(link('POST', 'many.bin', { uploadId: id }), { method: 'POST', body: filled('CompleteMultipartUpload', part, 10_001 * part.length + 60) });
    expect(await xmlError(many)).toEqual({ status: 400, code: 'MalformedXML' });
    const padded = `<CompleteMultipartUpload>${' '.repeat(6 * 1024 * 1024)}</CompleteMultipartUpload>`;
    const large = await fetch(link('POST', 'many.bin', { uploadId: id }), { method: 'POST', body: padded });
    expect(await xmlError(large)).toEqual({ status: 400, code: 'MalformedXML' });
  });

  test('DeleteObjects takes at most 1000 keys and the bytes they need', async () => {
    const keys = Array.from({ length: 1001 }, (_, i) => `<Object><Key>k${i}</Key></Object>`).join('');
    const url = presign(o.origin.s3Url, owner, 'POST', `/${bucket}`, { delete: '' });
    const tooMany = await fetch(url, { method: 'POST', body: `<Delete>${keys}</Delete>` });
    expect(await xmlError(tooMany)).toEqual({ status: 400, code: 'MalformedXML' });
    const empties = await fetch(url, { method: 'POST', body: filled('Delete', '<Object/>', 1_900_000) });
    const text = await empties.text();
    expect(empties.status).toBe(400);
    expect(text).toContain('more elements than a body of at most 1000 keys');
  });

  test('without a valid signature the body is refused by authentication, whatever it holds', async () => {
    const id = await uploadId('anon.bin');
    const body = filled('CompleteMultipartUpload', '<Part/>', FOUR_MIB);
    const anonymous = await fetch(`${o.origin.s3Url}/${bucket}/anon.bin?uploadId=${id}`, { method: 'POST', body });
    expect(await xmlError(anonymous)).toEqual({ status: 403, code: 'AccessDenied' });
    const forged = link('POST', 'anon.bin', { uploadId: id }).replace(/X-Amz-Signature=[0-9a-f]{64}/, `X-Amz-Signature=${'0'.repeat(64)}`);
    expect(await xmlError(await fetch(forged, { method: 'POST', body }))).toEqual({ status: 403, code: 'SignatureDoesNotMatch' });
  });
});
