/**
 * Stalled clients are dropped: headers must arrive within one bound, and a connection may
 * not sit idle longer than another while a body is read or an answer written. The wait
 * between the two, while a handler works (a change waiting for edges, joining a large
 * upload), is bounded by the service, not by the client, so the idle timeout is off then.
 */
import type { ServerOptions } from 'node:http';
import type { FastifyInstance } from 'fastify';

export interface RequestTimeouts {
  /** Milliseconds a client may take to send its headers. */
  headersTimeoutMs: number;
  /** Milliseconds a connection may make no progress reading a body or writing an answer. */
  idleTimeoutMs: number;
}

/** The server options that enforce the bounds. */
export function timeoutServerOptions(t: RequestTimeouts): { http: ServerOptions; connectionTimeout: number } {
  return {
    // Node checks the headers timeout only every connectionsCheckingInterval (30 s by default).
    http: { headersTimeout: t.headersTimeoutMs, connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(t.headersTimeoutMs / 4))) },
    // The socket's idle timeout; Node destroys a socket that reaches it.
    connectionTimeout: t.idleTimeoutMs,
  };
}

/** Suspends the idle timeout once the body is in, and restores it for writing the answer. */
export function installRequestTimeouts(app: FastifyInstance, t: RequestTimeouts): void {
  app.addHook('preHandler', async (request) => {
    request.raw.socket?.setTimeout(0);
  });
  app.addHook('onSend', async (request) => {
    request.raw.socket?.setTimeout(t.idleTimeoutMs);
  });
}
