/**
 * Who may call each route. Every route declares it in `config.access`; the check runs for the
 * route the router matched, so no spelling of a path (percent-encoding, case, slashes, dot
 * segments, absolute-form targets) reaches a handler around it. A route that declares nothing
 * stops the app from starting: deny by default.
 */
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { errors } from '../core/errors.js';

/**
 * - `api`: the programmatic interface: the Bearer key, or a Playground session with its CSRF token; rate limited.
 * - `sign-in`: open to anyone, rate limited like `api` (it guesses at the key).
 * - `session`: the handler checks the session cookie itself.
 * - `edge`: the edge token (checked by the edge routes' own scope).
 * - `public`: anyone.
 */
export type Access = 'api' | 'sign-in' | 'session' | 'edge' | 'public';
const ACCESS: ReadonlySet<string> = new Set<Access>(['api', 'sign-in', 'session', 'edge', 'public']);

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
}

export interface DeclaredRoute {
  method: string;
  url: string;
  access: Access;
}

/**
 * Records every route as it is registered and refuses, when the app gets ready, any whose
 * declaration is missing or unknown. Returns the live list of routes, for tests and operators.
 */
export function requireAccessDeclarations(app: FastifyInstance): DeclaredRoute[] {
  const seen: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    seen.push(route);
  });
  const routes: DeclaredRoute[] = [];
  app.addHook('onReady', async () => {
    for (const r of seen) {
      // Plugin scopes may fill in their declaration after this hook saw the route: read it now.
      const access = (r.config as { access?: unknown } | undefined)?.access;
      const methods = Array.isArray(r.method) ? r.method : [r.method];
      if (typeof access !== 'string' || !ACCESS.has(access)) {
        throw new Error(`Route ${methods.join(',')} ${r.url} declares no access (config.access): every route must say who may call it.`);
      }
      for (const method of methods) routes.push({ method, url: r.url, access: access as Access });
    }
  });
  return routes;
}

/** Declares `access` for every route a plugin registers inside `scope` without one. */
export function defaultAccess(scope: FastifyInstance, access: Access): void {
  scope.addHook('onRoute', (route) => {
    route.config = { ...(route.config ?? {}), access: route.config?.access ?? access };
  });
}

/** The declaration of the route a request matched; undefined for the not-found handler. */
export function accessOf(request: FastifyRequest): Access | undefined {
  if (request.is404) return undefined;
  return request.routeOptions.config.access;
}

/** Thrown for a matched route without a declaration: cannot happen once the app is ready, refused if it does. */
export const undeclared = () => errors.unauthorized('This route is not open to anyone.');
