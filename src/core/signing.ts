/**
 * Signed links (contract §6). Pure code shared by the origin, every edge and the SDK;
 * the HMAC itself is passed in so a browser can use Web Crypto and Node its own.
 */
import { bytesToBase64Url } from './ids.js';

export type HmacSha256 = (secret: string, message: string) => Uint8Array;
export type AsyncHmacSha256 = (secret: string, message: string) => Promise<Uint8Array>;

export const SIG_PARAM = 'X-Sig';
export const EXPIRES_PARAM = 'X-Expires';
/** When the link was signed, in Unix milliseconds: a file's links revoked at T are those issued at or before T. */
export const ISSUED_PARAM = 'X-Issued';
export const MAX_EXPIRY_SECONDS = 86_400;
export const DEFAULT_EXPIRY_SECONDS = 3_600;
/** Clocks of the signer and the edge may disagree this much; a link expiring later than now + MAX_EXPIRY_SECONDS + this is refused. */
export const LINK_CLOCK_SKEW_SECONDS = 300;

/** RFC 3986 percent-encoding: unreserved characters stay, everything else is escaped. */
export function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export type QueryPairs = ReadonlyArray<readonly [string, string]>;

/** Every parameter but X-Sig, encoded, sorted by the encoded text in byte order, joined by "&". */
export function canonicalQuery(pairs: QueryPairs): string {
  const encoded: string[] = [];
  for (const [name, value] of pairs) {
    if (name === SIG_PARAM) continue;
    encoded.push(`${rfc3986(name)}=${rfc3986(value)}`);
  }
  // Code-unit order equals byte order here: the encoded text is ASCII.
  encoded.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return encoded.join('&');
}

export const stringToSign = (path: string, pairs: QueryPairs): string => `${path}\n${canonicalQuery(pairs)}`;

export interface SignOptions {
  /** Seconds from `now` until the link expires. */
  expiresIn: number;
  /** Unix seconds; defaults to the current time. */
  now?: number;
  /** Extra parameters signed along, such as download=1. */
  params?: Record<string, string>;
  /** Unix milliseconds the link is issued at; defaults to `now`, else the current time. */
  issuedAtMs?: number;
}

export interface SignedPath {
  /** Path and query, to append to the delivery address. */
  pathAndQuery: string;
  expires: number;
}

function signedPairs(opts: SignOptions): { pairs: Array<[string, string]>; expires: number } {
  if (!(opts.expiresIn >= 1 && opts.expiresIn <= MAX_EXPIRY_SECONDS)) throw new RangeError(`A link lives from 1 to ${MAX_EXPIRY_SECONDS} seconds, not ${opts.expiresIn}.`);
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const expires = now + Math.floor(opts.expiresIn);
  const issued = opts.issuedAtMs ?? (opts.now !== undefined ? opts.now * 1000 : Date.now());
  const pairs: Array<[string, string]> = [[EXPIRES_PARAM, String(expires)], [ISSUED_PARAM, String(Math.floor(issued))]];
  for (const [k, v] of Object.entries(opts.params ?? {})) pairs.push([k, v]);
  return { pairs, expires };
}

function assemble(path: string, pairs: QueryPairs, signature: Uint8Array): string {
  const query = canonicalQuery(pairs);
  return `${path}?${query}&${SIG_PARAM}=${bytesToBase64Url(signature)}`;
}

export function signPath(path: string, secret: string, opts: SignOptions, hmac: HmacSha256): SignedPath {
  const { pairs, expires } = signedPairs(opts);
  return { pathAndQuery: assemble(path, pairs, hmac(secret, stringToSign(path, pairs))), expires };
}

export async function signPathAsync(path: string, secret: string, opts: SignOptions, hmac: AsyncHmacSha256): Promise<SignedPath> {
  const { pairs, expires } = signedPairs(opts);
  return { pathAndQuery: assemble(path, pairs, await hmac(secret, stringToSign(path, pairs))), expires };
}

/** Splits a raw query string into decoded pairs; returns null when it cannot be decoded. */
export function parseQuery(rawQuery: string): Array<[string, string]> | null {
  const pairs: Array<[string, string]> = [];
  if (rawQuery === '') return pairs;
  for (const part of rawQuery.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const rawName = eq < 0 ? part : part.slice(0, eq);
    const rawValue = eq < 0 ? '' : part.slice(eq + 1);
    try {
      pairs.push([decodeURIComponent(rawName.replace(/\+/g, ' ')), decodeURIComponent(rawValue.replace(/\+/g, ' '))]);
    } catch {
      return null;
    }
  }
  return pairs;
}

