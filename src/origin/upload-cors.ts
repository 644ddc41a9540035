/**
 * CORS for the upload calls (contract §10): a page on an application's own site uploads
 * straight to the origin with an upload grant. Only the routes declared `upload` answer
 * cross-origin, to any site (`*`) and never with credentials, so a browser never sends
 * or exposes a cookie with them: a session cannot be ridden from another site, and the
 * grant or key in the Authorization header is one the page already holds.
 */
import type { FastifyInstance } from 'fastify';
import { accessOf } from '../http/access.js';

/** How long a browser may reuse a preflight answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * Marks every answer of an upload route, refusals included (a browser should read why),
 * as readable from any site. Installed before authentication, so a 401 carries it too.
 */
export function installUploadCors(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers.origin === undefined || accessOf(request) !== 'upload') return;
    reply.header('Access-Control-Allow-Origin', '*');
    reply.header('Access-Control-Expose-Headers', 'Retry-After, X-Request-Id');
  });
}

/**
 * The preflight a browser sends before a cross-site POST with a JSON body or an
 * Authorization header: `OPTIONS` on each upload call under /collections/. It needs no
 * credential (browsers send none) and grants nothing by itself.
 */
export function registerUploadPreflight(app: FastifyInstance): void {
  const paths = app.declaredRoutes.filter((r) => r.access === 'upload' && r.method === 'POST' && r.url.startsWith('/collections/')).map((r) => r.url);
  for (const path of paths) {
    app.options(path, { schema: { hide: true }, config: { access: 'public' } }, async (_request, reply) => {
      reply.header('Access-Control-Allow-Origin', '*')
        .header('Access-Control-Allow-Methods', 'POST')
        .header('Access-Control-Allow-Headers', 'Authorization, Content-Type')
        .header('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS))
        .code(204)
        .send();
    });
  }
}
