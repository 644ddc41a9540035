/**
 * The Playground's sign-in: the access key is exchanged once for an HttpOnly session cookie,
 * so the page never holds the key. Calls made with the cookie also need the session's CSRF
 * token in a header (see auth/caller.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EndSessionRequest, EndSessionResponse, SessionRequest, SessionResponse } from '../core/api.js';
import { errors } from '../core/errors.js';
import { isoTime } from '../core/records.js';
import type { CofferService, Session } from '../service/service.js';
import { CSRF_HEADER, SESSION_COOKIE, checkCsrf, hasSessionCookie, sessionToken } from './auth/session-cookie.js';
import { keyMatcher } from './auth/secrets.js';

export interface SessionRouteOptions {
  accessKey: string;
  baseUrl: string;
  ttlSeconds: number;
  /** The error answers of the programmatic interface, for the OpenAPI document. */
  errorResponses: Record<number, unknown>;
}

export async function registerSessionRoutes(app: FastifyInstance, service: CofferService, opts: SessionRouteOptions): Promise<void> {
  const matches = keyMatcher(opts.accessKey);
  const httpsBase = opts.baseUrl.startsWith('https:');

  const cookie = (request: FastifyRequest, value: string, maxAge: number): string =>
    `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict` +
    // Over plain HTTP a Secure cookie would never come back; behind HTTPS it must not leave it.
    (httpsBase || request.protocol === 'https' ? '; Secure' : '');

  const answer = (reply: FastifyReply, session: Session) => {
    // The body carries the CSRF token: no cache may keep it.
    reply.header('Cache-Control', 'no-store');
    return { csrf_token: session.csrfToken, expires_at: isoTime(session.expiresAt) };
  };

  /** The live session of the request's cookie; a dead cookie is cleared on the way out. */
  const requireSession = async (request: FastifyRequest, reply: FastifyReply) => {
    const token = sessionToken(request.headers.cookie);
    const session = token === undefined ? null : await service.sessions.find(token);
    if (!session || token === undefined) {
      if (hasSessionCookie(request.headers.cookie)) reply.header('Set-Cookie', cookie(request, '', 0));
      throw errors.unauthorized('No live session: sign in with POST /session.');
    }
    return { token, session };
  };

  const errorResponses = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, opts.errorResponses[s]]));

  app.post('/session', {
    config: { access: 'sign-in' },
    schema: {
      summary: 'Sign in',
      description: 'Exchanges the access key for a session: an HttpOnly, SameSite=Strict cookie named coffer_session (Secure under HTTPS) '
        + `lasting ${opts.ttlSeconds} seconds, and a CSRF token that every cookie-authenticated call sends as X-CSRF-Token.`,
      tags: ['Session'],
      security: [],
      body: SessionRequest,
      response: { 200: SessionResponse, ...errorResponses(400, 401, 413, 415, 429) },
    },
    handler: async (request, reply) => {
      const { access_key } = request.body as SessionRequest;
      if (!matches(access_key)) throw errors.unauthorized('The access key is not valid.');
      // A new sign-in replaces the session this browser had, rather than leaving it live.
      const previous = sessionToken(request.headers.cookie);
      if (previous !== undefined) await service.sessions.end(previous);
      const session = await service.sessions.start();
      reply.header('Set-Cookie', cookie(request, session.token, opts.ttlSeconds));
      return answer(reply, session);
    },
  });

  app.get('/session', {
    config: { access: 'session' },
    schema: {
      summary: 'The current session',
      description: 'The CSRF token and expiry of the session the cookie names; 401 when there is none (never signed in, signed out or expired).',
      tags: ['Session'],
      security: [{ sessionCookie: [] }],
      response: { 200: SessionResponse, ...errorResponses(401, 429) },
    },
    handler: async (request, reply) => answer(reply, (await requireSession(request, reply)).session),
  });

  // Checked when the headers arrive, before the body, as the Bearer key is on /collections/*.
  const ending = new WeakMap<FastifyRequest, string>();
  app.post('/session/end', {
    config: { access: 'session' },
    schema: {
      summary: 'Sign out',
      description: 'Ends the session on the server, so its cookie is refused from then on even if replayed, and clears the cookie. Needs the cookie and X-CSRF-Token.',
      tags: ['Session'],
      security: [{ sessionCookie: [], csrfToken: [] }],
      body: EndSessionRequest,
      response: { 200: EndSessionResponse, ...errorResponses(400, 401, 403, 429) },
    },
    onRequest: async (request, reply) => {
      const { token, session } = await requireSession(request, reply);
      checkCsrf(session.csrfToken, request.headers[CSRF_HEADER]);
      ending.set(request, token);
    },
    handler: async (request, reply) => {
      await service.sessions.end(ending.get(request)!);
      reply.header('Set-Cookie', cookie(request, '', 0));
      reply.header('Cache-Control', 'no-store');
      return { ended: true as const };
    },
  });
}
