/**
 * A bare tus 1.0 client for the tests: one request per call over node:http, so a test controls
 * every header and how the body goes (whole, in slow pieces, or cut off), and sees every answer.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { rawRequest } from './raw-http.js';
import { testS3Client } from './s3.js';
import { sleep } from '../kit/poll.js';

export const MiB = 1024 * 1024;

export interface TusAnswer {
  status: number;
  /** Lower-case names; a repeated header's values joined with ", ". */
  headers: Record<string, string | undefined>;
  body: Buffer;
  /** The body parsed as JSON, when it is. */
  json: any;
}

export interface TusCall {
  method: string;
  /** A path on `base`, or a whole URL (a Location). */
  url: string;
  headers?: Record<string, string | undefined>;
  /** The body: bytes, or pieces sent one after another (chunked unless Content-Length is given). */
  body?: Buffer | AsyncIterable<Buffer>;
  /** Leave out Tus-Resumable: 1.0.0. */
  noTusResumable?: boolean;
  /** Close the connection once the body's pieces are written, without ending the request. */
  cut?: boolean;
}

/** Upload-Metadata from plain values (null: a key without a value). */
export function tusMetadata(values: Record<string, string | null>): string {
  return Object.entries(values).map(([k, v]) => (v === null ? k : `${k} ${Buffer.from(v).toString('base64')}`)).join(',');
}

/** Sends one tus request with `auth` as its Authorization header. */
export async function tus(base: string, auth: string | null, call: TusCall): Promise<TusAnswer> {
  const url = new URL(call.url, base);
  const headers: Record<string, string> = {};
  if (auth !== null) headers.authorization = auth;
  if (!call.noTusResumable) headers['tus-resumable'] = '1.0.0';
  if (Buffer.isBuffer(call.body)) headers['content-length'] = String(call.body.length);
  for (const [k, v] of Object.entries(call.headers ?? {})) {
    if (v === undefined) delete headers[k.toLowerCase()];
    else headers[k.toLowerCase()] = v;
  }
  // No idle limit: some tests send their pieces slowly on purpose.
  const a = await rawRequest(url.origin, url.pathname + url.search, {
    method: call.method, headers, timeoutMs: 0, ...(call.body !== undefined ? { body: call.body } : {}), ...(call.cut ? { cut: true } : {}),
  });
  const flat = Object.fromEntries(Object.entries(a.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]));
  return { ...a, headers: flat };
}

/** A tus client bound to an origin and a credential. */
export function tusClient(base: string, auth: string | null) {
  const call = (c: TusCall) => tus(base, auth, c);
  return {
    call,
    options: () => call({ method: 'OPTIONS', url: '/tus', noTusResumable: true }),
    create: (length: number | null, meta: Record<string, string | null> = { filename: 'file.bin' }, headers: Record<string, string | undefined> = {}) =>
      call({ method: 'POST', url: '/tus', headers: { ...(length === null ? {} : { 'upload-length': String(length) }), 'upload-metadata': tusMetadata(meta), ...headers } }),
    head: (url: string) => call({ method: 'HEAD', url }),
    patch: (url: string, offset: number, body: Buffer | AsyncIterable<Buffer>, headers: Record<string, string | undefined> = {}, cut = false) =>
      call({ method: 'PATCH', url, body, cut, headers: { 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset), ...headers } }),
    remove: (url: string) => call({ method: 'DELETE', url }),
  };
}

/** The offset HEAD gives, as a number. */
export const offsetOf = (a: TusAnswer): number => Number(a.headers['upload-offset']);

/** `bytes` in pieces of `piece`, with a pause before each piece after the first `fast` bytes. */
export async function* slowly(bytes: Buffer, piece: number, pauseMs: number, fast = 0): AsyncGenerator<Buffer> {
  for (let i = 0; i < bytes.length; i += piece) {
    if (i >= fast) await sleep(pauseMs);
    yield bytes.subarray(i, i + piece);
  }
}

/** The tail objects (tus-tails/…) the origin's blob store holds: files under blobs/objects, or S3 keys. */
export async function storedTails(o: { dataDir: string; blobStore?: string }): Promise<string[]> {
  if (!o.blobStore) {
    const root = join(o.dataDir, 'blobs', 'objects', 'tus-tails');
    const out: string[] = [];
    for (const id of await readdir(root).catch(() => [] as string[])) {
      for (const tail of await readdir(join(root, id)).catch(() => [] as string[])) out.push(`${id}/${tail}`);
    }
    return out;
  }
  const url = new URL(o.blobStore);
  const client = testS3Client(url.searchParams.get('endpoint')!);
  try {
    const out = await client.send(new ListObjectsV2Command({ Bucket: url.hostname, Prefix: 'tus-tails/' }));
    return (out.Contents ?? []).map((c) => c.Key!.slice('tus-tails/'.length));
  } finally {
    client.destroy();
  }
}
