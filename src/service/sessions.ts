/**
 * Playground sessions: a cookie token whose hash alone is stored, and a CSRF token beside it.
 * A session is bound to the root key it was signed in with (its fingerprint is stored): once
 * the origin runs with another root key, it is refused.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rootFingerprint } from '../core/access.js';
import type { ServiceContext } from './context.js';

export const DEFAULT_SESSION_TTL_SECONDS = 43_200;

/** A live session as the origin needs it: what to compare the CSRF header with, and until when. */
export interface Session {
  csrfToken: string;
  expiresAt: number;
}

/** The key a session is stored under: its token's SHA-256, never the token. */
export const sessionTokenHash = (token: string): string => createHash('sha256').update(token).digest('hex');

export class Sessions {
  /** The current root key's fingerprint; null when the service has none, and then no session is valid. */
  private readonly rootPrint: string | null;

  constructor(private readonly c: ServiceContext) {
    this.rootPrint = c.opts.rootKey ? rootFingerprint(c.opts.rootKey) : null;
  }

  /** Opens a session for a caller that has shown the access key; the token goes in the cookie only. */
  async start(): Promise<Session & { token: string }> {
    if (this.rootPrint === null) throw new Error('sessions need the root key (ServiceOptions.rootKey)');
    // 256 random bits each: neither can be guessed.
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const now = this.c.now();
    const expiresAt = now + (this.c.opts.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_SECONDS) * 1000;
    await this.c.meta.transaction((tx) => tx.insertSession({
      token_hash: sessionTokenHash(token), csrf_token: csrfToken, created_at: now, expires_at: expiresAt, root_fingerprint: this.rootPrint,
    }));
    return { token, csrfToken, expiresAt };
  }

  /** The live session a cookie's token names, or null: unknown, ended, expired and signed in with another root key alike. */
  async find(token: string): Promise<Session | null> {
    const row = await this.c.meta.read.getSession(sessionTokenHash(token));
    // Expired sessions are refused at once; the sweeper only tidies up.
    if (!row || row.expires_at <= this.c.now()) return null;
    // Rotating COFFER_ACCESS_KEY ends what the old key opened. Rows older than the fingerprint have none: refused.
    if (this.rootPrint === null || row.root_fingerprint !== this.rootPrint) return null;
    return { csrfToken: row.csrf_token, expiresAt: row.expires_at };
  }

  /** Ends a session for good: its cookie is worthless from now on, wherever it is replayed. */
  async end(token: string): Promise<boolean> {
    return this.c.meta.transaction((tx) => tx.deleteSession(sessionTokenHash(token)));
  }

  /** Deletes expired sessions; returns how many. */
  async expire(): Promise<number> {
    return this.c.meta.deleteExpiredSessions(this.c.now());
  }
}
