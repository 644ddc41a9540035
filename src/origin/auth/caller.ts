/**
 * Who is calling, as established for the route that matched: the root key or a Playground
 * session signed in with it, another key (its scopes and folder), an upload grant, or an edge.
 * Keys, grants and sessions are judged by the service (service/credentials.ts, service/sessions.ts);
 * the caller is stored per request (`request.caller`) and handed to the service.
 */
import { errors } from '../../core/errors.js';
import type { Caller } from '../../core/access.js';
import type { CofferService } from '../../service/service.js';
import type { Access } from '../../http/access.js';
import { bearerOf, edgeTokenChecker, keyMatcher } from './secrets.js';
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
  service: { sessions: Pick<CofferService['sessions'], 'find'>; credentials: Pick<CofferService['credentials'], 'authenticateKey' | 'authenticateGrant'> };
  /** When set, GET /metrics asks for it. */
  metricsToken?: string | undefined;
}

const BEARER_SHAPE = 'The Authorization header must be "Bearer <ACCESS_KEY>".';

/**
 * Establishes the caller a route's declaration asks for, or throws 401/403. Returns null for
 * routes that need no credential here (`public`, `sign-in`, and `session`, whose routes
 * check the cookie themselves).
 */
export function authenticator(opts: AuthenticatorOptions): (access: Access, headers: RequestHeaders) => Promise<Caller | null> {
  const isRootKey = keyMatcher(opts.accessKey);
  const checkEdge = edgeTokenChecker(opts.edgeTokens);

  async function keyCaller(credential: string): Promise<Caller> {
    // The root key is compared first and always, so timing does not tell the two kinds apart.
    const root = isRootKey(credential);
    if (root) return { kind: 'root', via: 'key' };
    return opts.service.credentials.authenticateKey(credential);
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
        return opts.service.credentials.authenticateGrant(grant[1]!);
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

  return async (access, headers) => {
    switch (access) {
      case 's3':
        throw errors.forbidden('The S3 interface is not served here.');
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
