/** Starts a real origin (real HTTP, a real SQLite file and blob directory) for a test. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { loadConfig, type SettingName } from '../../src/config/config.js';
import { startOrigin, type RunningOrigin } from '../../src/origin/server.js';
import { createDatabase } from './postgres.js';

export interface TestOrigin {
  url: string;
  key: string;
  secret: string;
  dataDir: string;
  origin: RunningOrigin;
  /** Every log line the origin wrote. */
  logs: string[];
  /** POSTs JSON with the key; returns the status and parsed body. */
  post<T = any>(path: string, body: unknown, init?: { headers?: Record<string, string>; raw?: string | Buffer }): Promise<{ status: number; body: T; headers: Headers }>;
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
   * PostgreSQL database when the run sets COFFER_TEST_METADATA=postgres.
   */
  databaseUrl?: string;
}

/** With COFFER_TEST_METADATA=postgres: the database made for each data dir. */
const databaseOfDataDir = new Map<string, string>();

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
  const config = loadConfig({}, {
    COFFER_PORT: '0', COFFER_CDN_URL: 'http://cdn.test', COFFER_RATE_LIMIT: '100000',
    ...(databaseUrl ? { COFFER_DATABASE_URL: databaseUrl } : {}), ...settings,
    COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: key, COFFER_SIGNING_SECRET: secret,
  });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...chunk.toString().split('\n').filter(Boolean));
      cb();
    },
  });
  const origin = await startOrigin(config, { logStream, playgroundDir: options.playgroundDir ?? PLAYGROUND_BUILD });
  const url = origin.url;
  return {
    url, key, secret, dataDir, origin, logs,
    async post(path, body, init = {}) {
      const res = await fetch(url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
        body: typeof init.raw === "string" || init.raw === undefined ? (init.raw ?? JSON.stringify(body)) : new Uint8Array(init.raw),
      });
      const text = await res.text();
      let parsed: any;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async close() {
      await origin.close();
      if (!settings.COFFER_DATA_DIR) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Uploads bytes through the three-step flow; returns the ready record. */
export async function uploadBytes(o: TestOrigin, bytes: Buffer, fields: Record<string, unknown> = {}): Promise<any> {
  const init = await o.post('/collections/upload/file', { name: 'file.bin', visibility: 'Public', size: bytes.length, file_type: 'other', ...fields });
  if (init.status !== 200) throw new Error(`initiate: ${init.status} ${JSON.stringify(init.body)}`);
  const s = init.body;
  for (let n = 1; n <= s.part_count; n++) {
    const chunk = bytes.subarray((n - 1) * s.chunk_size, n * s.chunk_size);
    const r = await o.post('/collections/upload/file-progress', { bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: n, body: chunk.toString('base64') });
    if (r.status !== 200) throw new Error(`part ${n}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const done = await o.post('/collections/upload/complete-upload', { file_id: s.fileId });
  if (done.status !== 200) throw new Error(`complete: ${done.status} ${JSON.stringify(done.body)}`);
  return done.body;
}
