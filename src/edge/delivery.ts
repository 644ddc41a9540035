/**
 * The delivery decision of contract §7 and the headers of an answer, kept free of Node's
 * HTTP types so the same rules can run wherever an edge runs.
 */
import { LINK_CLOCK_SKEW_SECONDS, MAX_EXPIRY_SECONDS, isRevoked, verifyLink, type HmacSha256, type LinkCheck } from '../core/signing.js';
import type { Visibility } from '../core/records.js';
import { ERROR_CODES, type ErrorCode } from '../core/error-codes.js';
import type { EdgeFile } from './state.js';

export type Decision =
  | { kind: 'error'; status: number; code: ErrorCode; message: string }
  | { kind: 'serve'; signed: boolean; download: boolean };

/** A request's decision as an edge holds it: bytes may be served (of this file), a refusal, or no word from the origin. */
export type Judgement = { file: EdgeFile; decision: Extract<Decision, { kind: 'serve' }> } | { error: Extract<Decision, { kind: 'error' }> } | 'unavailable';

const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Splits a request target; refuses the path tricks an id never contains. */
/**
 * The target in origin form: one in absolute form (`GET http://host/files/ID`, RFC 9112 §3.2.2)
 * names the same resource by its path and query, whatever the host says.
 */
export function originForm(target: string): string {
  // The usual target, "/files/ID", is in origin form already: no pattern to run.
  if (target.charCodeAt(0) === 0x2f) return target;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(target);
  if (!scheme) return target;
  const rest = target.slice(scheme[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

export function parseTarget(requestTarget: string): { path: string; query: string; id: string | null } | { error: string } {
  const target = originForm(requestTarget);
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? '' : target.slice(q + 1);
  if (!path.startsWith('/files/')) return { path, query, id: null };
  const id = path.slice(7);
  if (ID.test(id)) return { path, query, id };
  if (/%2f|%5c|%00|%2e|\.\.|\/|\\|\0/i.test(id)) return { error: 'The path is not a delivery path.' };
  return { path, query, id: null };
}

/** A refusal of contract §7: its status from the table of error codes. */
const refuse = (code: ErrorCode, message: string = ERROR_CODES[code].message): Decision => ({ kind: 'error', status: ERROR_CODES[code].status, code, message });

const notFound = refuse('not_found', 'No file is at this address.');

// The four verdicts that serve, made once: deciding a hit allocates nothing.
const SERVE: Record<'plain' | 'plainDownload' | 'signed' | 'signedDownload', Decision> = {
  plain: { kind: 'serve', signed: false, download: false },
  plainDownload: { kind: 'serve', signed: false, download: true },
  signed: { kind: 'serve', signed: true, download: false },
  signedDownload: { kind: 'serve', signed: true, download: true },
};
const NO_QUERY: LinkCheck = { kind: 'unsigned', download: false };

/**
 * Checks links, remembering the ones whose signature was right: a link is fetched again
 * and again (players ask for ranges, pages reload), and its signature cannot change.
 * Expiry is still checked on every request. Queries that carry no signature at all (a
 * Public image's `?w=320&format=auto`) are remembered too: their verdict is the text's.
 */
/**
 * Queries longer than this are read anew each time, never remembered: a signed link with
 * every variant parameter is under 200 characters, and remembering 16 KB queries would let
 * a client pin 160 MB in each table of 10,000.
 */
export const REMEMBERED_QUERY_CHARS = 512;

export class LinkChecker {
  /**
   * Keyed by the query alone, with the path it was signed for: a signed query carries its own
   * signature, so its text is as unique as path and query together, and the lookup hashes
   * one string the request already has instead of building another.
   */
  private readonly good = new Map<string, { path: string; check: Extract<LinkCheck, { kind: 'valid' }> }>();
  private readonly unsigned = new Map<string, LinkCheck>();

  constructor(private readonly secrets: readonly string[], private readonly hmac: HmacSha256, private readonly capacity = 10_000) {}

  /** Queries remembered (tests). */
  get size(): number {
    return this.good.size + this.unsigned.size;
  }

  /** The verdict on a link; a valid one is a shared object, never to be changed. */
  check(path: string, query: string, nowSeconds: number): LinkCheck {
    const known = this.good.get(query);
    if (known !== undefined && known.path === path) {
      const { expires } = known.check;
      if (expires > nowSeconds + MAX_EXPIRY_SECONDS + LINK_CLOCK_SKEW_SECONDS) return { kind: 'invalid' };
      return nowSeconds > expires ? { kind: 'expired', expires } : known.check;
    }
    const plain = this.unsigned.get(query);
    if (plain) return plain;
    const result = verifyLink(path, query, this.secrets, nowSeconds, this.hmac);
    if (query.length > REMEMBERED_QUERY_CHARS) return result;
    if (result.kind === 'valid') {
      if (!this.good.has(query) && this.good.size >= this.capacity) this.good.delete(this.good.keys().next().value!);
      this.good.set(query, { path, check: { kind: 'valid', expires: result.expires, download: result.download, issuedMs: result.issuedMs } });
    } else if (result.kind === 'unsigned') {
      if (this.unsigned.size >= this.capacity) this.unsigned.delete(this.unsigned.keys().next().value!);
      this.unsigned.set(query, result);
    }
    return result;
  }
}

export function decide(
  file: EdgeFile | undefined,
  visibility: Visibility | undefined,
  path: string,
  query: string,
  links: LinkChecker,
  nowSeconds: number,
): Decision {
  if (!file || !visibility) return notFound;
  // Most public requests carry no query at all: no parsing then.
  const check: LinkCheck = query === '' ? NO_QUERY : links.check(path, query, nowSeconds);
  switch (check.kind) {
    case 'invalid':
      return refuse('invalid_signature');
    case 'expired':
      return refuse('link_expired');
    case 'unsigned':
      if (visibility === 'Private') return refuse('signature_required');
      return check.download ? SERVE.plainDownload : SERVE.plain;
    case 'valid':
      // Revocation is read from the file on every request: the cache above holds signatures only.
      if (isRevoked(check.issuedMs, file.links_revoked_at)) {
        return refuse('link_revoked');
      }
      return check.download ? SERVE.signedDownload : SERVE.signed;
  }
}

// How a file is shown is the rule every dialect shares (src/core/user-bytes.ts).
export { contentDisposition, isActiveContent, isInlineSafe, sendableType } from '../core/user-bytes.js';

export interface ByteRange {
  start: number;
  end: number;
}

/** A single `bytes=` range; null to send the whole file, 'unsatisfiable' for 416. */
export function parseRange(header: string | undefined, size: number): ByteRange | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  // Several ranges, or another unit: answering with the whole file is allowed.
  if (!m) return null;
  const [, a, b] = m;
  if (a === '' && b === '') return null;
  let start: number;
  let end: number;
  if (a === '') {
    const suffix = Number(b);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(a);
    end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
    if (b !== '' && Number(b) < start) return null;
  }
  if (start >= size || size === 0) return 'unsatisfiable';
  return { start, end };
}

/** If-None-Match wins over If-Modified-Since (RFC 9110 §13.2.2). */
export function notModified(ifNoneMatch: string | undefined, ifModifiedSince: string | undefined, etag: string, lastModifiedMs: number): boolean {
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() === '*') return true;
    return ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
  }
  if (ifModifiedSince !== undefined) {
    const since = Date.parse(ifModifiedSince);
    return Number.isFinite(since) && Math.floor(lastModifiedMs / 1000) * 1000 <= since;
  }
  return false;
}
