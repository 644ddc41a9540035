/**
 * Crash safety (contract §4, complete-upload): an origin killed with SIGKILL at any
 * moment leaves every upload either still open and resumable, or ready and whole. Parts
 * go in both forms (contract §9), chosen at random for each send: base64 in JSON, or raw.
 * Runs the built CLI (`dist/cli/main.js origin`) as a child process on one data dir,
 * kills it at random moments while uploads run, and restarts it each time. In the
 * `postgres-s3` project the origin keeps its metadata in a fresh PostgreSQL database and its
 * bytes in a fresh bucket on s3rver, which outlive every kill like the data dir does.
 *
 * The machine may be shared: an origin stopped by a signal this test did not send is
 * restarted like a killed one and counted (stats.outsideStops), not mistaken for a bug;
 * an origin that exits by itself is a failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_BLOBS_S3, TEST_METADATA_POSTGRES, createTestBucket } from '../helpers/origin.js';
import { createDatabase } from '../helpers/postgres.js';
import { readStoredObject, type StoreOf } from '../helpers/stored-object.js';
import { sha256, sleep } from '../kit/index.js';

const C = 5 * 1024 * 1024;
const MAIN = resolve(dirname(fileURLToPath(import.meta.url)), '../../dist/cli/main.js');
const KEY = 'crash-key-' + randomBytes(8).toString('hex');
const SECRET = 'crash-secret-' + randomBytes(8).toString('hex');
const KILLS = 6;
/** Uploads started in each round, before its kill: 1, 2 or 3 chunks each. */
const UPLOADS_PER_ROUND = 4;
/**
 * The whole scenario must be over by then; the test fails with the state it reached. It
 * catches an upload that never finishes, not a slow one: about 40 s on a quiet 2-core machine,
 * and CI runs other test files beside it.
 */
const DEADLINE_MS = 100_000;
const REQUEST_TIMEOUT_MS = 15_000;
/** An origin on PostgreSQL migrates its schema first; a busy machine needs the margin. */
const START_TIMEOUT_MS = 30_000;

interface Server {
  url: string;
  gen: number;
  child: ChildProcess;
  /** Set just before the kill, or when it exited: its port may then be reused by any other process on the machine. */
  dead: boolean;
  killedByUs: boolean;
  /** Set when a signal from outside this test stopped it. */
  outsideStop: string | null;
  exited: Promise<void>;
  stderr: string;
}

/** Signals that only something outside the origin sends; the CLI prints this line when it stops on one. */
const OUTSIDE_SIGNALS = new Set(['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGKILL']);
const GRACEFUL_STOP = /(SIGTERM|SIGINT) received/;

/** The origin was stopped by a signal from outside the test before it was ready. */
class OutsideStop extends Error {}

interface Upload {
  index: number;
  bytes: Buffer;
  sha: string;
  partCount: number;
  session: { fileId: string; bucket: string; key: string; uploadId: string } | null;
  /** Parts whose stored bytes may be wrong: a wrong version may have been committed since the last good send. */
  tainted: Set<number>;
  /** SHA-256 of each wrong version sent per part, to tell what a wrong file is made of. */
  garbage: Map<number, string[]>;
  /** Once the service has said ready, it must stay ready after every restart. */
  seenReady: boolean;
  /** Its stored bytes were read back after a restart and were right. */
  checkedOnDisk: boolean;
  done: boolean;
  restarts: number;
}

/** A failure of the connection (the kill), as opposed to an answer. */
class ConnectionError extends Error {}

const children: ChildProcess[] = [];
const childLogs: string[] = [];

