import { createHash, timingSafeEqual } from 'node:crypto';
import { errors } from '../core/errors.js';
import type { CofferService } from '../service/service.js';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * Compares two secrets in constant time: both sides are hashed first, so neither their
 * contents nor their lengths shape the timing.
 */
export const secretsEqual = (given: string, expected: string): boolean => timingSafeEqual(digest(given), digest(expected));

/** Whether a candidate is the access key, in constant time. */
export function keyMatcher(accessKey: string): (candidate: string) => boolean {
  const expected = digest(accessKey);
  return (candidate) => timingSafeEqual(digest(candidate), expected);
}

/** Checks an Authorization header against the access key. */
export function bearerChecker(accessKey: string): (header: string | undefined) => void {
  const matches = keyMatcher(accessKey);
  return (header) => {
    if (header === undefined || header === '') throw errors.unauthorized();
    const match = /^Bearer ([\x21-\x7e]+)$/i.exec(header.trim());
    if (!match) throw errors.unauthorized('The Authorization header must be "Bearer <ACCESS_KEY>".');
    if (!matches(match[1]!)) throw errors.unauthorized('The access key is not valid.');
  };
}

export const SESSION_COOKIE = 'coffer_session';
export const CSRF_HEADER = 'x-csrf-token';

// What startSession issues: 32 random bytes in base64url. Anything else is not looked up.
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** The session token of a Cookie header, if it carries one of the right shape. */
export function sessionToken(cookieHeader: string | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  for (const pair of cookieHeader.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0 || pair.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const value = pair.slice(eq + 1).trim();
    if (TOKEN_SHAPE.test(value)) return value;
  }
  return undefined;
}

/** Whether a Cookie header names a session at all, valid or not. */
export const hasSessionCookie = (cookieHeader: string | undefined): boolean =>
  cookieHeader !== undefined && cookieHeader.split(';').some((p) => p.split('=', 1)[0]!.trim() === SESSION_COOKIE);

export interface RequestCredentials {
  authorization: string | undefined;
  cookie: string | undefined;
  csrf: string | string[] | undefined;
}

/**
 * Authenticates a call of the programmatic interface: the Bearer key, or a live session
 * cookie together with that session's CSRF token. A request carrying an Authorization
 * header is judged by it alone, so a stray cookie can neither help nor hurt a key holder.
 */
export function requestAuthenticator(accessKey: string, service: CofferService): (req: RequestCredentials) => Promise<void> {
  const checkBearer = bearerChecker(accessKey);
  return async ({ authorization, cookie, csrf }) => {
    if (authorization !== undefined || !hasSessionCookie(cookie)) return checkBearer(authorization);
    const token = sessionToken(cookie);
    const session = token === undefined ? null : await service.findSession(token);
    if (!session) throw errors.unauthorized('The session has ended or expired; sign in again (POST /session), or send "Authorization: Bearer <ACCESS_KEY>".');
    checkCsrf(session.csrfToken, csrf);
  };
}

/** The CSRF header must equal the session's token: a page on another site cannot read it. */
export function checkCsrf(expected: string, given: string | string[] | undefined): void {
  if (given === undefined || given === '') {
    throw errors.csrfFailed('A session cookie needs the header "X-CSRF-Token" with the csrf_token that POST /session or GET /session returned.');
  }
  if (typeof given !== 'string' || !secretsEqual(given, expected)) {
    throw errors.csrfFailed('The "X-CSRF-Token" header does not match this session; read the current csrf_token with GET /session and send it.');
  }
}
