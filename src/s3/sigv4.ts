/**
 * AWS Signature Version 4 for S3 requests (contract §12): the Authorization header and the
 * presigned query, checked against the key the access key id names. What the body must then
 * prove (its SHA-256, signed chunks, trailers) is left in `payload` for payload.ts, which
 * checks it as the body streams by. Signatures are compared in constant time; a request more
 * than 15 minutes from the server's clock is refused, as AWS does.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Caller } from '../core/access.js';
import type { S3Credential } from '../service/credentials.js';
import { s3Errors } from './errors.js';

export const ALGORITHM = 'AWS4-HMAC-SHA256';
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const MAX_SKEW_MS = 15 * 60 * 1000;
const MAX_PRESIGNED_SECONDS = 7 * 86_400;

/** What the body must prove, by the x-amz-content-sha256 the request was signed with. */
export type PayloadMode =
  | { kind: 'sha256'; hex: string }
  | { kind: 'unsigned' }
  /** aws-chunked, each chunk signed; `trailer`: checksum trailers after the last, signed too. */
  | { kind: 'signed-chunks'; trailer: boolean }
  /** aws-chunked, chunks unsigned, checksum trailers after the last. */
  | { kind: 'unsigned-trailer' };

/** A request whose signature held: who it is, and what signs its chunks. */
export interface Verified {
  caller: Caller;
  keyId: string;
  signingKey: Buffer;
  /** date/region/s3/aws4_request */
  scope: string;
  /** yyyymmddThhmmssZ */
  amzDate: string;
  /** The request's signature: the first chunk's "previous signature". */
  signature: string;
  payload: PayloadMode;
}

export interface IncomingSigned {
  method: string;
  /** The request target as sent: path and query, still percent-encoded. */
  url: string;
  /** Node's raw header list: name, value, name, value… */
  rawHeaders: string[];
}

export type CredentialLookup = (keyId: string) => Promise<S3Credential>;

const sha256Hex = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 encoding as SigV4 wants it: everything but unreserved characters; "/" too unless kept. */
export function uriEncode(text: string, keepSlash = false): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === '/')) out += c;
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Percent-decoding that keeps a malformed escape as it is rather than failing. */
export function lenientDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text.replace(/%([0-9A-Fa-f]{2})/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
  }
}

/** The query's parameters, decoded, in their order. */
export function queryParams(url: string): Array<[string, string]> {
  const q = url.indexOf('?');
  if (q < 0) return [];
  return url.slice(q + 1).split('&').filter((p) => p !== '').map((p) => {
    const eq = p.indexOf('=');
    return eq < 0 ? [lenientDecode(p), ''] : [lenientDecode(p.slice(0, eq)), lenientDecode(p.slice(eq + 1))];
  });
}

/** Header values by lower-case name, several of one name joined by ",". */
export function headerMap(rawHeaders: string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    const value = rawHeaders[i + 1]!;
    const had = map.get(name);
    map.set(name, had === undefined ? value : `${had},${value}`);
  }
  return map;
}

const canonicalValue = (value: string): string => value.trim().replace(/\s+/g, ' ');

/**
 * How the canonical request's text becomes the bytes hashed. Node reads each header byte as one
 * character (Latin-1). A client that sends a value's bytes as it signed them (Go, curl, boto3:
 * UTF-8 on the wire) signed those very bytes ('latin1' gives them back); one that writes its
 * text as Latin-1 but signs the text's UTF-8 (Node's http) is matched by 'utf8'. Only a value
 * with bytes above ASCII can tell the two apart.
 */
function headerEncodings(canonicalHeaders: string): BufferEncoding[] {
  return /[\x80-\xff]/.test(canonicalHeaders) ? ['utf8', 'latin1'] : ['utf8'];
}

/** The canonical URIs a client may have signed: the path as sent, and as SigV4 encodes its decoded form. */
function canonicalUris(url: string): string[] {
  const path = url.split('?')[0]!.split('#')[0]! || '/';
  const normalised = path.split('/').map((segment) => uriEncode(lenientDecode(segment))).join('/');
  return normalised === path ? [path] : [normalised, path];
}

function canonicalQuery(params: Array<[string, string]>, without?: string): string {
  return params
    .filter(([name]) => name !== without)
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

/** The key that signs for one day, region and S3, from the key's SigV4 secret. */
export function signingKeyOf(secret: Buffer, date: string, region: string): Buffer {
  return hmac(hmac(hmac(hmac(secret, date), region), 's3'), 'aws4_request');
}

/** Constant-time comparison of two hex signatures. */
export function signaturesEqual(given: string, expected: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(given)) return false;
  return timingSafeEqual(Buffer.from(given, 'hex'), Buffer.from(expected, 'hex'));
}

