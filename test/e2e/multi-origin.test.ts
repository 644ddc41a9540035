/**
 * Several origins on one metadata store and one blob store (issue 6, point 3), black box:
 * two `coffer origin` processes of the built CLI and two edges, edge A following origin A
 * and edge B following origin B, each through its own TCP proxy in this process so one can
 * be cut off silently. It runs twice: on SQLite and files (both origins on one data dir, as
 * on one machine) and on PostgreSQL and S3 (each origin with its own data dir).
 *
 * What it shows: any chunk of an upload may reach any origin; both edges follow the event
 * log through their own origin; a delete or a visibility change answered by one origin is in
 * force at the edge following the other the moment it is answered; an edge following one
 * origin that is cut off holds a change on the other for at most its lease, stops serving
 * within its lease, and catches up after. Those bounds are on the wall clock, with a second's
 * margin: the origins and edges are processes, which a clock moved by hand cannot reach. The
 * lease rules themselves run on such a clock in test/unit/feed-shared-leases.test.ts.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from '../../src/adapters/metadata/better-sqlite3.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCoffer, type CofferProcess } from '../helpers/processes.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { expectError } from '../helpers/api.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';
import { createDatabase } from '../helpers/postgres.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { jsonClient, poll, sha256, sleep, upload as uploadBytes } from '../kit/index.js';

const LEASE_MS = 1500;
/** How long an edge's link is held up in the hiccup checks: far less than its lease. */
const HICCUP_MS = 300;
const CDN = 'http://cdn.test';
const CHUNK = 5 * 1024 * 1024;

type Res = RawAnswer;

/** One GET on a fresh connection. */
const get = (base: string, path: string, timeoutMs = 10_000): Promise<Res> => rawRequest(base, path, { timeoutMs });

