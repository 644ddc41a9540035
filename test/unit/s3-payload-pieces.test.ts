/**
 * The aws-chunked decoder (s3/payload.ts) reads chunk headers and data from the socket's pieces
 * without joining whole pieces: a header cut anywhere, its CR and LF in two pieces, a header
 * spread over many tiny pieces, and one too long to be a header, on AWS's published example
 * (66560 bytes in signed chunks of 64 KiB).
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { headerMap, verifyRequest, type CredentialLookup, type IncomingSigned } from '../../src/s3/sigv4.js';
import { Payload } from '../../src/s3/payload.js';
import { isS3Error } from '../../src/s3/errors.js';
import type { Caller } from '../../src/core/access.js';

const KEY_ID = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const AT = Date.UTC(2013, 4, 24);
const CALLER: Caller = { kind: 'key', keyId: KEY_ID, scopes: new Set(['read', 'write']), folderId: null };
const lookup: CredentialLookup = async (keyId) => (keyId === KEY_ID ? { ok: true, caller: CALLER, secret: Buffer.from(`AWS4${SECRET}`) } : { ok: false, reason: 'unknown' });

const headers = {
  Host: 's3.amazonaws.com',
  'x-amz-date': '20130524T000000Z',
  'x-amz-storage-class': 'REDUCED_REDUNDANCY',
  Authorization: 'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9',
  'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
  'Content-Encoding': 'aws-chunked',
  'x-amz-decoded-content-length': '66560',
  'Content-Length': '66824',
};
const request: IncomingSigned = { method: 'PUT', url: '/examplebucket/chunkObject.txt', rawHeaders: Object.entries(headers).flat() };
const data = Buffer.alloc(66560, 'a');
const SIGS = ['ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648', '0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497', 'b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9'];
const body = Buffer.concat([
  Buffer.from(`10000;chunk-signature=${SIGS[0]}\r\n`), data.subarray(0, 65536), Buffer.from('\r\n'),
  Buffer.from(`400;chunk-signature=${SIGS[1]}\r\n`), data.subarray(65536), Buffer.from('\r\n'),
  Buffer.from(`0;chunk-signature=${SIGS[2]}\r\n\r\n`),
]);

/** `b` cut at each of `cuts` (offsets, ascending). */
function cutAt(b: Buffer, cuts: number[]): Readable {
  const edges = [0, ...cuts, b.length];
  return Readable.from(edges.slice(1).map((end, i) => b.subarray(edges[i], end)));
}

async function decode(source: Readable): Promise<{ out: Buffer; md5: string }> {
  const v = await verifyRequest(request, lookup, AT);
  const payload = new Payload(source, v, headerMap(request.rawHeaders));
  const out: Buffer[] = [];
  for await (const piece of payload) out.push(Buffer.from(piece));
  return { out: Buffer.concat(out), md5: payload.md5Hex };
}

describe('the aws-chunked decoder, however the socket cuts the body', () => {
  const md5 = createHash('md5').update(data).digest('hex');
  const firstHeader = 88;
  const secondHeader = firstHeader + 65536 + 2;

  it('a header cut between its CR and LF, inside its size, inside its signature, or right after it', async () => {
    for (const cut of [1, 5, 40, firstHeader - 1, firstHeader, firstHeader + 1, secondHeader - 1, secondHeader + 3, body.length - 3, body.length - 1]) {
      const { out, md5: got } = await decode(cutAt(body, [cut]));
      expect(out.equals(data), `cut at ${cut}`).toBe(true);
      expect(got).toBe(md5);
    }
  });

  it('every header spread over pieces of one, two and three bytes', async () => {
    for (const step of [1, 2, 3]) {
      const cuts: number[] = [];
      for (const start of [0, firstHeader + 65536, secondHeader + 1024]) for (let at = start + step; at < start + firstHeader + 4 && at < body.length; at += step) cuts.push(at);
      const { out } = await decode(cutAt(body, cuts));
      expect(out.equals(data), `steps of ${step}`).toBe(true);
    }
  });

  it('refuses a header longer than any chunk header once it has read past the limit, without waiting for its end', async () => {
    const long = Buffer.concat([Buffer.from('10000;chunk-signature='), Buffer.alloc(10_000, 'f'), Buffer.from('\r\n'), data]);
    for (const cuts of [[100, 2000, 4090, 6000], [5000]]) {
      try {
        await decode(cutAt(long, cuts));
        throw new Error('expected a refusal');
      } catch (err) {
        expect(isS3Error(err) && err.code, `cut at ${cuts.join(', ')}`).toBe('InvalidRequest');
      }
    }
  });
});
