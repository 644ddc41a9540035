/**
 * Edges in this process that follow a test origin: `startTestEdge` with its cache in a
 * temporary directory, and `startLoggingEdge`, which also writes its access log
 * (COFFER_EDGE_ACCESS_LOG) there. `close` stops the edge and removes the directory.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config/config.js';
import type { Clock } from '../../src/core/clock.js';
import { startEdge, type RunningEdge } from '../../src/edge/server.js';
import type { TestOrigin } from './origin.js';

export interface TestEdge {
  edge: RunningEdge;
  /** The edge's data directory. */
  dir: string;
  close(): Promise<void>;
}

/**
 * `originUrl` reaches the origin another way (say, through a test/helpers/tcp-proxy.ts proxy);
 * `clock` is the edge's time, the origin's own for lease and expiry tests (test/kit/clock.ts).
 */
export async function startTestEdge(o: TestOrigin, env: (dir: string) => Record<string, string> = () => ({}), originUrl = o.url, opts: { clock?: Clock } = {}): Promise<TestEdge> {
  const dir = await mkdtemp(join(tmpdir(), 'coffer-test-edge-'));
  const config = loadConfig({}, {
    COFFER_HOST: '127.0.0.1', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: dir, COFFER_SIGNING_SECRET: o.secret, COFFER_LOG_LEVEL: 'warn',
    COFFER_EDGE_TOKEN: o.origin.credentials.edgeTokens[0], ...env(dir),
  });
  const edge = await startEdge(config, originUrl, { cacheDir: dir, logStream: new Writable({ write(_c, _e, cb) { cb(); } }), ...(opts.clock ? { clock: opts.clock } : {}) });
  return {
    edge, dir,
    async close() {
      await edge.close();
      // A prefetch under way when the edge closed may still rename its file into the cache.
      await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    },
  };
}

export interface LoggingEdge extends TestEdge {
  logPath: string;
}

export async function startLoggingEdge(o: TestOrigin): Promise<LoggingEdge> {
  const running = await startTestEdge(o, (dir) => ({ COFFER_EDGE_ACCESS_LOG: join(dir, 'access.log') }));
  return { ...running, logPath: join(running.dir, 'access.log') };
}