/** A load balancer in this process: each new connection goes to the next target in turn. */
async function roundRobin(targets: string[]): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  let next = 0;
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.once('close', () => sockets.delete(s));
  };
  const server = createServer((client) => {
    const target = new URL(targets[next++ % targets.length]!);
    const upstream = connect(Number(target.port), target.hostname);
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => next,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

interface Node {
  name: string;
  proc: CofferProcess;
  url: string;
}

interface Edge extends Node {
  proxy: TcpProxy;
}

interface Configuration {
  name: string;
  /** Settings both origins share, and each origin's data dir. */
  prepare(root: string): Promise<{ shared: Record<string, string>; dataDir(origin: string): string; rows(): Promise<Array<{ edge_id: string; origin_id: string; state: string }>> }>;
  cleanup(): Promise<void>;
}

let s3: TestS3 | null = null;

const CONFIGURATIONS: Configuration[] = [
  {
    name: 'SQLite and files, both origins on one data dir',
    async prepare(root) {
      const dir = join(root, 'shared-data');
      return {
        shared: {},
        dataDir: () => dir,
        async rows() {
          const db = new BetterSqlite3(join(dir, 'coffer.sqlite'), { readonly: true, fileMustExist: true });
          try {
            return db.prepare('select edge_id, origin_id, state from edge_leases').all() as Array<{ edge_id: string; origin_id: string; state: string }>;
          } finally {
            db.close();
          }
        },
      };
    },
    async cleanup() {},
  },
  {
    name: 'PostgreSQL and S3, each origin with a data dir of its own',
    async prepare(root) {
      const url = await createDatabase();
      s3 ??= await startS3();
      const bucket = await s3.createBucket('multi-origin');
      return {
        shared: { COFFER_DATABASE_URL: url, COFFER_BLOB_STORE: s3.blobStoreUrl(bucket) },
        dataDir: (origin) => join(root, `origin-${origin}`),
        async rows() {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            return (await client.query('select edge_id, origin_id, state from edge_leases')).rows;
          } finally {
            await client.end();
          }
        },
      };
    },
    async cleanup() {
      await s3?.stop();
      s3 = null;
    },
  },
];

describe.each(CONFIGURATIONS)('two origins: $name', (configuration) => {
  const KEY = 'multi-key-' + randomBytes(8).toString('hex');
  const SECRET = 'multi-secret-' + randomBytes(8).toString('hex');
  const EDGE_TOKEN = 'multi-edge-token-' + randomBytes(8).toString('hex');
  let root = '';
  const origins: Node[] = [];
  const edges: Edge[] = [];
  /** An edge behind a load balancer over both origins. */
  let roamer: Node;
  let balancer: Awaited<ReturnType<typeof roundRobin>> | null = null;
  let rows: () => Promise<Array<{ edge_id: string; origin_id: string; state: string }>> = async () => [];

  const originOf = (name: 'A' | 'B'): Node => origins.find((o) => o.name === name)!;
  const edgeOf = (name: 'A' | 'B'): Edge => edges.find((e) => e.name === name)!;

  function api<T = any>(on: 'A' | 'B', path: string, body: unknown, key = KEY): Promise<{ status: number; body: T }> {
    return jsonClient(originOf(on).url, key).post<T>(path, body);
  }

  async function ok<T = any>(on: 'A' | 'B', path: string, body: unknown): Promise<T> {
    const r = await api<T>(on, path, body);
    expect(r.status, `origin ${on} ${path} ${JSON.stringify(body).slice(0, 200)} → ${JSON.stringify(r.body)}`).toBe(200);
    return r.body;
  }

  /** Uploads through one origin; returns the record and the delivery path. */
  async function upload(on: 'A' | 'B', bytes: Buffer, fields: Record<string, unknown> = {}): Promise<{ rec: any; bytes: Buffer; path: string }> {
    const rec = await uploadBytes(jsonClient(originOf(on).url, KEY), bytes, fields);
    return { rec, bytes, path: pathOf(rec.delivery_url) };
  }

  function pathOf(url: string): string {
    expect(url.startsWith(CDN + '/'), url).toBe(true);
    return url.slice(CDN.length);
  }

  async function signedPath(on: 'A' | 'B', fileId: string): Promise<string> {
    return pathOf((await ok(on, '/collections/create-link', { file_id: fileId, file_type: 'other' })).presigned_url);
  }

  async function expectServed(e: Edge, f: { rec: any; bytes: Buffer }, path: string, where: string): Promise<Res> {
    const r = await get(e.url, path);
    expect(r.status, `${where}: ${r.body.toString().slice(0, 200)}`).toBe(200);
    expect(sha256(r.body), where).toBe(f.rec.sha256);
    return r;
  }

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'coffer-multi-origin-'));
    const prepared = await configuration.prepare(root);
    rows = prepared.rows;
    // One after the other: the first migrates the store, and an origin tidies its temporary files at start.
    for (const name of ['A', 'B']) {
      const proc = spawnCoffer({
        kind: 'origin', name: `origin ${name}`, args: ['origin'],
        env: {
          COFFER_HOST: '127.0.0.1', COFFER_PORT: '0', COFFER_DATA_DIR: prepared.dataDir(name), COFFER_ACCESS_KEY: KEY,
          COFFER_SIGNING_SECRET: SECRET, COFFER_EDGE_TOKEN: EDGE_TOKEN, COFFER_CDN_URL: CDN, COFFER_EDGE_LEASE_MS: String(LEASE_MS),
          COFFER_RATE_LIMIT: '100000', COFFER_LOG_LEVEL: 'warn', COFFER_WEBHOOK_ALLOW_PRIVATE: '1', COFFER_WEBHOOK_RETRY_BASE_MS: '50', ...prepared.shared,
        },
      });
      origins.push({ name, proc, url: await proc.ready });
    }
    const started = await Promise.all(origins.map(async (o) => {
      const target = new URL(o.url);
      const proxy = await TcpProxy.start(target.hostname, Number(target.port));
      const proc = spawnCoffer({
        kind: 'edge', name: `edge ${o.name}`, args: ['edge', '--origin', proxy.url],
        env: {
          COFFER_EDGE_PORT: '0', COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: join(root, `edge-${o.name}`), COFFER_SIGNING_SECRET: SECRET,
          COFFER_EDGE_TOKEN: EDGE_TOKEN, COFFER_EDGE_LEASE_MS: String(LEASE_MS), COFFER_LOG_LEVEL: 'warn',
        },
      });
      return { name: o.name, proc, proxy, url: await proc.ready } satisfies Edge;
    }));
    edges.push(...started);
    balancer = await roundRobin(origins.map((o) => o.url));
    const proc = spawnCoffer({
      kind: 'edge', name: 'edge behind a load balancer', args: ['edge', '--origin', balancer.url],
      env: {
        COFFER_EDGE_PORT: '0', COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: join(root, 'edge-roamer'), COFFER_SIGNING_SECRET: SECRET,
        COFFER_EDGE_TOKEN: EDGE_TOKEN, COFFER_EDGE_LEASE_MS: String(LEASE_MS), COFFER_LOG_LEVEL: 'warn',
      },
    });
    roamer = { name: 'roamer', proc, url: await proc.ready };
  }, 60_000);

  afterAll(async () => {
    await Promise.all([...edges, ...origins, ...(roamer ? [roamer] : [])].map((n) => n.proc.stop('SIGKILL')));
    await Promise.all(edges.map((e) => e.proxy.close()));
    await balancer?.close();
    await configuration.cleanup();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('takes the chunks of one upload on both origins, completes it on the second, and both edges serve it at once', async () => {
    const bytes = randomBytes(2 * CHUNK + 12_345);
    const s = await ok('A', '/collections/upload/file', { name: 'spread.bin', visibility: 'Public', size: bytes.length, file_type: 'other' });
    expect(s.part_count).toBe(3);
    const part = (n: number) => ({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: n, body: bytes.subarray((n - 1) * CHUNK, n * CHUNK).toString('base64') });
    await Promise.all([ok('A', '/collections/upload/file-progress', part(1)), ok('B', '/collections/upload/file-progress', part(2)), ok('A', '/collections/upload/file-progress', part(3))]);
    const status = await ok('B', '/collections/upload/status', { file_id: s.fileId });
    expect(status.received).toEqual([1, 2, 3]);
    expect(status.missing).toEqual([]);
    const rec = await ok('B', '/collections/upload/complete-upload', { file_id: s.fileId });
    expect(rec.status).toBe('ready');
    expect(rec.sha256).toBe(sha256(bytes));
    const path = pathOf(rec.delivery_url);
    // Complete-upload answered once both edges had the completion: each has (or is fetching) the bytes.
    for (const e of edges) {
      const r = await expectServed(e, { rec, bytes }, path, `edge ${e.name}`);
      expect(r.headers['x-cache'], `edge ${e.name}`).toBe('HIT');
    }
    expect((await ok('A', '/collections/file/get', { file_id: s.fileId })).sha256).toBe(sha256(bytes));
  });

  it('a key made on one origin works on the other, and fails there the moment its revocation answers', async () => {
    const made = await ok('A', '/collections/keys/create', { name: 'shared', scopes: ['read'] });
    expect((await api('B', '/collections/list', {}, made.key)).status).toBe(200);
    await ok('A', '/collections/keys/revoke', { key_id: made.key_id });
    const refused = await api<any>('B', '/collections/list', {}, made.key);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('unauthorized');
  });

  it('revoking a file\'s links on one origin refuses them at both edges before it answers', async () => {
    const f = await upload('A', randomBytes(1000), { visibility: 'Private' });
    const path = await signedPath('B', f.rec.file_id);
    for (const e of edges) await expectServed(e, f, path, `edge ${e.name} before`);
    await ok('B', '/collections/file/revoke-links', { file_id: f.rec.file_id });
    for (const e of edges) {
      const r = await get(e.url, path);
      expect(r.status, `edge ${e.name}`).toBe(403);
      expect(JSON.parse(r.body.toString()).error.code).toBe('link_revoked');
    }
  });

  it('both origins send webhooks, and no event goes out twice while it is being sent, even to a receiver that fails at times', async () => {
    const seen = new Map<string, number>();
    let calls = 0;
    const receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        calls++;
        const id = req.headers['webhook-id'] as string;
        // Every fourth answer fails: retried, and still never sent twice at once.
        if (calls % 4 === 0) return void res.writeHead(500).end();
        seen.set(id, (seen.get(id) ?? 0) + 1);
        // Slow enough that two senders would overlap if both took the same delivery.
        setTimeout(() => res.writeHead(200).end(), 30);
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
      const hook = await ok('A', '/collections/webhooks/create', { url, events: ['folder.created'] });
      for (let i = 0; i < 12; i++) await ok(i % 2 ? 'A' : 'B', '/collections/folder/create', { name: `hooked-${i}`, visibility: 'Public' });
      await poll(() => seen.size >= 12, { timeoutMs: 30_000 });
      expect(seen.size).toBe(12);
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
      await ok('B', '/collections/webhooks/delete', { webhook_id: hook.webhook_id });
    } finally {
      receiver.closeAllConnections();
      await new Promise((r) => receiver.close(r));
    }
  });

  it('keeps both edges in one lease table, whichever origin each acknowledges', async () => {
    const table = (await rows()).filter((r) => r.state === 'caught_up');
    // Edges A and B and the one behind the load balancer.
    expect(table, JSON.stringify(table)).toHaveLength(3);
    expect(new Set(table.map((r) => r.origin_id)).size, 'edges recorded by both origins').toBe(2);
  });

  /**
   * Runs `change` while the far edge's link is held up for `HICCUP_MS`, far less than its
   * lease: it keeps serving from its cache meanwhile, so an origin that did not wait for it
   * would answer while it still serves the old state. Returns how long the change took.
   */
  async function withHiccup(far: Edge, change: () => Promise<unknown>): Promise<number> {
    far.proxy.freeze();
    const thaw = sleep(HICCUP_MS).then(() => far.proxy.thaw());
    const t = Date.now();
    try {
      await change();
      return Date.now() - t;
    } finally {
      await thaw;
    }
  }

  it('honours a delete on one origin at the edge following the other the moment it answers, and ever after', async () => {
    const rounds = [['A', 'B', false], ['B', 'A', false], ['A', 'B', true], ['B', 'A', true]] as const;
    for (const [deleteOn, far, hiccup] of rounds) {
      const where = `delete on origin ${deleteOn}${hiccup ? ', edge ' + far + ' held up' : ''}`;
      // Made on the far edge's own origin, deleted on the other.
      const f = await upload(far, randomBytes(5000), { name: `doomed-${deleteOn}.bin` });
      const link = await signedPath(far, f.rec.file_id);
      for (const e of edges) await expectServed(e, f, f.path, `edge ${e.name} before`);
      const del = () => ok(deleteOn, '/collections/file/delete', { file_id: f.rec.file_id });
      if (hiccup) expect(await withHiccup(edgeOf(far), del), `${where}: it waits for the held-up edge`).toBeGreaterThanOrEqual(HICCUP_MS - 50);
      else await del();
      const [plain, signed, near] = await Promise.all([get(edgeOf(far).url, f.path), get(edgeOf(far).url, link), get(edgeOf(deleteOn).url, f.path)]);
      expectError(plain, 404, 'not_found', `edge ${far} right after the ${where}`);
      expectError(signed, 404, 'not_found', `edge ${far}, signed link, right after the ${where}`);
      expectError(near, 404, 'not_found', `edge ${deleteOn} right after the ${where}`);
    }
    // And never again: watched for a while at both.
    const f = await upload('B', randomBytes(3000), { name: 'watched.bin' });
    await ok('A', '/collections/file/delete', { file_id: f.rec.file_id });
    const until = Date.now() + 500;
    const seen: number[] = [];
    while (Date.now() < until) seen.push(...(await Promise.all(edges.map((e) => get(e.url, f.path)))).map((r) => r.status));
    expect(seen.filter((s) => s !== 404), 'answers other than 404 after the delete').toEqual([]);
  });

  it('applies a switch to Private on one origin at the edge following the other before it answers; folders too', async () => {
    const f = await upload('A', randomBytes(4000), { name: 'switch.bin' });
    const link = await signedPath('A', f.rec.file_id);
    for (const e of edges) await expectServed(e, f, f.path, `edge ${e.name} before`);

    const took = await withHiccup(edgeOf('A'), () => ok('B', '/collections/file/update', { file_id: f.rec.file_id, visibility: 'Private' }));
    expect(took, 'the switch on B waits for the held-up edge A').toBeGreaterThanOrEqual(HICCUP_MS - 50);
    expectError(await get(edgeOf('A').url, f.path), 403, 'signature_required', 'edge A right after the switch on origin B');
    await expectServed(edgeOf('A'), f, link, 'edge A, signed, after the switch');
    expectError(await get(edgeOf('B').url, f.path), 403, 'signature_required', 'edge B right after the switch on origin B');

    await ok('A', '/collections/file/update', { file_id: f.rec.file_id, visibility: 'Public' });
    await expectServed(edgeOf('B'), f, f.path, 'edge B right after the switch back on origin A');

    // A folder made on one origin, flipped on the other: every file below it, at the far edge.
    const folder = await ok('A', '/collections/folder/create', { name: 'flip-' + randomBytes(4).toString('hex'), visibility: 'Public' });
    const inside = await upload('A', randomBytes(2000), { name: 'inside.bin', folder_id: folder.folder_id });
    await expectServed(edgeOf('A'), inside, inside.path, 'edge A before the folder flip');
    await ok('B', '/collections/folder/update', { folder_id: folder.folder_id, visibility: 'Private' });
    expectError(await get(edgeOf('A').url, inside.path), 403, 'signature_required', 'edge A right after the folder flip on origin B');
  });

  it('serves an edge whose connections a load balancer spreads over both origins, and holds changes on either for it', async () => {
    for (const [on, other] of [['A', 'B'], ['B', 'A'], ['A', 'B'], ['B', 'A']] as const) {
      const f = await upload(on, randomBytes(3000), { name: `roaming-${on}.bin` });
      const r = await get(roamer.url, f.path);
      expect(r.status, `roamer right after complete-upload on ${on}`).toBe(200);
      expect(sha256(r.body)).toBe(f.rec.sha256);
      await ok(other, '/collections/file/update', { file_id: f.rec.file_id, visibility: 'Private' });
      expectError(await get(roamer.url, f.path), 403, 'signature_required', `roamer right after the switch on ${other}`);
      await ok(on, '/collections/file/delete', { file_id: f.rec.file_id });
      expectError(await get(roamer.url, f.path), 404, 'not_found', `roamer right after the delete on ${on}`);
    }
    expect(balancer!.connections(), 'connections through the load balancer').toBeGreaterThanOrEqual(2);
  });

  it('an edge following B cut off: a delete on A waits at most its lease, the edge stops serving within its lease and catches up after', async () => {
    const far = edgeOf('B');
    const near = edgeOf('A');
    const [kept, doomed, hidden] = await Promise.all([
      upload('A', randomBytes(6000), { name: 'cut kept.bin' }),
      upload('A', randomBytes(6000), { name: 'cut doomed.bin' }),
      upload('B', randomBytes(6000), { name: 'cut hidden.bin' }),
    ]);
    for (const e of edges) for (const f of [kept, doomed, hidden]) await expectServed(e, f, f.path, `edge ${e.name} ${f.rec.name} before`);

    far.proxy.freeze();
    const frozenAt = Date.now();
    const probes: Array<{ atMs: number; status: number | null }> = [];
    const probing = (async () => {
      while (Date.now() - frozenAt < LEASE_MS + 1000 && !probes.some((p) => p.status === 503)) {
        const atMs = Date.now() - frozenAt;
        const r = await get(far.url, kept.path, 2000).catch(() => null);
        probes.push({ atMs, status: r?.status ?? null });
        await sleep(100);
      }
    })();
    const change = async (what: () => Promise<unknown>, path: string) => {
      const t = Date.now();
      await what();
      const took = Date.now() - t;
      const [atFar, atNear] = await Promise.all([get(far.url, path, 5000).catch((err: Error) => err), get(near.url, path)]);
      return { took, atFar, atNear };
    };
    const [del, hid] = await Promise.all([
      change(() => ok('A', '/collections/file/delete', { file_id: doomed.rec.file_id }), doomed.path),
      change(() => ok('A', '/collections/file/update', { file_id: hidden.rec.file_id, visibility: 'Private' }), hidden.path),
    ]);
    await probing;

    expect(del.took, 'delete on A while the edge following B is cut off').toBeLessThanOrEqual(LEASE_MS + 1000);
    expect(hid.took, 'switch on A while the edge following B is cut off').toBeLessThanOrEqual(LEASE_MS + 1000);
    // The cut-off edge's lease ran out before the origins stopped waiting for it.
    expect(del.atFar instanceof Error ? del.atFar.message : del.atFar.status, 'cut-off edge B right after the delete').toBe(503);
    expect(hid.atFar instanceof Error ? hid.atFar.message : hid.atFar.status, 'cut-off edge B right after the switch').toBe(503);
    expectError(del.atNear, 404, 'not_found', 'edge A right after the delete');
    expectError(hid.atNear, 403, 'signature_required', 'edge A right after the switch');
    const late = probes.filter((p) => p.status === 200 && p.atMs > LEASE_MS + 200);
    expect(late, `served from cache after its lease: ${JSON.stringify(probes)}`).toEqual([]);
    expect(probes.some((p) => p.status === 503), `no 503 within lease + 1 s: ${JSON.stringify(probes)}`).toBe(true);

    far.proxy.thaw();
    const by = Date.now() + 10_000;
    const afterThaw: number[] = [];
    for (;;) {
      const r = await get(far.url, doomed.path, 3000).catch(() => null);
      if (r) afterThaw.push(r.status);
      if (r?.status === 404 || Date.now() > by) break;
      await sleep(50);
    }
    expect(afterThaw.filter((s) => s === 200), 'edge B served the deleted file after the thaw').toEqual([]);
    expectError(await get(far.url, doomed.path), 404, 'not_found', 'edge B after catching up');
    expectError(await get(far.url, hidden.path), 403, 'signature_required', 'edge B after catching up: the switch to Private');
    await expectServed(far, kept, kept.path, 'edge B, kept file, after catching up');
    // And it is waited for again: a change on A is in force at B when answered.
    await ok('A', '/collections/file/delete', { file_id: kept.rec.file_id });
    expectError(await get(far.url, kept.path), 404, 'not_found', 'edge B right after a delete on A, once caught up');
  });
});