export function payloadMode(value: string | undefined, presigned: boolean): PayloadMode {
  if (value === undefined) {
    if (presigned) return { kind: 'unsigned' };
    throw s3Errors.invalidRequest('Missing required header for this request: x-amz-content-sha256.');
  }
  if (value === 'UNSIGNED-PAYLOAD') return { kind: 'unsigned' };
  if (/^[0-9a-f]{64}$/.test(value)) return { kind: 'sha256', hex: value };
  if (!presigned) {
    if (value === 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD') return { kind: 'signed-chunks', trailer: false };
    if (value === 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER') return { kind: 'signed-chunks', trailer: true };
    if (value === 'STREAMING-UNSIGNED-PAYLOAD-TRAILER') return { kind: 'unsigned-trailer' };
  }
  throw s3Errors.invalidArgument('x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER), STREAMING-UNSIGNED-PAYLOAD-TRAILER or a SHA-256 in hex.', 'x-amz-content-sha256', value);
}

/**
 * The x-amz-content-sha256 the signature covers, which the body must then prove. A presigned
 * URL's X-Amz-Content-Sha256 is signed: a header may repeat it, never replace it (the body
 * would be checked against one value and the signature against another).
 */
function signedPayloadHash(headers: Map<string, string>, query: Map<string, string>, presigned: boolean): string | undefined {
  const header = headers.get('x-amz-content-sha256');
  const signed = presigned ? query.get('X-Amz-Content-Sha256') : undefined;
  if (signed === undefined) return header;
  if (header !== undefined && header !== signed) {
    throw s3Errors.invalidArgument('The x-amz-content-sha256 header does not match the X-Amz-Content-Sha256 this URL was signed with.', 'x-amz-content-sha256', header);
  }
  return signed;
}

/** X-Amz-Expires as S3 checks it: whole seconds, 0 to a week; S3's messages, answered 403. */
function checkExpires(expires: string): void {
  const fail = (m: string) => s3Errors.presignedExpiresInvalid(m);
  if (!/^-?\d+$/.test(expires)) throw fail('X-Amz-Expires should be a number');
  if (expires.startsWith('-')) throw fail('X-Amz-Expires must be non-negative');
  if (expires.length > 7 || Number(expires) > MAX_PRESIGNED_SECONDS) throw fail('X-Amz-Expires must be less than a week (in seconds) that is 604800');
}

/** yyyymmddThhmmssZ as a time, or NaN. */
function parseAmzDate(text: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : NaN;
}

const toAmzDate = (ms: number): string => new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');

interface Parsed {
  keyId: string;
  date: string;
  region: string;
  signedHeaders: string[];
  signature: string;
  amzDate: string;
}

function parseCredential(credential: string, fail: (m: string) => Error): Omit<Parsed, 'signedHeaders' | 'signature' | 'amzDate'> {
  const parts = credential.split('/');
  if (parts.length !== 5) throw fail('The credential must be ACCESS_KEY_ID/DATE/REGION/s3/aws4_request.');
  const [keyId, date, region, service, terminal] = parts as [string, string, string, string, string];
  if (!/^\d{8}$/.test(date)) throw fail(`The credential's date "${date}" is not yyyymmdd.`);
  if (service !== 's3') throw fail(`The credential names the service "${service}"; this is s3.`);
  if (terminal !== 'aws4_request') throw fail('The credential must end with aws4_request.');
  if (keyId === '' || region === '') throw fail('The credential names no access key id or no region.');
  return { keyId, date, region };
}

function parseAuthorization(header: string): Parsed & { fromHeader: true } {
  const fail = (m: string) => s3Errors.authorizationHeaderMalformed(m);
  const trimmed = header.trim();
  if (!trimmed.startsWith(`${ALGORITHM} `)) {
    throw s3Errors.invalidArgument('The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.', 'Authorization');
  }
  const fields = new Map<string, string>();
  for (const part of trimmed.slice(ALGORITHM.length).split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credential = fields.get('Credential');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (!credential || !signedHeaders || !signature) throw fail('The Authorization header must have Credential, SignedHeaders and Signature.');
  return { ...parseCredential(credential, fail), signedHeaders: signedHeaders.split(';'), signature, amzDate: '', fromHeader: true };
}

/**
 * Checks a request's SigV4 signature and finds its caller; throws an S3Error otherwise. A
 * request with neither form is refused: the S3 interface has no anonymous access.
 */
export async function verifyRequest(req: IncomingSigned, lookup: CredentialLookup, now: number): Promise<Verified> {
  const headers = headerMap(req.rawHeaders);
  const params = queryParams(req.url);
  const query = new Map(params);
  const authorization = headers.get('authorization');
  const presigned = query.has('X-Amz-Algorithm') || query.has('X-Amz-Signature') || query.has('X-Amz-Credential');
  if (authorization !== undefined && presigned) throw s3Errors.invalidArgument('Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the Authorization header should be specified.', 'Authorization');
  if (authorization === undefined && !presigned) {
    // aws CLI v1's `s3 presign` signs with Signature Version 2 unless told otherwise.
    if (query.has('AWSAccessKeyId') && query.has('Signature')) {
      throw s3Errors.invalidArgument('Signature Version 2 is not supported: presign with AWS4-HMAC-SHA256 (for the aws CLI v1: s3 = signature_version = s3v4 in its config).', 'AWSAccessKeyId');
    }
    throw s3Errors.accessDenied('Anonymous requests are not supported: sign the request with an access key (AWS Signature Version 4).');
  }

  let parsed: Parsed;
  let time: number;
  if (authorization !== undefined) {
    parsed = parseAuthorization(authorization);
    const amzDate = headers.get('x-amz-date');
    const date = headers.get('date');
    time = amzDate !== undefined ? parseAmzDate(amzDate) : date !== undefined ? Date.parse(date) : NaN;
    if (Number.isNaN(time)) throw s3Errors.accessDenied('AWS authentication requires a valid Date or x-amz-date header.');
    parsed.amzDate = amzDate ?? toAmzDate(time);
    if (Math.abs(now - time) > MAX_SKEW_MS) throw s3Errors.requestTimeTooSkewed(parsed.amzDate, toAmzDate(now));
  } else {
    const fail = (m: string) => s3Errors.authorizationQueryParametersError(m);
    if (query.get('X-Amz-Algorithm') !== ALGORITHM) throw fail('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256".');
    const credential = query.get('X-Amz-Credential');
    const amzDate = query.get('X-Amz-Date');
    const expires = query.get('X-Amz-Expires');
    const signedHeaders = query.get('X-Amz-SignedHeaders');
    const signature = query.get('X-Amz-Signature');
    if (!credential || !amzDate || !expires || !signedHeaders || !signature) {
      throw fail('Query-string authentication requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.');
    }
    time = parseAmzDate(amzDate);
    if (Number.isNaN(time)) throw fail('X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd\'T\'HHmmss\'Z\'".');
    checkExpires(expires);
    if (time - now > MAX_SKEW_MS) throw s3Errors.accessDenied('Request is not valid yet.');
    if (now > time + Number(expires) * 1000) throw s3Errors.expired();
    parsed = { ...parseCredential(credential, fail), signedHeaders: signedHeaders.split(';'), signature, amzDate };
  }
  if (parsed.amzDate.slice(0, 8) !== parsed.date) {
    throw s3Errors.authorizationHeaderMalformed(`The credential's date ${parsed.date} is not the request's date ${parsed.amzDate.slice(0, 8)}.`);
  }

  const signed = new Set(parsed.signedHeaders);
  if (!signed.has('host')) throw s3Errors.accessDenied('The host header must be signed.');
  // Headers S3 acts on must be covered by the signature, or anyone on the way could change them.
  const unsigned = [...headers.keys()].filter((h) => h.startsWith('x-amz-') && !signed.has(h) && !(presigned && h === 'x-amz-content-sha256'));
  if (unsigned.length > 0) throw s3Errors.headersNotSigned(unsigned);
  const payloadHash = signedPayloadHash(headers, query, presigned);
  const payload = payloadMode(payloadHash, presigned);

  const credential = await lookup(parsed.keyId);
  if (!credential.ok) {
    const why = {
      unknown: 'The AWS access key Id you provided does not exist in our records.',
      revoked: 'This key was revoked.',
      expired: 'This key has expired.',
      not_sealed: 'This key cannot sign S3 requests: it was made before the S3 interface, or under another root key. Make a new key.',
    }[credential.reason];
    throw s3Errors.invalidAccessKeyId(why, parsed.keyId);
  }

  const scope = `${parsed.date}/${parsed.region}/s3/aws4_request`;
  const signingKey = signingKeyOf(credential.secret, parsed.date, parsed.region);
  const canonicalHeaders = parsed.signedHeaders.map((h) => `${h}:${canonicalValue(headers.get(h) ?? '')}\n`).join('');
  const hashedPayload = payloadHash ?? 'UNSIGNED-PAYLOAD';
  const queryText = canonicalQuery(params, presigned ? 'X-Amz-Signature' : undefined);
  let matched = false;
  let lastRequest = '';
  for (const uri of canonicalUris(req.url)) {
    lastRequest = [req.method, uri, queryText, canonicalHeaders, parsed.signedHeaders.join(';'), hashedPayload].join('\n');
    for (const encoding of headerEncodings(canonicalHeaders)) {
      const stringToSign = [ALGORITHM, parsed.amzDate, scope, sha256Hex(Buffer.from(lastRequest, encoding))].join('\n');
      // Every candidate is computed and compared, so timing does not say which one matched.
      matched = signaturesEqual(parsed.signature, createHmac('sha256', signingKey).update(stringToSign).digest('hex')) || matched;
    }
  }
  if (!matched) throw s3Errors.signatureDoesNotMatch(undefined, { CanonicalRequest: lastRequest, AWSAccessKeyId: parsed.keyId });
  return { caller: credential.caller, keyId: parsed.keyId, signingKey, scope, amzDate: parsed.amzDate, signature: parsed.signature, payload };
}