/** Starts an origin; `onExit` is told when it exits after it was ready and not by killServer. */
function startChild(dataDir: string, storageEnv: Record<string, string>, gen: number, onExit: (s: Server, code: number | null, signal: string | null) => void): Promise<Server> {
  const child = spawn(process.execPath, [MAIN, 'origin'], {
    env: {
      ...process.env, ...storageEnv,
      COFFER_HOST: '127.0.0.1', COFFER_PORT: '0', COFFER_S3_PORT: '0', COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: KEY, COFFER_SIGNING_SECRET: SECRET,
      COFFER_CDN_URL: 'http://cdn.test', COFFER_RATE_LIMIT: '100000', COFFER_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise<Server>((resolvePromise, reject) => {
    let out = '';
    let stderr = '';
    let server: Server | null = null;
    const timer = setTimeout(() => reject(new Error(`origin #${gen} did not print its URL within ${START_TIMEOUT_MS / 1000} s; output:\n${out}`)), START_TIMEOUT_MS);
    const onData = (data: Buffer) => {
      out += data.toString();
      childLogs.push(`[#${gen}] ${data.toString().trimEnd()}`);
      const m = /origin listening on (http:\/\/\S+)/.exec(out);
      if (m && !server) {
        clearTimeout(timer);
        server = { url: m[1]!, gen, child, dead: false, killedByUs: false, outsideStop: null, exited, stderr };
        resolvePromise(server);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (server) server.stderr = stderr;
      childLogs.push(`[#${gen} err] ${d.toString().trimEnd()}`);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (server) {
        server.dead = true;
        if (!server.killedByUs) onExit(server, code, signal);
        return;
      }
      const message = `origin #${gen} exited (code ${code}, signal ${signal}) before it was ready; output:\n${out}${stderr}`;
      reject((signal && OUTSIDE_SIGNALS.has(signal)) || GRACEFUL_STOP.test(stderr) ? new OutsideStop(message) : new Error(message));
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

function killServer(server: Server): Promise<void> {
  server.dead = true;
  if (server.child.exitCode === null && server.child.signalCode === null) server.killedByUs = true;
  return killChild(server.child);
}

function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise<void>((r) => {
    child.once('exit', () => r());
    child.kill('SIGKILL');
  });
}

async function post(server: Server, path: string, body: unknown, raw?: Buffer): Promise<{ status: number; body: any }> {
  // Never talk to a killed origin's address: another process may listen there by now.
  if (server.dead) throw new ConnectionError(`${path}: origin #${server.gen} was killed`);
  let res: Response;
  let text: string;
  try {
    res = await fetch(server.url + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': raw ? 'application/octet-stream' : 'application/json' },
      body: raw ? new Uint8Array(raw) : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    text = await res.text();
  } catch (err) {
    throw new ConnectionError(`${path} to origin #${server.gen}: ${(err as Error).message}`);
  }
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Left as text: the assertion that follows shows it.
  }
  return { status: res.status, body: parsed };
}

function partBytes(u: Upload, n: number): Buffer {
  return u.bytes.subarray((n - 1) * C, n * C);
}

const range = (count: number): number[] => Array.from({ length: count }, (_, i) => i + 1);

function shuffle<T>(items: T[]): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

describe('crash safety of uploads (SIGKILL of the origin process)', () => {
  let dataDir = '';
  /** COFFER_DATABASE_URL and COFFER_BLOB_STORE in the postgres-s3 project; nothing on embedded storage. */
  const storageEnv: Record<string, string> = {};
  /** Where the stored objects are read from, behind the origin's back. */
  let store: StoreOf = { dataDir: '' };

  beforeAll(async () => {
    if (!existsSync(MAIN)) {
      throw new Error(`${MAIN} is missing: build first with \`npm run build\` (\`npm test\` does it before vitest).`);
    }
    dataDir = await mkdtemp(join(tmpdir(), 'coffer-crash-'));
    if (TEST_METADATA_POSTGRES) storageEnv.COFFER_DATABASE_URL = await createDatabase();
    if (TEST_BLOBS_S3) storageEnv.COFFER_BLOB_STORE = await createTestBucket();
    store = { dataDir, ...(storageEnv.COFFER_BLOB_STORE ? { blobStore: storageEnv.COFFER_BLOB_STORE } : {}) };
  });

  afterAll(async () => {
    await Promise.all(children.map(killChild));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('leaves every upload resumable or ready and whole, across repeated kills', async () => {
    const started = Date.now();
    const overdue = () => Date.now() - started > DEADLINE_MS;
    const failures: string[] = [];
    const wrongUploads = new Set<Upload>();
    /** What the stored object of a wrong upload is made of, part by part. */
    async function diagnose(u: Upload): Promise<string> {
      const stored = await readStoredObject(store, u.session!.fileId).catch((err: Error) => err);
      if (stored instanceof Error) return `upload ${u.index}: object unreadable: ${stored.message}`;
      const parts = range(u.partCount).map((n) => {
        const h = sha256(stored.subarray((n - 1) * C, n * C));
        if (h === sha256(partBytes(u, n))) return `${n}:right`;
        const g = (u.garbage.get(n) ?? []).indexOf(h);
        return g >= 0 ? `${n}:wrong version #${g + 1} of ${u.garbage.get(n)!.length}` : `${n}:unknown bytes`;
      });
      return `upload ${u.index}: ${stored.length} bytes on disk, sha256 ${sha256(stored)}; parts ${parts.join(', ')}`;
    }
    const fail = (msg: string) => { failures.push(msg); };
    const stats = {
      kills: 0, killedDuringComplete: 0, connectionErrors: 0, resumedAfterKill: 0, readyBeforeLastKill: 0, uploadingAtRestart: 0,
      garbageSends: 0, resends: 0, outsideStops: 0, rawSends: 0, jsonSends: 0, completedOnPart: 0,
    };

    // ---- the origin: started, killed and restarted here only -------------------------
    let gen = 0;
    let serverChanged: () => void = () => {};
    let nextServer = new Promise<void>((r) => { serverChanged = r; });
    const restartErrors: unknown[] = [];
    const onExit = (s: Server, code: number | null, signal: string | null) => {
      if ((signal && OUTSIDE_SIGNALS.has(signal)) || GRACEFUL_STOP.test(s.stderr)) {
        s.outsideStop = signal ?? 'graceful stop';
        stats.outsideStops++;
      } else {
        fail(`origin #${s.gen} exited by itself (code ${code}, signal ${signal}); stderr:\n${s.stderr}`);
      }
      if (s === server) restart().catch((err: unknown) => restartErrors.push(err));
    };
    async function startOrigin(): Promise<Server> {
      for (let attempt = 1; ; attempt++) {
        try {
          return await startChild(dataDir, storageEnv, gen++, onExit);
        } catch (err) {
          if (!(err instanceof OutsideStop) || attempt >= 3) throw err;
          stats.outsideStops++;
        }
      }
    }
    let server = await startOrigin();
    let restarting: Promise<void> | null = null;
    /** Kills the origin (unless it is gone already) and starts the next one on the same data dir. */
    function restart(): Promise<void> {
      restarting ??= (async () => {
        try {
          await killServer(server);
          server = await startOrigin();
        } finally {
          restarting = null;
          // Wakes every upload waiting for the next origin (or for one that will not come).
          const changed = serverChanged;
          nextServer = new Promise<void>((r) => { serverChanged = r; });
          changed();
        }
      })();
      return restarting;
    }

    const uploads: Upload[] = [];
    const newUpload = (): Upload => {
      const index = uploads.length + 1;
      const parts = 1 + ((index - 1) % 3); // 1, 2, 3, 1, 2, 3 chunks
      const size = (parts - 1) * C + 1 + randomInt(C);
      const bytes = randomBytes(size);
      const u: Upload = { index, bytes, sha: sha256(bytes), partCount: parts, session: null, tainted: new Set(), garbage: new Map(), seenReady: false, checkedOnDisk: false, done: false, restarts: 0 };
      uploads.push(u);
      return u;
    };
    /** Each driver's error, or null; settled without unhandled rejections. */
    const drivers: Array<Promise<unknown>> = [];

    /** Checks one answer about an upload: open and consistent, or ready and right. */
    function checkState(u: Upload, what: string, r: { status: number; body: any }, readyBefore: boolean): 'ready' | 'uploading' {
      const id = u.session!.fileId;
      if (r.status !== 200) throw new Error(`${what} of upload ${u.index} (${id}) answered ${r.status} ${JSON.stringify(r.body)}: the upload was lost`);
      const body = r.body;
      if (body.status === 'ready') {
        if (what === 'status') {
          if (JSON.stringify(body.received) !== JSON.stringify(range(u.partCount)) || body.missing.length !== 0) {
            fail(`status of ready upload ${u.index} lists ${JSON.stringify(body)}`);
          }
        } else {
          if (body.sha256 !== u.sha) {
            fail(`upload ${u.index} is ready with sha256 ${body.sha256}, expected ${u.sha}`);
            wrongUploads.add(u);
          }
          if (body.size !== u.bytes.length) fail(`upload ${u.index} is ready with size ${body.size}, expected ${u.bytes.length}`);
        }
        u.seenReady = true;
        return 'ready';
      }
      if (body.status !== 'uploading') throw new Error(`${what} of upload ${u.index}: unexpected status ${JSON.stringify(body)}`);
      // readyBefore is taken before the request was sent: a ready seen meanwhile does not count.
      if (readyBefore) fail(`upload ${u.index} was ready and is 'uploading' again after a restart`);
      if (what === 'status') {
        if (body.part_count !== u.partCount) fail(`upload ${u.index}: part_count ${body.part_count}, expected ${u.partCount}`);
        const all = [...body.received, ...body.missing].sort((a: number, b: number) => a - b);
        if (JSON.stringify(all) !== JSON.stringify(range(u.partCount))) {
          fail(`upload ${u.index}: received ${JSON.stringify(body.received)} and missing ${JSON.stringify(body.missing)} do not partition 1..${u.partCount}`);
        }
      }
      return 'uploading';
    }

    async function sendPart(s: Server, u: Upload, n: number, bytes: Buffer): Promise<void> {
      const sess = u.session!;
      let r: { status: number; body: any };
      if (randomInt(2) === 0) {
        stats.rawSends++;
        const query = new URLSearchParams({ ...sess, partNumber: String(n) });
        r = await post(s, `/collections/upload/file-progress?${query}`, null, bytes);
      } else {
        stats.jsonSends++;
        r = await post(s, '/collections/upload/file-progress', { ...sess, partNumber: n, body: bytes.toString('base64') });
      }
      // A completion cut off after the store joined the parts (S3) is finished by the next part,
      // which is then refused as for any completed upload; complete-upload answers the file.
      if (r.status === 409 && r.body?.error?.code === 'upload_completed') {
        stats.completedOnPart++;
        return;
      }
      if (r.status !== 200) throw new Error(`part ${n} of upload ${u.index}: ${r.status} ${JSON.stringify(r.body)}`);
    }

    /** One pass of a client: find where the upload stands, send what it needs, complete. */
    async function step(s: Server, u: Upload): Promise<void> {
      if (!u.session) {
        const init = await post(s, '/collections/upload/file', { name: `crash-${u.index}.bin`, visibility: 'Public', size: u.bytes.length, file_type: 'other' });
        if (init.status !== 200) throw new Error(`initiate ${u.index}: ${init.status} ${JSON.stringify(init.body)}`);
        if (init.body.part_count !== u.partCount) throw new Error(`initiate ${u.index}: part_count ${init.body.part_count}`);
        const { fileId, bucket, key, uploadId } = init.body;
        u.session = { fileId, bucket, key, uploadId };
      }
      const readyBefore = u.seenReady;
      const st = await post(s, '/collections/upload/status', { file_id: u.session.fileId });
      if (checkState(u, 'status', st, readyBefore) === 'ready') {
        checkState(u, 'file/get', await post(s, '/collections/file/get', { file_id: u.session.fileId }), true);
        u.done = true;
        return;
      }
      // Missing parts, parts that may hold wrong bytes, and now and then a received part again.
      const received: number[] = st.body.received;
      const toSend = new Set<number>([...st.body.missing, ...u.tainted]);
      for (const n of received) if (randomInt(3) === 0) toSend.add(n);
      const order = shuffle([...toSend]);
      while (order.length > 0) {
        const batch = order.splice(0, 1 + randomInt(3));
        // Settled, not raced: when one send fails, none of the others is left running into the next pass.
        const sent = await Promise.allSettled(batch.map(async (n) => {
          if (received.includes(n)) stats.resends++;
          // Sometimes a wrong version first, replaced by the right one: the last sent counts.
          if (randomInt(4) === 0) {
            stats.garbageSends++;
            u.tainted.add(n);
            const wrong = randomBytes(partBytes(u, n).length);
            u.garbage.set(n, [...(u.garbage.get(n) ?? []), sha256(wrong)]);
            await sendPart(s, u, n, wrong);
          }
          await sendPart(s, u, n, partBytes(u, n));
          u.tainted.delete(n);
        }));
        const failed = sent.find((r) => r.status === 'rejected');
        if (failed) throw failed.reason;
      }
      const aliveBefore = !s.dead;
      const done = await post(s, '/collections/upload/complete-upload', { file_id: u.session.fileId }).catch((err: unknown) => {
        if (err instanceof ConnectionError && aliveBefore) stats.killedDuringComplete++;
        throw err;
      });
      if (done.status !== 200) throw new Error(`complete ${u.index}: ${done.status} ${JSON.stringify(done.body)}`);
      if (checkState(u, 'complete', done, readyBefore) !== 'ready') fail(`complete of upload ${u.index} answered 200 without 'ready'`);
      u.done = true;
    }

    async function drive(u: Upload): Promise<void> {
      while (!u.done) {
        if (overdue()) throw new Error(`upload ${u.index} did not finish in time`);
        const s = server;
        try {
          await step(s, u);
        } catch (err) {
          // An origin stopped from outside may answer 503 or drop the connection on its way out.
          if (!s.dead) await Promise.race([s.exited, sleep(3000)]);
          if (s.outsideStop === null) {
            if (!(err instanceof ConnectionError)) throw err;
            // Only a kill explains a broken connection; a live origin that drops one is a failure.
            if (!s.dead) throw new Error(`upload ${u.index}: ${err.message}, though origin #${s.gen} was not killed`);
            if (!s.killedByUs) throw new Error(`upload ${u.index}: ${err.message}: origin #${s.gen} exited by itself`);
          }
          stats.connectionErrors++;
          // Wait for the next origin.
          while (s === server && restarting) await nextServer;
          if (s === server) throw new Error(`upload ${u.index}: no origin was started after #${s.gen} stopped`);
          u.restarts++;
          stats.resumedAfterKill++;
        }
      }
    }

    /** After a restart: every upload is open and consistent, or ready and right. */
    async function sweep(s: Server): Promise<void> {
      await Promise.all(uploads.filter((u) => u.session).map(async (u) => {
        const wasReady = u.seenReady;
        const a = checkState(u, 'status', await post(s, '/collections/upload/status', { file_id: u.session!.fileId }), wasReady);
        const readyNow = u.seenReady;
        const b = checkState(u, 'file/get', await post(s, '/collections/file/get', { file_id: u.session!.fileId }), readyNow);
        if (a === 'ready' && b !== 'ready') fail(`upload ${u.index}: status said ready, then file/get said ${b}`);
        // A file the restarted origin calls ready has its whole bytes in place.
        if (a === 'ready' && !u.checkedOnDisk) {
          const onDisk = await readStoredObject(store, u.session!.fileId).catch((err: Error) => err);
          if (onDisk instanceof Error) fail(`upload ${u.index} is ready but its object cannot be read: ${onDisk.message}`);
          else if (sha256(onDisk) !== u.sha) fail(`upload ${u.index} is ready but its ${onDisk.length} bytes on disk are not the bytes sent`);
          else u.checkedOnDisk = true;
        }
        if (a === 'uploading') stats.uploadingAtRestart++;
        else if (wasReady) stats.readyBeforeLastKill++;
      }));
    }

    /** Each round starts new uploads, kills the origin at a random moment and restarts it. */
    async function killer(): Promise<void> {
      for (let k = 1; k <= KILLS; k++) {
        for (let i = 0; i < UPLOADS_PER_ROUND; i++) drivers.push(drive(newUpload()).then(() => null, (err: unknown) => err));
        await sleep(20 + randomInt(800));
        await restart();
        stats.kills++;
        const s = server;
        await sweep(s).catch(async (err: unknown) => {
          if (!s.dead) await Promise.race([s.exited, sleep(3000)]);
          if (s.outsideStop === null) throw err;
        });
      }
    }

    const killerError = await killer().then(() => null, (err: unknown) => err);
    const errors = [killerError, ...(await Promise.all(drivers)), ...restartErrors].filter((e) => e !== null).map((e) => String((e as Error)?.stack ?? e));
    const diagnoses = await Promise.all([...wrongUploads].map(diagnose));
    const report = () => `stats ${JSON.stringify(stats)}\nfailures:\n${failures.join('\n')}\nwrong uploads:\n${diagnoses.join('\n')}\nerrors:\n${errors.join('\n')}\nlast origin output:\n${childLogs.slice(-20).join('\n')}`;
    expect(errors, report()).toEqual([]);
    expect(failures, report()).toEqual([]);
    expect(stats.kills, report()).toBe(KILLS);
    expect(uploads.length).toBe(KILLS * UPLOADS_PER_ROUND);
    expect(uploads.every((u) => u.done), report()).toBe(true);
    // At least one kill landed while uploads were under way (not only between them).
    expect(stats.connectionErrors, report()).toBeGreaterThan(0);
    expect(stats.rawSends, report()).toBeGreaterThan(0);
    expect(stats.jsonSends, report()).toBeGreaterThan(0);

    // One more kill and restart with everything complete: all of it must have lasted.
    await restart();
    for (const u of uploads) {
      while (restarting) await restarting;
      const got = await post(server, '/collections/file/get', { file_id: u.session!.fileId });
      expect(got.status, JSON.stringify(got.body)).toBe(200);
      expect(got.body.status).toBe('ready');
      expect(got.body.size).toBe(u.bytes.length);
      expect(got.body.sha256).toBe(u.sha);
      const st = await post(server, '/collections/upload/status', { file_id: u.session!.fileId });
      expect(st.body).toMatchObject({ status: 'ready', missing: [] });
      const onDisk = await readStoredObject(store, u.session!.fileId);
      expect(onDisk.length).toBe(u.bytes.length);
      expect(sha256(onDisk), `bytes on disk of upload ${u.index}`).toBe(u.sha);
    }
    await killServer(server);
    console.log(`crash test: ${JSON.stringify(stats)} in ${Date.now() - started} ms`);
  }, 130_000);
});
