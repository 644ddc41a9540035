/**
 * An edge in this process that follows a test origin and writes its access log
 * (COFFER_EDGE_ACCESS_LOG) to a file in a temporary directory, which `close` removes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config/config.js';
import { startEdge, type RunningEdge } from '../../src/edge/server.js';
import type { TestOrigin } from './origin.js';

export interface LoggingEdge {
  edge: RunningEdge;
  logPath: string;
  close(): Promise<void>;
}

export async function startLoggingEdge(o: TestOrigin): Promise<LoggingEdge> {
  const dir = await mkdtemp(join(tmpdir(), 'coffer-logging-edge-'));
  const logPath = join(dir, 'access.log');
  const config = loadConfig({}, {
    COFFER_HOST: '127.0.0.1', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: dir, COFFER_SIGNING_SECRET: o.secret, COFFER_LOG_LEVEL: 'warn',
    COFFER_EDGE_TOKEN: o.origin.credentials.edgeTokens[0], COFFER_EDGE_ACCESS_LOG: logPath,
  });
  const edge = await startEdge(config, o.url, { cacheDir: dir, logStream: new Writable({ write(_c, _e, cb) { cb(); } }) });
  return {
    edge, logPath,
    async close() {
      await edge.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
