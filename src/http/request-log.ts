/**
 * One log line per answered request. What edges send all day by themselves (feed polls,
 * acknowledgements, usage reports, fills of their caches) and metrics scrapes are logged at
 * `debug` while they succeed, so that `info` holds what people and applications asked for,
 * and every failure an operator acts on: a refused edge token or a failing fill stays at `info`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { accessOf, type Access } from './access.js';

/** Route declarations whose requests come from the fleet's own machinery. */
const ROUTINE: ReadonlySet<Access | undefined> = new Set<Access>(['edge', 'metrics']);

/** Decided by the route the router matched, never by how the path was spelled. */
export const isRoutine = (request: FastifyRequest): boolean => ROUTINE.has(accessOf(request));

export interface RequestLogOptions {
  /** The line's message; "request" by default. */
  message?: string;
  /** Logs the path without the query, where a query may carry credentials (S3's presigned URLs). */
  pathOnly?: boolean;
}

export function installRequestLog(app: FastifyInstance, opts: RequestLogOptions = {}): void {
  const message = opts.message ?? 'request';
  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    const url = opts.pathOnly ? request.url.split('?')[0] : request.url;
    const line = { method: request.method, url, status, duration_ms: Math.round(reply.elapsedTime * 100) / 100 };
    if (status < 400 && isRoutine(request)) request.log.debug(line, message);
    else request.log.info(line, message);
  });
}
