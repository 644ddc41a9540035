/**
 * What an object carries besides its bytes, and how its answers are shaped: the metadata an S3
 * client stores with it (x-amz-meta-* and a few standard headers), its visibility from
 * x-amz-acl, Range and the conditional headers, and the headers of GetObject and HeadObject.
 */
import { isUtf8 } from 'node:buffer';
import mime from 'mime';
import { isSendableContentType } from '../core/file-types.js';
import { SANDBOX_CSP, contentDisposition, isInlineSafe, sendableType } from '../core/user-bytes.js';
import type { StoredFile } from '../core/ports.js';
import type { Visibility } from '../core/records.js';
import { s3Errors } from './errors.js';
import { etagOf, httpDate, quoted, type S3Request } from './context.js';

/** S3's bound on user metadata. */
const MAX_META_BYTES = 2048;
/** Standard headers S3 keeps with an object and sends back. */
const KEPT_HEADERS = ['cache-control', 'content-disposition', 'content-encoding', 'content-language', 'expires'] as const;

export interface StoredMeta {
  /** x-amz-meta-* by lower-case name (without the prefix). */
  user: Record<string, string>;
  headers: Partial<Record<(typeof KEPT_HEADERS)[number], string>>;
  /** The whole object's x-amz-checksum-* the client sent and the bytes matched (a single PUT). */
  checksum?: { header: string; value: string };
}

/**
 * A metadata value as text: Node reads header bytes as Latin-1, so bytes that are UTF-8 (as
 * Python's and Go's clients send) are decoded as such; others stay Latin-1 (as Node's send).
 */
const metaText = (value: string): string => {
  const bytes = Buffer.from(value, 'latin1');
  return /[\x80-\xff]/.test(value) && isUtf8(bytes) ? bytes.toString('utf8') : value;
};

/**
 * A metadata text as the header value sent back: Latin-1 where every character has a byte
 * there (what Python's and Node's clients read the answer's headers as), else its UTF-8 bytes.
 */
const metaHeader = (text: string): string => (/^[\x00-\xff]*$/.test(text) ? text : Buffer.from(text, 'utf8').toString('latin1'));

/** The metadata of a PUT, as kept in s3_meta; null when there is none. */
export function metaOf(headers: Map<string, string>): string | null {
  const meta: StoredMeta = { user: {}, headers: {} };
  let userBytes = 0;
  for (const [name, value] of headers) {
    if (!name.startsWith('x-amz-meta-')) continue;
    const key = name.slice('x-amz-meta-'.length);
    meta.user[key] = metaText(value);
    userBytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  }
  if (userBytes > MAX_META_BYTES) throw s3Errors.invalidArgument(`Your metadata headers exceed the maximum allowed metadata size of ${MAX_META_BYTES} bytes.`);
  for (const name of KEPT_HEADERS) {
    let value = headers.get(name);
    // aws-chunked is how this request's body was sent, not how the object is encoded.
    if (name === 'content-encoding' && value !== undefined) value = value.split(',').map((v) => v.trim()).filter((v) => v !== '' && v !== 'aws-chunked').join(', ') || undefined;
    if (value !== undefined && /^[\t\x20-\x7e]*$/.test(value)) meta.headers[name] = value;
  }
  return Object.keys(meta.user).length === 0 && Object.keys(meta.headers).length === 0 ? null : JSON.stringify(meta);
}

/** The kept metadata with the object's verified checksum added, once the body was read. */
export function withChecksum(meta: string | null, checksum: { header: string; value: string } | null): string | null {
  if (!checksum) return meta;
  return JSON.stringify({ ...parseMeta(meta), checksum });
}

/** S3's XML element for each checksum header (GetObjectAttributes). */
const CHECKSUM_ELEMENTS: Record<string, string> = {
  'x-amz-checksum-crc32': 'ChecksumCRC32', 'x-amz-checksum-crc32c': 'ChecksumCRC32C', 'x-amz-checksum-crc64nvme': 'ChecksumCRC64NVME',
  'x-amz-checksum-sha1': 'ChecksumSHA1', 'x-amz-checksum-sha256': 'ChecksumSHA256',
};

/** The checksum kept with an object, with its header and XML element names; null when none was given. */
export function storedChecksum(file: StoredFile): { header: string; element: string; value: string } | null {
  const checksum = parseMeta(file.s3_meta).checksum;
  const element = checksum ? CHECKSUM_ELEMENTS[checksum.header] : undefined;
  return checksum && element ? { header: checksum.header, element, value: checksum.value } : null;
}

export function parseMeta(text: string | null | undefined): StoredMeta {
  if (!text) return { user: {}, headers: {} };
  try {
    const parsed = JSON.parse(text) as StoredMeta;
    const checksum = parsed.checksum && typeof parsed.checksum.header === 'string' && typeof parsed.checksum.value === 'string' ? parsed.checksum : undefined;
    return { user: parsed.user ?? {}, headers: parsed.headers ?? {}, ...(checksum ? { checksum } : {}) };
  } catch {
    return { user: {}, headers: {} };
  }
}

