/**
 * The edge's listener: a plain Node HTTP server (no framework on the hot path) bounded like
 * every listener of the service (core/listener-bounds.ts). A request Node's parser refuses is
 * answered in the contract's error shape.
 */
import http from 'node:http';
import type { EdgeLog } from './lazy-log.js';
import type { Config } from '../config/config.js';
import { answerClientError } from '../core/client-error.js';
import { listenerCaps } from '../core/fd-budget.js';
import { boundListener, boundedServerOptions } from '../core/listener-bounds.js';

/** Listens on COFFER_HOST:COFFER_EDGE_PORT, the only listener of `coffer edge` unless `coffer serve` shared the budget out. */
export async function listenEdge(config: Config, handler: http.RequestListener, log: EdgeLog): Promise<http.Server> {
  const bounds = { headersTimeoutMs: config.headersTimeoutMs, idleTimeoutMs: config.idleTimeoutMs, ...listenerCaps(config, 1) };
  // Longer than the 60 s a load balancer in front commonly keeps an idle connection.
  const server = http.createServer({ ...boundedServerOptions(bounds), keepAliveTimeout: 65_000 }, (req, res) => {
    handler(req, res);
    // A response still under way when the handler returns (a miss, a stream, a slow reader's
    // bytes queued) is bounded by the idle timeout; one that left at once needs no timer (once
    // it has finished, Node bounds the connection by keepAliveTimeout, as it did before).
    if (!res.writableEnded || res.writableLength > 0) res.socket?.setTimeout(bounds.idleTimeoutMs);
  });
  boundListener(server, bounds, (message) => log.warn(message));
  // The idle timeout is set per response above: a server-wide one makes Node create a timer for
  // every request and refresh it on every read and write (about 1% of a 4 KiB hit's instructions).
  // Before its headers a connection is bounded by headersTimeout, between requests by keepAliveTimeout.
  server.setTimeout(0);
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.edgePort, config.host, () => resolve());
  });
  return server;
}
