/** Starts a real origin (real HTTP, a real SQLite file and blob directory) for a test. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { loadConfig, type Config, type SettingName } from '../../src/config/config.js';
import { startOrigin, type OriginStores, type RunningOrigin } from '../../src/start/origin.js';
import type { Clock } from '../../src/core/clock.js';
import { jsonClient } from '../kit/client.js';
import { createDatabase } from './postgres.js';
import { S3RVER_CREDENTIALS, S3_REGION, testS3Client } from './s3.js';
import { CreateBucketCommand } from '@aws-sdk/client-s3';

export interface TestOrigin {
  url: string;
  key: string;
  secret: string;
  dataDir: string;
  /** COFFER_DATABASE_URL when the metadata is in PostgreSQL; undefined when in the data dir's SQLite file. */
  databaseUrl?: string;
  /** COFFER_BLOB_STORE when the bytes are in S3; undefined when in the data dir's blobs/. */
  blobStore?: string;
  origin: RunningOrigin;
  /** The settings the origin runs with; `coffer serve` sets cdnUrl here once its edge listens. */
  config: Config;
  /** Every log line the origin wrote. */
  logs: string[];
  /** POSTs JSON with the key; returns the status and parsed body. */
  post<T = any>(path: string, body: unknown, init?: { headers?: Record<string, string | undefined>; raw?: string | Buffer }): Promise<{ status: number; body: T; headers: Headers }>;
  close(): Promise<void>;
}

/** The Playground as `npm run build` leaves it; the origin runs from src here, so it is named explicitly. */
export const PLAYGROUND_BUILD = resolve(dirname(fileURLToPath(import.meta.url)), '../../dist/playground');

export interface TestOriginOptions {
  /** Where the Playground's build is (default: the project's dist/playground). */
  playgroundDir?: string;
  /**
   * Metadata in this database (COFFER_DATABASE_URL), e.g. a fresh one from
   * test/helpers/postgres.ts `createDatabase()`; default: SQLite in the data dir, or a fresh
   * PostgreSQL database when the run sets COFFER_TEST_METADATA=postgres. Likewise the bytes:
   * the data dir's blobs/, or a fresh bucket on the run's s3rver with COFFER_TEST_BLOBS=s3.
   */
  databaseUrl?: string;
  /** The origin's time (test/kit/clock.ts `ManualClock` to move it by hand); the system's by default. */
  clock?: Clock;
  /** Hands the service other stores in place of the ones opened (startOrigin's wrapStores): one that fails, say. */
  wrapStores?: (stores: OriginStores) => OriginStores;
}

/** With COFFER_TEST_METADATA=postgres: the database made for each data dir. */
const databaseOfDataDir = new Map<string, string>();
/** With COFFER_TEST_BLOBS=s3: the COFFER_BLOB_STORE made for each data dir. */
const blobStoreOfDataDir = new Map<string, string>();
let bucketCounter = 0;

/** Whether this run keeps test origins' bytes in S3 (COFFER_TEST_BLOBS=s3, the `postgres-s3` project). */
export const TEST_BLOBS_S3 = process.env.COFFER_TEST_BLOBS === 's3';
/** Whether this run keeps test origins' metadata in PostgreSQL (COFFER_TEST_METADATA=postgres). */
export const TEST_METADATA_POSTGRES = process.env.COFFER_TEST_METADATA === 'postgres';

/** A fresh, empty bucket on the run's s3rver (test/helpers/s3-setup.ts); returns its COFFER_BLOB_STORE value. */
export async function createTestBucket(): Promise<string> {
  const { inject } = await import('vitest');
  const provided = inject('s3');
  if (!provided) throw new Error('No test S3: the vitest project must list test/helpers/s3-setup.ts in globalSetup.');
  if ('error' in provided) throw new Error(provided.error);
  // The adapter takes credentials from the standard variables, like in production.
  process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
  delete process.env.AWS_SESSION_TOKEN;
  delete process.env.AWS_PROFILE;
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const bucket = `origin-${process.pid}-${++bucketCounter}-${Math.random().toString(36).slice(2, 8)}`;
  const client = testS3Client(provided.endpoint);
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
  return `s3://${bucket}?endpoint=${encodeURIComponent(provided.endpoint)}&region=${S3_REGION}&force_path_style=true`;
}

export async function startTestOrigin(settings: Partial<Record<SettingName, string>> = {}, options: TestOriginOptions = {}): Promise<TestOrigin> {
  const dataDir = settings.COFFER_DATA_DIR ?? (await mkdtemp(join(tmpdir(), 'coffer-test-')));
  const key = settings.COFFER_ACCESS_KEY ?? 'test-key-' + Math.random().toString(36).slice(2);
  const secret = settings.COFFER_SIGNING_SECRET ?? 'test-secret-' + Math.random().toString(36).slice(2);
  let databaseUrl = options.databaseUrl;
  if (!databaseUrl && process.env.COFFER_TEST_METADATA === 'postgres' && !settings.COFFER_DATABASE_URL) {
    // An origin restarted on the same data dir finds its database again.
    databaseUrl = databaseOfDataDir.get(dataDir) ?? (await createDatabase());
    databaseOfDataDir.set(dataDir, databaseUrl);
  }
  let blobStore: string | undefined;
  if (TEST_BLOBS_S3 && settings.COFFER_BLOB_STORE === undefined) {
    blobStore = blobStoreOfDataDir.get(dataDir) ?? (await createTestBucket());
    blobStoreOfDataDir.set(dataDir, blobStore);
  }
  const config = loadConfig({}, {
    COFFER_PORT: '0', COFFER_S3_PORT: '0', COFFER_CDN_URL: 'http://cdn.test', COFFER_RATE_LIMIT: '100000',
    ...(databaseUrl ? { COFFER_DATABASE_URL: databaseUrl } : {}), ...(blobStore ? { COFFER_BLOB_STORE: blobStore } : {}), ...settings,
    COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: key, COFFER_SIGNING_SECRET: secret,
  });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...chunk.toString().split('\n').filter(Boolean));
      cb();
    },
  });
  const origin = await startOrigin(config, { logStream, playgroundDir: options.playgroundDir ?? PLAYGROUND_BUILD, ...(options.clock ? { clock: options.clock } : {}),
    ...(options.wrapStores ? { wrapStores: options.wrapStores } : {}),
  });
  const url = origin.url;
  return {
    url, key, secret, dataDir, origin, config, logs, databaseUrl: config.databaseUrl, blobStore: config.blobStore,
    post: jsonClient(url, key).post,
    async close() {
      await origin.close();
      if (!settings.COFFER_DATA_DIR) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Uploads bytes through the three-step flow; returns the ready record (test/kit/upload.ts). */
export { upload as uploadBytes } from '../kit/upload.js';
