/**
 * The edge's listener: a plain Node HTTP server (no framework on the hot path) bounded like
 * every listener of the service (core/listener-bounds.ts). A request Node's parser refuses is
 * answered in the contract's error shape.
 */
import http from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { answerClientError } from '../core/client-error.js';
import { listenerCaps } from '../core/fd-budget.js';
import { boundListener, boundedServerOptions } from '../core/listener-bounds.js';

/** Listens on COFFER_HOST:COFFER_EDGE_PORT, the only listener of `coffer edge` unless `coffer serve` shared the budget out. */
export async function listenEdge(config: Config, handler: http.RequestListener, log: Logger): Promise<http.Server> {
  const bounds = { headersTimeoutMs: config.headersTimeoutMs, idleTimeoutMs: config.idleTimeoutMs, ...listenerCaps(config, 1) };
  // Longer than the 60 s a load balancer in front commonly keeps an idle connection.
  const server = http.createServer({ ...boundedServerOptions(bounds), keepAliveTimeout: 65_000 }, handler);
  boundListener(server, bounds, (message) => log.warn(message));
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.edgePort, config.host, () => resolve());
  });
  return server;
}
