/**
 * The Playground's link to the origin: the session (an HttpOnly cookie the page never
 * sees, plus a CSRF token kept only in memory) and one SDK client for every call.
 */
import { CofferClient, CofferError } from '../../src/sdk/index.js';

export interface Session {
  csrf_token: string;
  expires_at: string;
}

let csrf: string | null = null;

/** Every call the page makes: same-origin, cookie-authenticated, with the CSRF header. */
export const client = new CofferClient({
  url: '',
  credentials: 'same-origin',
  headers: (): Record<string, string> => (csrf ? { 'x-csrf-token': csrf } : {}),
});

export const csrfToken = (): string | null => csrf;

async function sessionCall(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> {
  return fetch(path, {
    method,
    credentials: 'same-origin',
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(csrf ? { 'x-csrf-token': csrf } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

async function failure(res: Response): Promise<CofferError> {
  try {
    const { error } = (await res.json()) as { error: { code: string; message: string; details?: Record<string, unknown> } };
    return new CofferError(res.status, error.code, error.message, error.details ?? {});
  } catch {
    return new CofferError(res.status, 'http_error', `The service answered ${res.status}.`, {});
  }
}

/** The current session, or null when signed out (no cookie, or it expired). */
export async function currentSession(): Promise<Session | null> {
  const res = await sessionCall('GET', '/session');
  if (res.status === 401) return null;
  if (!res.ok) throw await failure(res);
  const session = (await res.json()) as Session;
  csrf = session.csrf_token;
  return session;
}

/** Exchanges the access key for a session cookie; the key is not kept anywhere. */
export async function signIn(accessKey: string): Promise<Session> {
  const res = await sessionCall('POST', '/session', { access_key: accessKey });
  if (!res.ok) throw await failure(res);
  const session = (await res.json()) as Session;
  csrf = session.csrf_token;
  return session;
}

export async function signOut(): Promise<void> {
  const res = await sessionCall('POST', '/session/end', {});
  csrf = null;
  if (!res.ok && res.status !== 401) throw await failure(res);
}
