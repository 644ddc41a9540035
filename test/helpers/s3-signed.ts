/**
 * One S3 request signed by hand (SigV4, Authorization header) and sent over node:http, for what
 * no client expresses: header values sent as exact bytes (a "binary" string, one character per
 * byte), signed over those bytes or over the UTF-8 of their text, and raw answer headers.
 */
import { createHash, createHmac } from 'node:crypto';
import { rawRequest, type RawAnswer } from './raw-http.js';
import type { S3Key } from './s3-api.js';

const encode = (text: string): string => encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key: Buffer | string, text: string): Buffer => createHmac('sha256', key).update(text).digest();

export interface SignedRequest {
  method: string;
  /** "/bucket/key", unencoded. */
  path: string;
  query?: Record<string, string>;
  /** Values as the bytes to send: each character one byte (Latin-1). */
  headers?: Record<string, string>;
  body?: Buffer;
  /**
   * How the canonical request's header values become bytes to sign: `bytes`, the bytes sent
   * (Go, curl); `utf8`, each sent byte read as a character and that text's UTF-8 (Python's and
   * Node's clients, which write text as Latin-1 and sign its UTF-8).
   */
  signAs?: 'bytes' | 'utf8';
  /** Header values sent instead of those signed (a request changed on the way). */
  tamper?: Record<string, string>;
}

export function signedRequest(endpoint: string, key: S3Key, req: SignedRequest): Promise<RawAnswer> {
  const url = new URL(endpoint);
  const body = req.body ?? Buffer.alloc(0);
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const scope = `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`;
  const payloadHash = createHash('sha256').update(body).digest('hex');
  const headers: Record<string, string> = { ...req.headers, host: url.host, 'x-amz-date': amzDate, 'x-amz-content-sha256': payloadHash };
  const names = Object.keys(headers).map((n) => n.toLowerCase()).sort();
  const lower = Object.fromEntries(Object.entries(headers).map(([n, v]) => [n.toLowerCase(), v]));
  const canonicalHeaders = names.map((n) => `${n}:${lower[n]!.trim()}\n`).join('');
  const query = Object.entries(req.query ?? {}).map(([n, v]) => [encode(n), encode(v)] as const)
    .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1)).map(([n, v]) => `${n}=${v}`).join('&');
  const uri = req.path.split('/').map(encode).join('/');
  const canonical = [req.method, uri, query, canonicalHeaders, names.join(';'), payloadHash].join('\n');
  const bytes = Buffer.from(canonical, req.signAs === 'utf8' ? 'utf8' : 'latin1');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(bytes).digest('hex')].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${key.secret}`, amzDate.slice(0, 8)), 'us-east-1'), 's3'), 'aws4_request');
  const signature = hmac(signingKey, toSign).toString('hex');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${key.keyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
  headers['content-length'] = String(body.length);
  Object.assign(headers, req.tamper);
  return rawRequest(endpoint, query === '' ? uri : `${uri}?${query}`, { method: req.method, headers, body });
}

/** A header of an answer as the bytes that came (node:http reads them as Latin-1). */
export const headerBytes = (answer: RawAnswer, name: string): Buffer => Buffer.from(String(answer.headers[name] ?? ''), 'latin1');
