/**
 * One S3 request as the operation modules see it, and what they answer: transport-neutral,
 * so server.ts alone knows Fastify.
 */
import type { Caller } from '../core/access.js';
import type { StoredFile } from '../core/ports.js';
import type { CofferService } from '../service/service.js';
import type { Payload } from './payload.js';
import type { Verified } from './sigv4.js';
import { s3Errors } from './errors.js';
import { xmlDocument, type XmlFields } from './xml.js';

export interface S3Request {
  service: CofferService;
  method: string;
  /** Null for the service itself (ListBuckets). */
  bucket: string | null;
  /** Null for the bucket itself. */
  key: string | null;
  /** Query parameters, decoded; the first of a repeated name. */
  query: Map<string, string>;
  /** Headers by lower-case name. */
  headers: Map<string, string>;
  verified: Verified;
  caller: Caller;
  /** The request body as signed; read once. */
  payload(): Payload;
}

export interface S3Answer {
  status?: number;
  headers?: Record<string, string>;
  /** An XML document, a stream of bytes, or nothing. */
  body?: string | NodeJS.ReadableStream;
}

export type S3Handler = (r: S3Request) => Promise<S3Answer>;

export const xmlAnswer = (root: string, fields: XmlFields, status = 200): S3Answer => ({ status, headers: { 'content-type': 'application/xml' }, body: xmlDocument(root, fields) });

/** ISO 8601 with milliseconds, as S3 writes times in XML. */
export const isoTime = (ms: number): string => new Date(ms).toISOString();
/** RFC 7231's HTTP date, as S3 writes Last-Modified. */
export const httpDate = (ms: number): string => new Date(ms).toUTCString();

/** The ETag S3 clients see: the MD5 (single PUT) or multipart form; the SHA-256 for files made elsewhere. */
export const etagOf = (file: StoredFile): string => file.s3_etag ?? file.sha256 ?? '';
export const quoted = (etag: string): string => `"${etag}"`;

/** The requester, as S3 names owners. */
export const ownerOf = (caller: Caller): XmlFields => {
  const id = caller.kind === 'key' ? caller.keyId : 'coffer';
  return [['ID', id], ['DisplayName', id]];
};

/** Reads a request's body to its end when the operation takes none, refusing one that has bytes. */
export async function noBody(r: S3Request): Promise<void> {
  for await (const piece of r.payload()) {
    if (piece.length > 0) throw s3Errors.invalidRequest('This operation takes no request body.');
  }
}

/** A whole number query parameter within bounds, or the fallback when absent. */
export function intParam(r: S3Request, name: string, fallback: number, min: number, max: number): number {
  const raw = r.query.get(name);
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw s3Errors.invalidArgument(`${name} must be a whole number.`, name, raw);
  const n = Number(raw);
  if (n < min) throw s3Errors.invalidArgument(`${name} must be at least ${min}.`, name, raw);
  return Math.min(n, max);
}
