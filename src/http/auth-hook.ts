/**
 * The one place requests are authenticated and rate limited, on every listener of the origin's
 * process: by the declaration of the route that matched (access.ts). Who a credential stands
 * for is the listener's to say (the origin's keys, sessions and edges; S3's signatures).
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.js';
import type { Caller } from '../core/access.js';
import { RateLimiter } from './rate-limit.js';
import { RATE_LIMITED, accessOf, requireAccessDeclarations, type Access } from './access.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, once the route's declaration has been checked; null where it asks for no credential. */
    caller: Caller | null;
  }
}

/**
 * Establishes the caller a route's declaration asks for, or throws 401/403; null for
 * declarations that need no credential.
 */
export type Authenticate = (access: Access, headers: IncomingHttpHeaders, raw: IncomingMessage) => Promise<Caller | null>;

export interface AuthenticationOptions {
  authenticate: Authenticate;
  /** Requests per second per client address on rate-limited routes (bursts of twice that). */
  rateLimit: number;
}

/**
 * Requires every route registered from now on to declare who may call it, and checks each
 * request against the declaration of the route it matched, before its body is read.
 */
export function installAuthentication(app: FastifyInstance, opts: AuthenticationOptions): void {
  requireAccessDeclarations(app);
  app.decorateRequest('caller', null);
  // One bucket per client, whatever route or spelling it draws from.
  const limiter = new RateLimiter(opts.rateLimit);
  app.addHook('onClose', async () => limiter.close());

  app.addHook('onRequest', async (request, reply) => {
    const access = accessOf(request);
    if (access === undefined) {
      // The not-found handler answers 404 to anyone; a matched route always has a declaration.
      if (!request.is404) throw errors.unauthorized('This route is not open to anyone.');
      if (!announcesBody(request.headers)) return;
      // A body nobody will read: answer now and close rather than wait for it to arrive.
      reply.header('Connection', 'close');
      throw errors.noRoute(request.method, request.url);
    }
    try {
      if (RATE_LIMITED.has(access)) {
        const wait = limiter.take(request.ip);
        if (wait > 0) throw errors.rateLimited(wait);
      }
      const caller = await opts.authenticate(access, request.headers, request.raw);
      // Each key and grant also has a budget of its own, wherever its requests come from.
      const own = caller?.kind === 'key' ? `key:${caller.keyId}` : caller?.kind === 'grant' ? `grant:${caller.grant.id}` : null;
      if (own !== null) {
        const wait = limiter.take(own);
        if (wait > 0) throw errors.rateLimited(wait);
      }
      request.caller = caller;
    } catch (err) {
      // The body is never read: the connection closes with the answer instead of waiting for it.
      reply.header('Connection', 'close');
      throw err;
    }
  });
}

/** Whether the request says a body follows its headers. */
function announcesBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
