/**
 * A SigV4 presigned URL made by hand (AWS's "query string authentication"), so a test controls
 * every parameter it signs, X-Amz-Content-Sha256 and the response-* overrides among them.
 */
import { createHmac } from 'node:crypto';
import { sha256 } from '../kit/hash.js';
import type { S3Key } from './s3-api.js';

/** RFC 3986 as SigV4 encodes: all but unreserved characters. */
const encode = (text: string): string => encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key: Buffer | string, text: string): Buffer => createHmac('sha256', key).update(text).digest();

/**
 * `endpoint` is the S3 port's URL; `path` is "/bucket/key" unencoded; `query` is signed along
 * (X-Amz-Content-Sha256, when given, is the payload hash the signature covers).
 */
export function presign(endpoint: string, key: S3Key, method: string, path: string, query: Record<string, string> = {}, expiresIn = 300): string {
  const url = new URL(endpoint);
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const scope = `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`;
  const params: Record<string, string> = {
    ...query, 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256', 'X-Amz-Credential': `${key.keyId}/${scope}`, 'X-Amz-Date': amzDate,
    'X-Amz-Expires': String(expiresIn), 'X-Amz-SignedHeaders': 'host',
  };
  const canonicalQuery = Object.entries(params).map(([n, v]) => [encode(n), encode(v)] as const)
    .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1)).map(([n, v]) => `${n}=${v}`).join('&');
  const uri = path.split('/').map(encode).join('/');
  const canonical = [method, uri, canonicalQuery, `host:${url.host}\n`, 'host', query['X-Amz-Content-Sha256'] ?? 'UNSIGNED-PAYLOAD'].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${key.secret}`, amzDate.slice(0, 8)), 'us-east-1'), 's3'), 'aws4_request');
  return `${url.origin}${uri}?${canonicalQuery}&X-Amz-Signature=${hmac(signingKey, toSign).toString('hex')}`;
}
