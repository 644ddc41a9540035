/**
 * Stalled clients are dropped: headers must arrive within one bound, and a connection may
 * not sit idle longer than another while a body is read or an answer written. The wait
 * between the two, while a handler works (a change waiting for edges, joining a large
 * upload), is bounded by the service, not by the client, so the idle timeout is off then.
 */
import type { ServerOptions } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { boundedServerOptions } from '../core/listener-bounds.js';
import { ReceivingMessage } from './received-bytes.js';

export interface RequestTimeouts {
  /** Milliseconds a client may take to send its headers. */
  headersTimeoutMs: number;
  /** Milliseconds a connection may make no progress reading a body or writing an answer. */
  idleTimeoutMs: number;
}

/** The options an origin's servers are made with: the listeners' bounds (core/listener-bounds.ts), body bytes counted (received-bytes.ts). */
export function httpServerOptions(t: RequestTimeouts): { http: ServerOptions; connectionTimeout: number } {
  return {
    http: { ...boundedServerOptions(t), IncomingMessage: ReceivingMessage },
    // Fastify sets it as the socket's idle timeout, as boundListener does.
    connectionTimeout: t.idleTimeoutMs,
  };
}

/**
 * The slowest body a client may send: the idle bound is met by a byte now and then, so a
 * body must also arrive whole within the idle timeout plus its size limit at this rate.
 */
const MIN_BODY_BYTES_PER_SECOND = 64 * 1024;

const bodyTimers = new WeakMap<object, NodeJS.Timeout>();

/**
 * Suspends the idle timeout once the body is in, and restores it for writing the answer;
 * a body that has not arrived whole by its deadline closes the connection.
 */
export function installRequestTimeouts(app: FastifyInstance, t: RequestTimeouts): void {
  app.addHook('onRequest', async (request) => {
    const length = request.headers['content-length'];
    if (request.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return;
    const limit = request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024;
    const deadline = t.idleTimeoutMs + Math.ceil((limit / MIN_BODY_BYTES_PER_SECOND) * 1000);
    const timer = setTimeout(() => request.raw.socket?.destroy(), deadline);
    timer.unref();
    bodyTimers.set(request, timer);
  });
  const bodyIn = async (request: object) => {
    clearTimeout(bodyTimers.get(request));
    bodyTimers.delete(request);
  };
  app.addHook('preValidation', bodyIn);
  app.addHook('onResponse', bodyIn);
  app.addHook('preHandler', async (request) => {
    request.raw.socket?.setTimeout(0);
  });
  app.addHook('onSend', async (request, reply) => {
    request.raw.socket?.setTimeout(t.idleTimeoutMs);
    // An answer given before the body is in (a refusal) ends the connection: a client still
    // sending would otherwise keep it, and the origin's shutdown, open.
    if (!request.raw.complete) reply.header('connection', 'close');
  });
}
