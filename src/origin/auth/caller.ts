/**
 * Who is calling, as established for the route that matched: the root key or a Playground
 * session signed in with it, another key (its scopes and folder), an upload grant, or an edge.
 * Keys and grants are read from the store on every request with the keys that made them, so a
 * revoked one, or one whose maker was revoked, fails at every origin at once. Stored per
 * request (`request.caller`) and handed to the service.
 */
import type { IncomingMessage } from 'node:http';
import { errors } from '../../core/errors.js';
import { GRANT_PREFIX, KEY_PREFIX, parseScopes, rootFingerprint, splitCredential, type Caller } from '../../core/access.js';
import type { MetadataTx } from '../../core/ports.js';
import type { CofferService } from '../../service/service.js';
import { grantStanding, keyStanding, type Standing } from '../../service/lineage.js';
import type { Access } from './access.js';
import { bearerOf, edgeTokenChecker, hashMatches, keyMatcher } from './secrets.js';
import { checkScrape } from '../../metrics/registry.js';
import { CSRF_HEADER, checkCsrf, hasSessionCookie, sessionToken } from './session-cookie.js';

export type { Caller } from '../../core/access.js';

export interface RequestHeaders {
  authorization?: string | undefined;
  cookie?: string | undefined;
  [CSRF_HEADER]?: string | string[] | undefined;
}

export interface AuthenticatorOptions {
  accessKey: string;
  /** The edge tokens valid now; none means no edge is let in. */
  edgeTokens: string[];
  service: { sessions: Pick<CofferService['sessions'], 'find'>; meta: { read: Pick<MetadataTx, 'keys' | 'grants'> }; background: Pick<CofferService['background'], 'run'> };
  now?: () => number;
  /** When set, GET /metrics asks for it. */
  metricsToken?: string | undefined;
  /**
   * Establishes the caller of an S3 request from its SigV4 signature, which covers the method,
   * the target as sent and the raw headers (src/s3/auth.ts); without it, S3 routes let no one in.
   */
  s3?: (request: IncomingMessage) => Promise<Caller>;
}

/** A key's last use is written at most this often, so a busy key does not write on every request. */
const TOUCH_INTERVAL_MS = 60_000;

const BEARER_SHAPE = 'The Authorization header must be "Bearer <ACCESS_KEY>".';

/** Why a key or grant that does not work is refused, in words for its holder. */
function refusal(standing: Exclude<Standing, { ok: true }>, what: 'key' | 'upload grant'): string {
  if (standing.own && standing.reason === 'revoked') return `This ${what} was revoked.`;
  if (standing.own) return what === 'key' ? 'This key has expired.' : 'The upload grant has expired; ask the application for a new one.';
  if (standing.reason === 'rotated') return 'The root key that made this upload grant has been replaced; ask the application for a new one.';
  return `The key that made this ${what} (or a key above it) was revoked or has expired: it no longer works.`;
}

/**
 * Establishes the caller a route's declaration asks for, or throws 401/403. Returns null for
 * routes that need no credential here (`public`, `sign-in`, and `session`, whose routes
 * check the cookie themselves).
 */
export function authenticator(opts: AuthenticatorOptions): (access: Access, headers: RequestHeaders, raw?: IncomingMessage) => Promise<Caller | null> {
  const isRootKey = keyMatcher(opts.accessKey);
  const checkEdge = edgeTokenChecker(opts.edgeTokens);
  const now = opts.now ?? Date.now;
  const rootPrint = rootFingerprint(opts.accessKey);

  async function keyCaller(credential: string): Promise<Caller> {
    // The root key is compared first and always, so timing does not tell the two kinds apart.
    const root = isRootKey(credential);
    if (root) return { kind: 'root', via: 'key' };
    const parts = splitCredential(KEY_PREFIX, credential);
    const row = parts ? await opts.service.meta.read.keys.get(parts.id) : undefined;
    if (!parts || !row || !hashMatches(parts.secret, row.secret_hash)) throw errors.unauthorized('The access key is not valid.');
    const at = now();
    const standing = await keyStanding(opts.service.meta.read.keys, row, at);
    if (!standing.ok) throw errors.unauthorized(refusal(standing, 'key'));
    if (row.last_used_at === null || row.last_used_at < at - TOUCH_INTERVAL_MS) {
      // Best effort: the next use touches it again.
      void opts.service.background.run('key-touch', () => opts.service.meta.read.keys.touch(row.id, at), { retry: false });
    }
    return { kind: 'key', keyId: row.id, scopes: parseScopes(row.scopes), folderId: row.folder_id };
  }

  async function grantCaller(credential: string): Promise<Caller> {
    const parts = splitCredential(GRANT_PREFIX, credential);
    const row = parts ? await opts.service.meta.read.grants.get(parts.id) : undefined;
    if (!parts || !row || !hashMatches(parts.secret, row.secret_hash)) throw errors.unauthorized('The upload grant is not valid.');
    // A grant is worth no more than the keys that made it, or than the root key it was made with.
    const standing = await grantStanding(opts.service.meta.read.keys, row, now(), rootPrint);
    if (!standing.ok) throw errors.unauthorized(refusal(standing, 'upload grant'));
    return { kind: 'grant', grant: row };
  }

  async function apiCaller(headers: RequestHeaders, grants: boolean): Promise<Caller> {
    const header = headers.authorization;
    // A request carrying an Authorization header is judged by it alone, so a stray cookie
    // can neither help nor hurt a key holder.
    if (header !== undefined || !hasSessionCookie(headers.cookie)) {
      if (header === undefined || header === '') throw errors.unauthorized();
      const grant = /^Grant ([\x21-\x7e]+)$/i.exec(header.trim());
      if (grant) {
        if (!grants) throw errors.forbidden('An upload grant allows the upload calls only.');
        return grantCaller(grant[1]!);
      }
      const credential = bearerOf(header);
      if (credential === null) throw errors.unauthorized(BEARER_SHAPE);
      return keyCaller(credential);
    }
    const token = sessionToken(headers.cookie);
    const session = token === undefined ? null : await opts.service.sessions.find(token);
    if (!session) throw errors.unauthorized('The session has ended or expired; sign in again (POST /session), or send "Authorization: Bearer <ACCESS_KEY>".');
    checkCsrf(session.csrfToken, headers[CSRF_HEADER]);
    return { kind: 'root', via: 'session', sessionExpiresAt: session.expiresAt };
  }

  return async (access, headers, raw) => {
    switch (access) {
      case 's3':
        if (!opts.s3 || !raw) throw errors.forbidden('The S3 interface is not served here.');
        return opts.s3(raw);
      case 'public':
      case 'sign-in':
      case 'session':
        return null;
      case 'edge':
        checkEdge(headers.authorization);
        return { kind: 'edge' };
      case 'metrics':
        checkScrape(opts.metricsToken, headers.authorization);
        return null;
      case 'api':
        return apiCaller(headers, false);
      case 'upload':
        return apiCaller(headers, true);
    }
  };
}
