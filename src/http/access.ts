/**
 * Who may call each route. Every route declares it in `config.access`; authentication runs
 * for the route the router matched, so no spelling of a path (percent-encoding, case,
 * slashes, dot segments, absolute-form targets) reaches a handler around it. A route that
 * declares nothing is refused when it is registered, so the app never starts: deny by default.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * - `api`: the programmatic interface: the root key or another key, or a Playground session with its CSRF token; rate limited.
 * - `upload`: as `api`, and upload grants too (`Authorization: Grant …`): the upload calls and /tus.
 * - `sign-in`: open to anyone, rate limited like `api` (it guesses at the key).
 * - `session`: the session routes, which check the session cookie themselves; rate limited.
 * - `edge`: an edge token.
 * - `metrics`: GET /metrics: anyone, or the COFFER_METRICS_TOKEN holder when one is set.
 * - `s3`: the S3 interface (contract §12): a key, by its AWS Signature Version 4 (header or presigned query); rate limited.
 * - `public`: anyone.
 */
export type Access = 'api' | 'upload' | 'sign-in' | 'session' | 'edge' | 'metrics' | 's3' | 'public';
const ACCESS: ReadonlySet<string> = new Set<Access>(['api', 'upload', 'sign-in', 'session', 'edge', 'metrics', 's3', 'public']);

/** The declarations that draw on the per-client request budget. */
export const RATE_LIMITED: ReadonlySet<Access> = new Set<Access>(['api', 'upload', 'sign-in', 'session', 's3']);

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyInstance {
    /** Every route with who may call it, as registered (HEAD routes Fastify adds included). */
    declaredRoutes: DeclaredRoute[];
    /** The declaration of a scope whose routes a plugin registers (see declareScope). */
    scopeAccess?: Access;
  }
}

export interface DeclaredRoute {
  method: string;
  url: string;
  access: Access;
}

const isAccess = (value: unknown): value is Access => typeof value === 'string' && ACCESS.has(value);

/**
 * Refuses, as it is registered, every route whose declaration is missing or unknown, and
 * lists the others on `app.declaredRoutes`, for tests and operators.
 */
export function requireAccessDeclarations(app: FastifyInstance): void {
  const routes: DeclaredRoute[] = [];
  app.decorate('declaredRoutes', routes);
  app.addHook('onRoute', function declared(route) {
    // `this` is the scope the route is registered in: a plugin's routes take its scope's declaration.
    const access: unknown = route.config?.access ?? this.scopeAccess;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!isAccess(access)) {
      throw new Error(`Route ${methods.join(',')} ${route.url} declares no access (config.access): every route must say who may call it.`);
    }
    route.config = { ...route.config, access };
    for (const method of methods) routes.push({ method, url: route.url, access });
  });
}

/** Declares `access` for every route registered inside `scope` (and its plugins) that declares none itself. */
export function declareScope(scope: FastifyInstance, access: Access): void {
  scope.decorate('scopeAccess', access);
}

/** The declaration of the route a request matched; undefined for the not-found handler. */
export function accessOf(request: FastifyRequest): Access | undefined {
  if (request.is404) return undefined;
  return request.routeOptions.config.access;
}