export type LinkCheck =
  | { kind: 'unsigned'; download: boolean }
  /** `issuedMs`: X-Issued, or for a link without one the earliest it could have been signed. */
  | { kind: 'valid'; expires: number; download: boolean; issuedMs: number }
  | { kind: 'invalid' }
  | { kind: 'expired'; expires: number };

/** Equal-length comparison whose time does not depend on where the bytes differ. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

function base64UrlToBytes(value: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(value)) return null;
  const b64 = value.replace(/-/g, '+').replace(/_/g, '/');
  try {
    const bin = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

/**
 * Checks a request's link in the order of contract §7: a wrong signature is refused
 * before an expired one, and every configured secret is tried.
 */
/** Whether a query that could not be decoded still tries to carry a signature. */
const mentionsSignature = (rawQuery: string): boolean => /(^|&)(X-Sig|X-Expires|X-Issued)(=|&|$)|(^|&)X%2D/i.test(rawQuery);

/** Whether every parameter is written exactly as the signer writes it (RFC 3986, `name=value`). */
function isCanonicalSpelling(rawQuery: string, pairs: QueryPairs): boolean {
  const raw = rawQuery.split('&');
  if (raw.length !== pairs.length) return false;
  return raw.every((part, i) => part === `${rfc3986(pairs[i]![0])}=${rfc3986(pairs[i]![1])}`);
}

export function verifyLink(path: string, rawQuery: string, secrets: readonly string[], nowSeconds: number, hmac: HmacSha256): LinkCheck {
  const pairs = parseQuery(rawQuery);
  // A stray "%" in the query of a plain link is no signature error: only a link that carries one is judged.
  if (pairs === null) return mentionsSignature(rawQuery) ? { kind: 'invalid' } : { kind: 'unsigned', download: false };
  const sigs = pairs.filter(([k]) => k === SIG_PARAM);
  const expiresValues = pairs.filter(([k]) => k === EXPIRES_PARAM);
  const download = pairs.some(([k, v]) => k === 'download' && v === '1');
  if (sigs.length === 0 && expiresValues.length === 0) return { kind: 'unsigned', download };
  if (sigs.length !== 1 || expiresValues.length !== 1) return { kind: 'invalid' };
  // One spelling per link: re-encoding any character of it (%58-Sig, X-Sig=%41…) is another link, refused.
  if (!isCanonicalSpelling(rawQuery, pairs)) return { kind: 'invalid' };
  const expiresText = expiresValues[0]![1];
  if (!/^\d{1,15}$/.test(expiresText)) return { kind: 'invalid' };
  const issuedValues = pairs.filter(([k]) => k === ISSUED_PARAM);
  if (issuedValues.length > 1 || (issuedValues.length === 1 && !/^\d{1,15}$/.test(issuedValues[0]![1]))) return { kind: 'invalid' };
  const sigText = sigs[0]![1];
  const given = base64UrlToBytes(sigText);
  // One spelling only: the unused low bits of the last character must be zero, as the signer writes them.
  if (given === null || given.length !== 32 || bytesToBase64Url(given) !== sigText) return { kind: 'invalid' };
  const message = stringToSign(path, pairs);
  let ok = false;
  // Try every secret without stopping early, so timing says nothing about which matched.
  for (const secret of secrets) ok = constantTimeEqual(hmac(secret, message), given) || ok;
  if (!ok) return { kind: 'invalid' };
  const expires = Number(expiresText);
  // No signer issues a link for longer than a day: one that claims to be is refused, however it was made.
  if (expires > nowSeconds + MAX_EXPIRY_SECONDS + LINK_CLOCK_SKEW_SECONDS) return { kind: 'invalid' };
  if (nowSeconds > expires) return { kind: 'expired', expires };
  // A link signed before X-Issued existed lived at most a day: it was issued no earlier than that.
  const issuedMs = issuedValues.length === 1 ? Number(issuedValues[0]![1]) : (expires - MAX_EXPIRY_SECONDS) * 1000;
  return { kind: 'valid', expires, download, issuedMs };
}

/** Whether a valid link was issued at or before its file's links were revoked. */
export const isRevoked = (issuedMs: number, linksRevokedAt: number | null | undefined): boolean =>
  linksRevokedAt !== null && linksRevokedAt !== undefined && issuedMs <= linksRevokedAt;

export const deliveryPath = (fileId: string): string => `/files/${encodeURIComponent(fileId)}`;
