/**
 * SigV4 as the S3 interface checks it, against AWS's own published examples (the S3 API
 * reference's "Signature Calculations" pages) and against @smithy/signature-v4, the signer
 * inside the AWS SDK for JavaScript: header auth, presigned query, signed chunks and trailers,
 * unsigned trailers with checksums, and every way a request can fail.
 */
import { createHash, createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { verifyRequest, type CredentialLookup, type IncomingSigned, type Verified } from '../../src/s3/sigv4.js';
import { Payload } from '../../src/s3/payload.js';
import { isS3Error } from '../../src/s3/errors.js';
import { createChecksum } from '../../src/s3/checksums.js';
import { headerMap } from '../../src/s3/sigv4.js';
import type { Caller } from '../../src/core/access.js';

const bytes = (d: string | ArrayBuffer | ArrayBufferView): Buffer =>
  typeof d === 'string' ? Buffer.from(d) : ArrayBuffer.isView(d) ? Buffer.from(d.buffer, d.byteOffset, d.byteLength) : Buffer.from(d);

/** The SDK signer's hash interface over node:crypto (HMAC when given a secret). */
class Sha256 {
  private readonly h;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.h.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return this.h.digest();
  }
}

const EXAMPLE_KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
const EXAMPLE_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const EXAMPLE_TIME = Date.UTC(2013, 4, 24);
const CALLER: Caller = { kind: 'key', keyId: EXAMPLE_KEY_ID, scopes: new Set(['read', 'write']), folderId: null };

/** What the service answers for the example key: the HMAC key SigV4 starts from. */
const lookup: CredentialLookup = async (keyId) =>
  keyId === EXAMPLE_KEY_ID ? { ok: true, caller: CALLER, secret: Buffer.from(`AWS4${EXAMPLE_SECRET}`) } : { ok: false, reason: 'unknown' };

const raw = (headers: Record<string, string>): string[] => Object.entries(headers).flat();

async function failure(p: Promise<unknown>): Promise<{ code: string; status: number }> {
  try {
    await p;
  } catch (err) {
    if (isS3Error(err)) return { code: err.code, status: err.status };
    throw err;
  }
  throw new Error('expected a refusal');
}

async function drain(payload: Payload): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const piece of payload) out.push(Buffer.from(piece));
  return Buffer.concat(out);
}

