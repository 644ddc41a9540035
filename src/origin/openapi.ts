/**
 * The interface's OpenAPI document (GET /openapi.json) and its reference page (/docs), made
 * on the first request for either. The routes are noted as they are declared; the document
 * is @fastify/swagger's, built from those notes in a Fastify instance of its own that never
 * listens, and the page is @fastify/swagger-ui's, answered by that instance. An origin that
 * nobody asks for its documentation never loads either plugin, nor the YAML and static-file
 * libraries they bring (some 4 MB of an idle origin; docs/operations.md, "Memory").
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { errors } from '../core/errors.js';
import { docsTheme } from './docs-theme.js';

const DOCS_PREFIX = '/docs';

/** What the plugin reads of a route: its schema, and config.swaggerTransform. */
type NotedRoute = Pick<RouteOptions, 'method' | 'url' | 'schema' | 'constraints' | 'config'>;

/**
 * Notes every route declared on `app` from now on, and serves GET /openapi.json and the
 * reference page under /docs, both public.
 */
export function registerApiDocs(app: FastifyInstance, options: FastifyDynamicSwaggerOptions): void {
  const routes: NotedRoute[] = [];
  app.addHook('onRoute', (route: RouteOptions) => {
    // A lone HEAD route is left out, as the plugin leaves it out (Fastify's twin of a GET),
    // unless it asks to be in; the document's own routes are not part of it.
    const headTwin = route.method === 'HEAD' && (route.config as { swagger?: { exposeHeadRoute?: boolean } } | undefined)?.swagger?.exposeHeadRoute !== true;
    if (headTwin || route.url === '/openapi.json' || route.url === DOCS_PREFIX || route.url.startsWith(`${DOCS_PREFIX}/`)) return;
    routes.push({ method: route.method, url: route.url, schema: route.schema, constraints: route.constraints, config: route.config });
  });

  // Built once, by the first request; a failed build is tried again by the next.
  let building: Promise<FastifyInstance> | null = null;
  const docsApp = (): Promise<FastifyInstance> => (building ??= buildDocsApp(routes, options).catch((err: unknown) => {
    building = null;
    throw err;
  }));

  app.get('/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => (await docsApp()).swagger());
  const page = async (request: FastifyRequest, reply: FastifyReply) => {
    // The inner app resolves dot segments (`/docs/../x`, `%2e%2e`), which the router here
    // leaves as they are: only a path still under /docs once resolved goes on, resolved.
    const target = new URL(request.url, 'http://docs.invalid');
    // Named as GET for HEAD too, so both answers have one length.
    if (target.pathname !== DOCS_PREFIX && !target.pathname.startsWith(`${DOCS_PREFIX}/`)) throw errors.noRoute('GET', request.url);
    // GET for HEAD too: Fastify's HEAD route takes the length from the body and sends none.
    const res = await (await docsApp()).inject({ method: 'GET', url: target.pathname + target.search });
    // The page's own failures are answered in the contract's shape, like any other.
    if (res.statusCode >= 500) throw new Error(`the reference page answered ${res.statusCode} to ${target.pathname}`);
    if (res.statusCode >= 400) throw errors.noRoute('GET', request.url);
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) reply.header(name, value);
    }
    reply.code(res.statusCode);
    return res.rawPayload.length === 0 ? reply.send() : reply.send(res.rawPayload);
  };
  app.get(DOCS_PREFIX, { schema: { hide: true }, config: { access: 'public' } }, page);
  app.get(`${DOCS_PREFIX}/*`, { schema: { hide: true }, config: { access: 'public' } }, page);
}

/** Headers of the inner answer that belong to its own (simulated) connection and body. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date', 'content-length']);

async function buildDocsApp(routes: readonly NotedRoute[], options: FastifyDynamicSwaggerOptions): Promise<FastifyInstance> {
  const [{ default: Fastify }, { default: swagger }, { default: swaggerUi }] = await Promise.all([
    import('fastify'), import('@fastify/swagger'), import('@fastify/swagger-ui'),
  ]);
  const docs = Fastify({ logger: false });
  // The schemas are only read for the document here; the origin itself validates with them.
  docs.setValidatorCompiler(() => () => true);
  docs.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await docs.register(swagger, options);
  // BaseLayout: Swagger's own top bar (its logo draws an inline <style>, which the page's CSP
  // refuses) gives way to Coffer's, from the theme.
  await docs.register(swaggerUi, {
    routePrefix: DOCS_PREFIX, staticCSP: true, theme: docsTheme,
    uiConfig: { docExpansion: 'list', defaultModelsExpandDepth: 0, layout: 'BaseLayout' },
  });
  for (const r of routes) docs.route({ ...r, handler: async () => null });
  await docs.ready();
  return docs;
}
