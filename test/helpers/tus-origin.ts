/**
 * Origins as `coffer origin` processes of the built CLI, for the tus tests that kill or
 * restart them, or run two side by side. The storage follows the vitest project: the data
 * dir's SQLite file and blobs in `embedded`, a fresh PostgreSQL database and S3 bucket
 * (shared by every origin of one `TusStorage`) in `postgres-s3`.
 */
import { createServer } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawnCoffer, type CofferProcess } from './processes.js';
import { TEST_BLOBS_S3, TEST_METADATA_POSTGRES, createTestBucket } from './origin.js';
import { createDatabase } from './postgres.js';

/** A port free now (for an origin that must come back on the same one). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Where some origins keep everything: one data dir, and the project's database and bucket. */
export interface TusStorage {
  dataDir: string;
  key: string;
  /** COFFER_DATABASE_URL / COFFER_BLOB_STORE in `postgres-s3`. */
  env: Record<string, string>;
  /** As test/helpers/stored-object.ts takes an origin. */
  blobStore?: string;
  databaseUrl?: string;
  /** Starts an origin on this storage, on `port` (0: any), answering with `baseUrl` in Location when given. */
  start(name: string, port?: number, baseUrl?: string): Promise<{ proc: CofferProcess; url: string }>;
  cleanup(): Promise<void>;
}

export async function tusStorage(): Promise<TusStorage> {
  const dataDir = await mkdtemp(join(tmpdir(), 'coffer-tus-'));
  const env: Record<string, string> = {};
  if (TEST_METADATA_POSTGRES) env.COFFER_DATABASE_URL = await createDatabase();
  // createTestBucket also sets the AWS_* credentials in this process, which children inherit.
  if (TEST_BLOBS_S3) env.COFFER_BLOB_STORE = await createTestBucket();
  const key = 'tus-key-' + randomBytes(8).toString('hex');
  const secret = 'tus-secret-' + randomBytes(8).toString('hex');
  const procs: CofferProcess[] = [];
  return {
    dataDir, key, env, blobStore: env.COFFER_BLOB_STORE, databaseUrl: env.COFFER_DATABASE_URL,
    async start(name, port = 0, baseUrl) {
      const proc = spawnCoffer({
        // Generous: a restart on PostgreSQL + S3 on a busy CI machine has taken over 15 s.
        name, kind: 'origin', args: ['origin'], readyTimeoutMs: 45_000,
        env: {
          COFFER_HOST: '127.0.0.1', COFFER_PORT: String(port), COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: key, COFFER_SIGNING_SECRET: secret,
          COFFER_CDN_URL: 'http://cdn.test', COFFER_RATE_LIMIT: '100000', COFFER_LOG_LEVEL: 'warn', ...(baseUrl ? { COFFER_BASE_URL: baseUrl } : {}), ...env,
        },
      });
      procs.push(proc);
      return { proc, url: await proc.ready };
    },
    async cleanup() {
      await Promise.all(procs.map((p) => p.stop('SIGKILL')));
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