describe('header auth (AWS example: GET with a Range)', () => {
  const request: IncomingSigned = {
    method: 'GET',
    url: '/test.txt',
    rawHeaders: raw({
      Host: 'examplebucket.s3.amazonaws.com',
      Range: 'bytes=0-9',
      'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      'x-amz-date': '20130524T000000Z',
      Authorization: 'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    }),
  };

  it('accepts the published signature and names the caller', async () => {
    const v = await verifyRequest(request, lookup, EXAMPLE_TIME);
    expect(v.caller).toBe(CALLER);
    expect(v.scope).toBe('20130524/us-east-1/s3/aws4_request');
    expect(v.payload).toEqual({ kind: 'sha256', hex: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' });
  });

  it('refuses a changed request, an unknown key, a skewed clock and unsigned x-amz headers', async () => {
    expect(await failure(verifyRequest({ ...request, url: '/test.txt?x=1' }, lookup, EXAMPLE_TIME))).toEqual({ code: 'SignatureDoesNotMatch', status: 403 });
    const changed = request.rawHeaders.map((h) => (h === 'bytes=0-9' ? 'bytes=0-10' : h));
    expect(await failure(verifyRequest({ ...request, rawHeaders: changed }, lookup, EXAMPLE_TIME))).toEqual({ code: 'SignatureDoesNotMatch', status: 403 });
    expect(await failure(verifyRequest(request, async () => ({ ok: false, reason: 'unknown' }), EXAMPLE_TIME))).toEqual({ code: 'InvalidAccessKeyId', status: 403 });
    expect(await failure(verifyRequest(request, async () => ({ ok: false, reason: 'revoked' }), EXAMPLE_TIME))).toEqual({ code: 'InvalidAccessKeyId', status: 403 });
    expect(await failure(verifyRequest(request, lookup, EXAMPLE_TIME + 16 * 60_000))).toEqual({ code: 'RequestTimeTooSkewed', status: 403 });
    await verifyRequest(request, lookup, EXAMPLE_TIME + 14 * 60_000);
    const extra = [...request.rawHeaders, 'x-amz-acl', 'public-read'];
    expect(await failure(verifyRequest({ ...request, rawHeaders: extra }, lookup, EXAMPLE_TIME))).toEqual({ code: 'AccessDenied', status: 403 });
    expect(await failure(verifyRequest({ ...request, rawHeaders: raw({ Host: 'h' }) }, lookup, EXAMPLE_TIME))).toEqual({ code: 'AccessDenied', status: 403 });
    const v2 = raw({ Host: 'h', Authorization: 'AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=' });
    expect(await failure(verifyRequest({ ...request, rawHeaders: v2 }, lookup, EXAMPLE_TIME))).toEqual({ code: 'InvalidArgument', status: 400 });
    const badScope = request.rawHeaders.map((h) => h.replace('/s3/', '/ec2/'));
    expect(await failure(verifyRequest({ ...request, rawHeaders: badScope }, lookup, EXAMPLE_TIME))).toEqual({ code: 'AuthorizationHeaderMalformed', status: 400 });
  });
});

describe('presigned query (AWS example: GET for 86400 seconds)', () => {
  const url = '/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404';
  const request: IncomingSigned = { method: 'GET', url, rawHeaders: raw({ Host: 'examplebucket.s3.amazonaws.com' }) };

  it('accepts the published link until it expires, then refuses it', async () => {
    expect((await verifyRequest(request, lookup, EXAMPLE_TIME + 3_600_000)).payload).toEqual({ kind: 'unsigned' });
    expect(await failure(verifyRequest(request, lookup, EXAMPLE_TIME + 86_401_000))).toEqual({ code: 'AccessDenied', status: 403 });
    expect(await failure(verifyRequest({ ...request, url: url.replace('86400', '86401') }, lookup, EXAMPLE_TIME))).toEqual({ code: 'SignatureDoesNotMatch', status: 403 });
    expect(await failure(verifyRequest({ ...request, method: 'DELETE' }, lookup, EXAMPLE_TIME))).toEqual({ code: 'SignatureDoesNotMatch', status: 403 });
    const both = { ...request, rawHeaders: [...request.rawHeaders, 'Authorization', 'AWS4-HMAC-SHA256 Credential=x'] };
    expect(await failure(verifyRequest(both, lookup, EXAMPLE_TIME))).toEqual({ code: 'InvalidArgument', status: 400 });
  });
});

describe('signed chunks (AWS example: 66560 bytes in chunks of 64 KiB)', () => {
  const seed = '4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9';
  const headers = {
    Host: 's3.amazonaws.com',
    'x-amz-date': '20130524T000000Z',
    'x-amz-storage-class': 'REDUCED_REDUNDANCY',
    Authorization: `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=${seed}`,
    'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
    'Content-Encoding': 'aws-chunked',
    'x-amz-decoded-content-length': '66560',
    'Content-Length': '66824',
  };
  const request: IncomingSigned = { method: 'PUT', url: '/examplebucket/chunkObject.txt', rawHeaders: raw(headers) };
  const data = Buffer.alloc(66560, 'a');
  const body = (sigs = ['ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648', '0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497', 'b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9']) =>
    Buffer.concat([
      Buffer.from(`10000;chunk-signature=${sigs[0]}\r\n`), data.subarray(0, 65536), Buffer.from('\r\n'),
      Buffer.from(`400;chunk-signature=${sigs[1]}\r\n`), data.subarray(65536), Buffer.from('\r\n'),
      Buffer.from(`0;chunk-signature=${sigs[2]}\r\n\r\n`),
    ]);
  /** The body in pieces of every size, so chunk headers straddle reads. */
  const pieces = (b: Buffer, size: number) => Readable.from(Array.from({ length: Math.ceil(b.length / size) }, (_, i) => b.subarray(i * size, (i + 1) * size)));

  it('decodes the published body, checking every chunk signature, however it is split', async () => {
    const v = await verifyRequest(request, lookup, EXAMPLE_TIME);
    expect(v.payload).toEqual({ kind: 'signed-chunks', trailer: false });
    expect(body().length).toBe(66824);
    for (const size of [7, 100, 65_536, 1 << 20]) {
      const payload = new Payload(pieces(body(), size), v, headerMap(request.rawHeaders));
      expect((await drain(payload)).equals(data), `pieces of ${size}`).toBe(true);
      expect(payload.md5Hex).toBe(createHash('md5').update(data).digest('hex'));
    }
  });

  it('refuses a chunk whose bytes or signature changed, a missing chunk and a short body', async () => {
    const v = await verifyRequest(request, lookup, EXAMPLE_TIME);
    const tampered = body();
    tampered[200] = 'b'.charCodeAt(0);
    const cases: Array<[string, Buffer, string]> = [
      ['a changed byte', tampered, 'SignatureDoesNotMatch'],
      ['a changed final signature', body(['ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648', '0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497', '0'.repeat(64)]), 'SignatureDoesNotMatch'],
      ['a cut body', body().subarray(0, 60_000), 'IncompleteBody'],
      // Chunk sections: 88 + 65536 + 2 bytes, 86 + 1024 + 2, then the final 86.
      ['chunks in another order', Buffer.concat([body().subarray(65_626, 66_738), body().subarray(0, 65_626), body().subarray(66_738)]), 'SignatureDoesNotMatch'],
    ];
    for (const [what, b, code] of cases) {
      const payload = new Payload(pieces(b, 4096), v, headerMap(request.rawHeaders));
      expect(await failure(drain(payload)), what).toMatchObject({ code });
    }
  });
});

/** A request signed by the AWS SDK's own signer, as the SDK sends it. */
async function sdkSigned(method: string, path: string, headers: Record<string, string>, query: Record<string, string> = {}, secret = EXAMPLE_SECRET, at = new Date(EXAMPLE_TIME)) {
  const signer = new SignatureV4({ credentials: { accessKeyId: EXAMPLE_KEY_ID, secretAccessKey: secret }, region: 'eu-west-3', service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false });
  const signed = await signer.sign({ method, protocol: 'http:', hostname: 'localhost', port: 8082, path, query, headers: { host: 'localhost:8082', ...headers } }, { signingDate: at });
  const search = new URLSearchParams(signed.query as Record<string, string>).toString().replace(/\+/g, '%20');
  return { method, url: search ? `${path}?${search}` : path, rawHeaders: raw(signed.headers) } satisfies IncomingSigned;
}

/** An aws-chunked body with signed chunks and a signed trailer, as the chunked signer makes it. */
function signedTrailerBody(v: Verified, data: Buffer, chunk: number, checksum: { name: string; value: string }) {
  const sign = (text: string) => createHmac('sha256', v.signingKey).update(text).digest('hex');
  const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
  let previous = v.signature;
  const parts: Buffer[] = [];
  for (let off = 0; ; off += chunk) {
    const piece = data.subarray(off, off + chunk);
    previous = sign(['AWS4-HMAC-SHA256-PAYLOAD', v.amzDate, v.scope, previous, sha(''), sha(piece)].join('\n'));
    parts.push(Buffer.from(`${piece.length.toString(16)};chunk-signature=${previous}\r\n`), piece);
    if (piece.length === 0) break;
    parts.push(Buffer.from('\r\n'));
  }
  const trailer = `${checksum.name}:${checksum.value}\n`;
  const trailerSig = sign(['AWS4-HMAC-SHA256-TRAILER', v.amzDate, v.scope, previous, sha(trailer)].join('\n'));
  parts.push(Buffer.from(`${checksum.name}:${checksum.value}\r\nx-amz-trailer-signature:${trailerSig}\r\n\r\n`));
  return Buffer.concat(parts);
}

describe('as the AWS SDK signs', () => {
  const data = Buffer.from('the quick brown fox '.repeat(1000));

  it('header auth with a payload SHA-256, a key with characters to escape, and a query', async () => {
    const sha = createHash('sha256').update(data).digest('hex');
    const req = await sdkSigned('PUT', '/bucket/a%20b/%C3%A9t%C3%A9%2Bx.txt', { 'x-amz-content-sha256': sha, 'content-length': String(data.length) }, { 'x-id': 'PutObject' });
    const v = await verifyRequest(req, lookup, EXAMPLE_TIME);
    const payload = new Payload(Readable.from([data.subarray(0, 10), data.subarray(10)]), v, headerMap(req.rawHeaders));
    expect((await drain(payload)).equals(data)).toBe(true);
    const wrong = new Payload(Readable.from([Buffer.from(data).fill(1, 0, 1)]), v, headerMap(req.rawHeaders));
    expect(await failure(drain(wrong))).toEqual({ code: 'XAmzContentSHA256Mismatch', status: 400 });
  });

  it('a presigned GET with a query of its own', async () => {
    const signer = new SignatureV4({ credentials: { accessKeyId: EXAMPLE_KEY_ID, secretAccessKey: EXAMPLE_SECRET }, region: 'us-east-1', service: 's3', sha256: Sha256, uriEscapePath: false });
    // As @aws-sdk/s3-request-presigner does: an unsigned payload, said in the query.
    const presigned = await signer.presign({ method: 'GET', protocol: 'http:', hostname: 'localhost', path: '/bucket/dir/file.txt', query: { 'response-content-type': 'text/plain; charset=utf-8', 'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD' }, headers: { host: 'localhost', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } }, { signingDate: new Date(EXAMPLE_TIME), expiresIn: 600 });
    const search = new URLSearchParams(presigned.query as Record<string, string>).toString().replace(/\+/g, '%20');
    const req: IncomingSigned = { method: 'GET', url: `/bucket/dir/file.txt?${search}`, rawHeaders: raw({ host: 'localhost' }) };
    expect((await verifyRequest(req, lookup, EXAMPLE_TIME + 599_000)).caller).toBe(CALLER);
    expect(await failure(verifyRequest(req, lookup, EXAMPLE_TIME + 601_000))).toMatchObject({ code: 'AccessDenied' });
  });

  it('signed chunks with a signed CRC32C trailer', async () => {
    const sum = createChecksum('crc32c');
    sum.update(data);
    const req = await sdkSigned('PUT', '/bucket/k', {
      'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER', 'content-encoding': 'aws-chunked',
      'x-amz-decoded-content-length': String(data.length), 'x-amz-trailer': 'x-amz-checksum-crc32c',
    });
    const v = await verifyRequest(req, lookup, EXAMPLE_TIME);
    const good = signedTrailerBody(v, data, 8192, { name: 'x-amz-checksum-crc32c', value: sum.digest() });
    const payload = new Payload(Readable.from([good]), v, headerMap(req.rawHeaders));
    expect((await drain(payload)).equals(data)).toBe(true);
    expect(payload.verifiedChecksum?.header).toBe('x-amz-checksum-crc32c');
    const wrongSum = signedTrailerBody(v, data, 8192, { name: 'x-amz-checksum-crc32c', value: 'AAAAAA==' });
    expect(await failure(drain(new Payload(Readable.from([wrongSum]), v, headerMap(req.rawHeaders))))).toEqual({ code: 'BadDigest', status: 400 });
    const forged = Buffer.from(good.toString('latin1').replace(/x-amz-trailer-signature:[0-9a-f]{64}/, `x-amz-trailer-signature:${'1'.repeat(64)}`), 'latin1');
    expect(await failure(drain(new Payload(Readable.from([forged]), v, headerMap(req.rawHeaders))))).toMatchObject({ code: 'SignatureDoesNotMatch' });
  });

  it('unsigned chunks with a checksum trailer of every algorithm, and a wrong one', async () => {
    for (const algorithm of ['crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'] as const) {
      const sum = createChecksum(algorithm);
      sum.update(data);
      const name = `x-amz-checksum-${algorithm}`;
      const req = await sdkSigned('PUT', '/bucket/k', {
        'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER', 'content-encoding': 'aws-chunked',
        'x-amz-decoded-content-length': String(data.length), 'x-amz-trailer': name,
      });
      const v = await verifyRequest(req, lookup, EXAMPLE_TIME);
      const encode = (value: string) => Buffer.concat([
        Buffer.from(`${(10_000).toString(16)}\r\n`), data.subarray(0, 10_000), Buffer.from('\r\n'),
        Buffer.from(`${(data.length - 10_000).toString(16)}\r\n`), data.subarray(10_000), Buffer.from('\r\n'),
        Buffer.from(`0\r\n${name}:${value}\r\n\r\n`),
      ]);
      expect((await drain(new Payload(Readable.from([encode(sum.digest())]), v, headerMap(req.rawHeaders)))).equals(data), algorithm).toBe(true);
      expect(await failure(drain(new Payload(Readable.from([encode('AAAAAAAAAAA=')]), v, headerMap(req.rawHeaders)))), algorithm).toEqual({ code: 'BadDigest', status: 400 });
    }
  });

  it('a checksum header and Content-MD5 on a plain body', async () => {
    const sum = createChecksum('sha1');
    sum.update(data);
    const md5 = createHash('md5').update(data).digest('base64');
    const req = await sdkSigned('PUT', '/bucket/k', { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'x-amz-checksum-sha1': sum.digest(), 'content-md5': md5, 'content-length': String(data.length) });
    const v = await verifyRequest(req, lookup, EXAMPLE_TIME);
    expect((await drain(new Payload(Readable.from([data]), v, headerMap(req.rawHeaders)))).equals(data)).toBe(true);
    const other = Buffer.from(data);
    other[0] = 0;
    expect(await failure(drain(new Payload(Readable.from([other]), v, headerMap(req.rawHeaders))))).toEqual({ code: 'BadDigest', status: 400 });
  });
});
