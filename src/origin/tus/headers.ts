/**
 * The tus 1.0 headers (contract §9): reading a request's, writing an answer's, and what
 * browsers are told by CORS. Transport only; the service decides.
 */
import type { FastifyRequest } from 'fastify';
import { errors } from '../../core/errors.js';
import type { FieldErrorCode } from '../../core/error-codes.js';
import { CHECKSUM_ALGORITHMS, type ChecksumAlgorithm } from '../../service/uploads/tus-writer.js';
import type { TusState } from '../../service/uploads/tus.js';

export const TUS_VERSION = '1.0.0';
export const TUS_EXTENSIONS = ['creation', 'creation-with-upload', 'termination', 'expiration', 'checksum', 'concatenation'];
export const OFFSET_OCTET_STREAM = 'application/offset+octet-stream';
/** The answer header that names the ready file (contract §9). */
export const FILE_ID_HEADER = 'Coffer-File-Id';

/** Headers a page on another origin may read from an answer. */
export const EXPOSED_HEADERS = [
  'Location', 'Upload-Offset', 'Upload-Length', 'Upload-Expires', 'Upload-Metadata', 'Upload-Concat', 'Tus-Resumable', 'Tus-Version',
  'Tus-Max-Size', 'Tus-Extension', 'Tus-Checksum-Algorithm', FILE_ID_HEADER, 'Retry-After', 'X-Request-Id',
];
/** Headers a page on another origin may send (answered to preflights). */
export const ALLOWED_HEADERS = [
  'Authorization', 'Content-Type', 'Tus-Resumable', 'Upload-Length', 'Upload-Offset', 'Upload-Metadata', 'Upload-Concat', 'Upload-Checksum',
  'Upload-Defer-Length', 'X-HTTP-Method-Override', 'X-Request-Id', 'X-Requested-With',
];
export const ALLOWED_METHODS = ['POST', 'HEAD', 'PATCH', 'DELETE', 'OPTIONS'];

/** One value of a header (a repeated one is refused: it has no single meaning). */
export function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  if (Array.isArray(value)) throw errors.invalidRequest(`Send ${name} once.`, name);
  return value;
}

/** A whole number of bytes in a header: digits only, as tus requires. */
export function byteCount(request: FastifyRequest, name: string): number | undefined {
  const value = header(request, name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d{1,16}$/.test(value.trim()) || !Number.isSafeInteger(n)) {
    throw errors.invalidField('invalid_header', name, `${name} must be a whole number of bytes (digits only).`);
  }
  return n;
}

/** Tus-Resumable: the protocol version every request but OPTIONS names. */
export function checkTusResumable(request: FastifyRequest): void {
  if (header(request, 'Tus-Resumable')?.trim() !== TUS_VERSION) throw errors.tusVersion(TUS_VERSION);
}

const METADATA_KEY = /^[\x21-\x2b\x2d-\x7e]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MAX_METADATA = 8 * 1024;

function decodeBase64(value: string, what: string, field: string, code: FieldErrorCode): Buffer {
  if (!BASE64.test(value)) throw errors.invalidField(code, field, `${what} must be base64.`);
  return Buffer.from(value, 'base64');
}

/** Upload-Metadata: comma-separated `key base64value` pairs (or a key alone); values must be UTF-8. */
export function metadataOf(request: FastifyRequest): { raw: string | null; values: Map<string, string | null> } {
  const raw = header(request, 'Upload-Metadata');
  const values = new Map<string, string | null>();
  if (raw === undefined || raw.trim() === '') return { raw: null, values };
  if (raw.length > MAX_METADATA) throw errors.invalidField('invalid_metadata', 'Upload-Metadata', `Upload-Metadata may be at most ${MAX_METADATA} characters.`);
  for (const pair of raw.split(',')) {
    const [key, value, extra] = pair.trim().split(' ');
    if (!key || !METADATA_KEY.test(key) || extra !== undefined) {
      throw errors.invalidField('invalid_metadata', 'Upload-Metadata', 'Upload-Metadata is comma-separated pairs of a key (no spaces or commas) and a base64 value.');
    }
    if (values.has(key)) throw errors.invalidField('invalid_metadata', 'Upload-Metadata', `Upload-Metadata gives "${key}" twice.`);
    if (value === undefined || value === '') {
      values.set(key, value === undefined ? null : '');
      continue;
    }
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(decodeBase64(value, `The value of "${key}"`, 'Upload-Metadata', 'invalid_metadata'));
    } catch (err) {
      if (err instanceof TypeError) throw errors.invalidField('invalid_metadata', 'Upload-Metadata', `The value of "${key}" is not UTF-8.`);
      throw err;
    }
    values.set(key, text);
  }
  return { raw: raw.trim(), values };
}