/** The content type of a PUT: as sent, else from the name. */
export function contentTypeOf(headers: Map<string, string>, name: string): string {
  const given = headers.get('content-type');
  if (given !== undefined && given.trim() !== '' && isSendableContentType(given.trim())) return given.trim();
  return mime.getType(name) ?? 'application/octet-stream';
}

/** x-amz-acl: `private` makes the file Private, `public-read` Public; otherwise it takes its folders' visibility (Public here). */
export function visibilityOf(headers: Map<string, string>): Visibility {
  const acl = headers.get('x-amz-acl');
  return acl === 'private' || acl === 'authenticated-read' ? 'Private' : 'Public';
}

/** The headers every answer about an object carries. */
export function objectHeaders(file: StoredFile): Record<string, string> {
  const meta = parseMeta(file.s3_meta);
  const out: Record<string, string> = {
    etag: quoted(etagOf(file)), 'last-modified': httpDate(file.completed_at ?? file.updated_at), 'content-type': file.content_type, 'accept-ranges': 'bytes',
  };
  for (const [name, value] of Object.entries(meta.headers)) out[name] = value;
  for (const [name, value] of Object.entries(meta.user)) out[`x-amz-meta-${name}`] = metaHeader(value);
  return out;
}

/** GetObject's response-* query parameters, which a signed request may set. */
export function responseOverrides(r: S3Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['content-type', 'content-language', 'expires', 'cache-control', 'content-disposition', 'content-encoding']) {
    const value = r.query.get(`response-${name}`);
    if (value !== undefined && /^[\t\x20-\x7e]*$/.test(value)) out[name] = value;
  }
  return out;
}

const ATTACHMENT = /^\s*attachment\s*(;|$)/i;

/**
 * The edge's rule for user bytes (src/core/user-bytes.ts) on the type and disposition an object
 * answer would carry, stored or overridden: inline only for the passive types, otherwise an
 * attachment; never sniffed; always in a sandbox, so no answer of this port runs a script.
 */
export function showSafely(headers: Record<string, string>, name: string): void {
  const type = sendableType(headers['content-type'] ?? 'application/octet-stream');
  headers['content-type'] = type;
  headers['x-content-type-options'] = 'nosniff';
  if (isInlineSafe(type)) {
    headers['content-security-policy'] = 'sandbox';
    return;
  }
  headers['content-security-policy'] = SANDBOX_CSP;
  const given = headers['content-disposition'];
  if (given === undefined || !ATTACHMENT.test(given)) headers['content-disposition'] = contentDisposition(name, true);
}

/** The one range of a Range header, or null for the whole object (absent, several ranges, or not bytes). */
export function rangeOf(header: string | undefined, size: number): { start: number; end: number } | null {
  if (header === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) throw s3Errors.invalidRange(size);
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || (m[2] !== '' && Number(m[2]) < start)) throw s3Errors.invalidRange(size);
  return { start, end };
}

const etagList = (header: string): string[] => header.split(',').map((t) => t.trim().replace(/^W\//, '').replace(/^"|"$/g, ''));

/**
 * The conditional headers in S3's order: If-Match and If-Unmodified-Since fail with 412,
 * If-None-Match and If-Modified-Since answer 304 (412 for other than GET and HEAD).
 * Returns 304 or null; throws PreconditionFailed.
 */
export function checkConditions(headers: Map<string, string>, file: StoredFile, prefix = ''): 304 | null {
  const etag = etagOf(file);
  const modified = Math.floor((file.completed_at ?? file.updated_at) / 1000) * 1000;
  const ifMatch = headers.get(`${prefix}if-match`);
  const ifUnmodified = headers.get(`${prefix}if-unmodified-since`);
  const ifNoneMatch = headers.get(`${prefix}if-none-match`);
  const ifModified = headers.get(`${prefix}if-modified-since`);
  if (ifMatch !== undefined) {
    const tags = etagList(ifMatch);
    if (!tags.includes('*') && !tags.includes(etag)) throw s3Errors.preconditionFailed(`${prefix}If-Match`);
  } else if (ifUnmodified !== undefined) {
    const since = Date.parse(ifUnmodified);
    if (!Number.isNaN(since) && modified > since) throw s3Errors.preconditionFailed(`${prefix}If-Unmodified-Since`);
  }
  if (ifNoneMatch !== undefined) {
    const tags = etagList(ifNoneMatch);
    if (tags.includes('*') || tags.includes(etag)) return 304;
  } else if (ifModified !== undefined) {
    const since = Date.parse(ifModified);
    if (!Number.isNaN(since) && modified <= since) return 304;
  }
  return null;
}
