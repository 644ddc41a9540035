/**
 * What every listener of the origin's process (the origin's, S3's) is made with: a log that
 * never holds a credential, request ids on every line, the listener's bounds
 * (core/listener-bounds.ts) and request timeouts (request-timeouts.ts), body bytes counted
 * (received-bytes.ts), and no answer of Fastify's own while closing (each app answers in its
 * own error shape).
 */
import { LogController, type FastifyInstance } from 'fastify';
import { boundListener, type ConnectionCaps } from '../core/listener-bounds.js';
import { listenerCaps } from '../core/fd-budget.js';
import { httpServerOptions, installRequestTimeouts, type RequestTimeouts } from './request-timeouts.js';

export interface ListenerOptions extends RequestTimeouts {
  logLevel?: string | undefined;
  /** A pino destination for tests; standard output by default. */
  logStream?: NodeJS.WritableStream | undefined;
  /** Paths in log lines written as "[redacted]", whatever a future log call includes. */
  redact: string[];
  /** Connections held at once, in all and per address (default: the open-file budget of one listener). */
  connections?: ConnectionCaps | undefined;
}

/** The Fastify options a listener is made with, beside its own. */
export function listenerFastifyOptions(o: ListenerOptions) {
  return {
    logger: {
      level: o.logLevel ?? 'info',
      redact: { paths: o.redact, censor: '[redacted]' },
      ...(o.logStream ? { stream: o.logStream } : {}),
    } as never,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'req_id' }),
    // A stalled client is dropped: headers within one bound, then no idle stretch longer than the other.
    ...httpServerOptions(o),
    return503OnClosing: false,
    forceCloseConnections: 'idle' as const,
  };
}

/** Holds the app's listener to its bounds: the request timeouts, and the caps on connections. */
export function installListenerBounds(app: FastifyInstance, o: ListenerOptions): void {
  const timeouts = { headersTimeoutMs: o.headersTimeoutMs, idleTimeoutMs: o.idleTimeoutMs };
  installRequestTimeouts(app, timeouts);
  boundListener(app.server, { ...timeouts, ...(o.connections ?? listenerCaps({}, 1)) }, (message) => app.log.warn(message));
}