const UPLOAD_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Upload-Concat: `partial`, or `final;` and the partial uploads' URLs (absolute or a path), space-separated. */
export function concatOf(request: FastifyRequest): { kind: 'partial' } | { kind: 'final'; fileIds: string[] } | null {
  const value = header(request, 'Upload-Concat')?.trim();
  if (value === undefined) return null;
  if (value === 'partial') return { kind: 'partial' };
  const final = /^final;(.*)$/.exec(value);
  if (!final) throw errors.invalidField('invalid_header', 'Upload-Concat', 'Upload-Concat is "partial" or "final;" and the partial uploads\' URLs.');
  const fileIds = final[1]!.trim().split(/ +/).filter((u) => u !== '').map((u) => {
    let path: string;
    try {
      path = new URL(u, 'http://relative.invalid').pathname;
    } catch {
      path = '';
    }
    const id = /\/tus\/([^/]+)$/.exec(path)?.[1];
    if (!id || !UPLOAD_ID.test(id)) throw errors.invalidField('invalid_header', 'Upload-Concat', `"${u.slice(0, 200)}" is not the URL of an upload here (…/tus/{id}).`);
    return id;
  });
  return { kind: 'final', fileIds };
}

const DIGEST_BYTES: Record<ChecksumAlgorithm, number> = { sha256: 32, sha1: 20, md5: 16 };

/** Upload-Checksum: `<algorithm> <base64 digest>`, of sha256, sha1 or md5. */
export function checksumOf(request: FastifyRequest): { algorithm: ChecksumAlgorithm; digest: Buffer } | null {
  const value = header(request, 'Upload-Checksum')?.trim();
  if (value === undefined) return null;
  const [name, encoded, extra] = value.split(' ');
  const algorithm = name?.toLowerCase() as ChecksumAlgorithm;
  if (!CHECKSUM_ALGORITHMS.includes(algorithm)) {
    throw errors.invalidField('unsupported_checksum_algorithm', 'Upload-Checksum', `The checksum algorithm must be one of ${CHECKSUM_ALGORITHMS.join(', ')}.`);
  }
  const digest = decodeBase64(encoded ?? '', 'The checksum', 'Upload-Checksum', 'invalid_header');
  if (extra !== undefined || digest.length !== DIGEST_BYTES[algorithm]) {
    throw errors.invalidField('invalid_header', 'Upload-Checksum', `Upload-Checksum must be "${algorithm} <base64 of the ${DIGEST_BYTES[algorithm]}-byte digest>".`);
  }
  return { algorithm, digest };
}

/** Whether the body is the upload's bytes (Content-Type: application/offset+octet-stream). */
export function isOffsetStream(request: FastifyRequest): boolean {
  return (header(request, 'Content-Type') ?? '').split(';')[0]!.trim().toLowerCase() === OFFSET_OCTET_STREAM;
}

/** Whether the request says a body follows its headers. */
export function announcesBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The upload's URL: {base_url}/tus/{file_id}. */
export const uploadUrl = (baseUrl: string, fileId: string): string => `${baseUrl.replace(/\/+$/, '')}/tus/${fileId}`;

/** The headers every answer about an upload carries; `full` adds HEAD's metadata and concatenation. */
export function stateHeaders(state: TusState, baseUrl: string, full: boolean): Record<string, string> {
  const out: Record<string, string> = { 'Upload-Offset': String(state.offset), 'Upload-Length': String(state.length) };
  if (state.expiresAt !== null) out['Upload-Expires'] = new Date(state.expiresAt).toUTCString();
  if (state.readyFileId !== null) out[FILE_ID_HEADER] = state.readyFileId;
  if (full) {
    if (state.metadata !== null) out['Upload-Metadata'] = state.metadata;
    if (state.kind === 'partial') out['Upload-Concat'] = 'partial';
    if (state.kind === 'final' && state.concat) out['Upload-Concat'] = `final;${state.concat.map((id) => uploadUrl(baseUrl, id)).join(' ')}`;
  }
  return out;
}
