/** The Playground's session cookie and the CSRF token that must travel with it. */
import { errors } from '../../core/errors.js';
import { secretsEqual } from './secrets.js';

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

/** The CSRF header must equal the session's token: a page on another site cannot read it. */
export function checkCsrf(expected: string, given: string | string[] | undefined): void {
  if (given === undefined || given === '') {
    throw errors.csrfFailed('A session cookie needs the header "X-CSRF-Token" with the csrf_token that POST /session or GET /session returned.');
  }
  if (typeof given !== 'string' || !secretsEqual(given, expected)) {
    throw errors.csrfFailed('The "X-CSRF-Token" header does not match this session; read the current csrf_token with GET /session and send it.');
  }
}
