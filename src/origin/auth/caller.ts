/**
 * Who is calling, as established for the route that matched: the holder of the access key
 * (root), a Playground session, or an edge. Stored per request (`request.caller`) for the
 * handlers and for what builds on it later (scoped keys).
 */
import { errors } from '../../core/errors.js';
import type { CofferService } from '../../service/service.js';
import type { Access } from './access.js';
import { bearerChecker, edgeTokenChecker } from './secrets.js';
import { CSRF_HEADER, checkCsrf, hasSessionCookie, sessionToken } from './session-cookie.js';

export type Caller =
  | { kind: 'root' }
  | { kind: 'session'; expiresAt: number }
  | { kind: 'edge' };

export interface RequestHeaders {
  authorization?: string | undefined;
  cookie?: string | undefined;
  [CSRF_HEADER]?: string | string[] | undefined;
}

export interface AuthenticatorOptions {
  accessKey: string;
  /** The edge tokens valid now; none means no edge is let in. */
  edgeTokens: string[];
  service: { sessions: Pick<CofferService['sessions'], 'find'> };
}

/**
 * Establishes the caller a route's declaration asks for, or throws 401/403. Returns null for
 * routes that need no credential here (`public`, `sign-in`, and `session`, whose routes
 * check the cookie themselves).
 */
export function authenticator(opts: AuthenticatorOptions): (access: Access, headers: RequestHeaders) => Promise<Caller | null> {
  const checkBearer = bearerChecker(opts.accessKey);
  const checkEdge = edgeTokenChecker(opts.edgeTokens);
  return async (access, headers) => {
    switch (access) {
      case 'public':
      case 'sign-in':
      case 'session':
        return null;
      case 'edge':
        checkEdge(headers.authorization);
        return { kind: 'edge' };
      case 'api': {
        // A request carrying an Authorization header is judged by it alone, so a stray cookie
        // can neither help nor hurt a key holder.
        if (headers.authorization !== undefined || !hasSessionCookie(headers.cookie)) {
          checkBearer(headers.authorization);
          return { kind: 'root' };
        }
        const token = sessionToken(headers.cookie);
        const session = token === undefined ? null : await opts.service.sessions.find(token);
        if (!session) throw errors.unauthorized('The session has ended or expired; sign in again (POST /session), or send "Authorization: Bearer <ACCESS_KEY>".');
        checkCsrf(session.csrfToken, headers[CSRF_HEADER]);
        return { kind: 'session', expiresAt: session.expiresAt };
      }
    }
  };
}
