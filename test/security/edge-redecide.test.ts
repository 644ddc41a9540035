/**
 * Delivery decides again after every wait and before every chunk. A 40 MiB Public file is
 * asked for while it is switched to Private (or deleted):
 * - on a cold edge, with the bytes on their way from the origin (held by an interposer
 *   between edge and origin), whether the edge caches them or passes them through;
 * - on a warm edge, mid-response, to a client that has stopped reading;
 * - on an edge that has lost its lease, so every chunk asks the origin.
 * In no case does the client get all the bytes once the change has been answered.
 */
import http from 'node:http';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEdge } from '../../src/edge/server.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge } from '../helpers/logging-edge.js';
import { sleep } from '../kit/index.js';

const SIZE = 40 * 1024 * 1024;

/**
 * An HTTP hop between an edge and its origin that can hold the bytes of files, and cut
 * the edge off the feed while still letting its per-request checks through.
 */
class Interposer {
  holdBlobs = false;
  blockFeed = false;
  private held: Array<() => void> = [];
  private blobAsked: Array<() => void> = [];
  private readonly feeds = new Set<http.ServerResponse>();
  private constructor(private readonly server: http.Server, readonly url: string) {}

  static async start(target: string): Promise<Interposer> {
    const t = new URL(target);
    let self: Interposer;
    const server = http.createServer((req, res) => self.forward(req, res, t));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as net.AddressInfo).port;
    self = new Interposer(server, `http://127.0.0.1:${port}`);
    return self;
  }

  /** Resolves when the next request for a file's bytes arrives. */
  blobRequested(): Promise<void> {
    return new Promise((r) => this.blobAsked.push(r));
  }

  release(): void {
    this.holdBlobs = false;
    for (const go of this.held.splice(0)) go();
  }

  cutFeed(): void {
    this.blockFeed = true;
    for (const res of this.feeds) res.destroy();
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, t: URL): void {
    const path = req.url ?? '/';
    if (this.blockFeed && (path.startsWith('/_edge/feed') || path.startsWith('/_edge/snapshot') || path.startsWith('/_edge/ack'))) {
      req.resume();
      res.writeHead(503).end();
      return;
    }
    const go = () => {
      const up = http.request({ host: t.hostname, port: t.port, method: req.method, path, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      req.pipe(up);
    };
    if (path.startsWith('/_edge/feed')) {
      this.feeds.add(res);
      res.on('close', () => this.feeds.delete(res));
    }
    if (path.startsWith('/_edge/blob/')) {
      for (const r of this.blobAsked.splice(0)) r();
      if (this.holdBlobs) {
        this.held.push(go);
        return;
      }
    }
    go();
  }

  close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** A GET on a raw socket whose reading the test controls; counts body bytes. */
class SlowReader {
  status = 0;
  body = 0;
  closed = false;
  private head = '';
  private headersDone = false;
  private readonly socket: net.Socket;
  private readonly headersSeen: Promise<void>;
  readonly done: Promise<void>;

  constructor(url: string) {
    const u = new URL(url);
    this.socket = net.connect(Number(u.port), u.hostname);
    this.socket.setNoDelay(true);
    let seen!: () => void;
    this.headersSeen = new Promise((r) => (seen = r));
    this.done = new Promise((r) => this.socket.on('close', () => {
      this.closed = true;
      seen();
      r();
    }));
    this.socket.on('error', () => {});
    this.socket.on('data', (d: Buffer) => {
      if (this.headersDone) {
        this.body += d.length;
        return;
      }
      this.head += d.toString('latin1');
      const end = this.head.indexOf('\r\n\r\n');
      if (end < 0) return;
      this.headersDone = true;
      this.status = Number(/^HTTP\/1\.1 (\d+)/.exec(this.head)?.[1]);
      this.body = Buffer.byteLength(this.head.slice(end + 4), 'latin1');
      seen();
    });
    this.socket.write(`GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: edge\r\n\r\n`);
  }

  headers(): Promise<void> {
    return this.headersSeen;
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

describe('the edge decides again after each wait and before each chunk', () => {
  let o: TestOrigin;
  let hop: Interposer;
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    o = await startTestOrigin({ COFFER_EDGE_LEASE_MS: '1000', COFFER_LOG_LEVEL: 'warn' });
    hop = await Interposer.start(o.url);
  });
  afterEach(async () => {
    hop.release();
    hop.blockFeed = false;
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  afterAll(async () => {
    await hop.close();
    await o.close();
  });

  async function edge(settings: Record<string, string> = {}): Promise<RunningEdge> {
    const running = await startTestEdge(o, () => ({ COFFER_EDGE_LEASE_MS: '1000', ...settings }), hop.url);
    cleanups.push(() => running.close());
    return running.edge;
  }

  const change = async (how: 'switch' | 'delete', fileId: string) => {
    const r = how === 'switch'
      ? await o.post('/collections/file/update', { file_id: fileId, visibility: 'Private' })
      : await o.post('/collections/file/delete', { file_id: fileId });
    expect(r.status).toBe(200);
  };

  for (const [mode, cacheBytes] of [['cached on the way', String(1024 ** 3)], ['passed through', String(8 * 1024 * 1024)]] as const) {
    for (const how of ['switch', 'delete'] as const) {
      it(`cold edge, bytes ${mode}: a ${how} during the fetch answers the request with its refusal`, async () => {
        const rec = await uploadBytes(o, randomBytes(SIZE), { name: 'big.bin' });
        // Started after the upload: the file is in its snapshot, its bytes are not fetched.
        const e = await edge({ COFFER_EDGE_CACHE_BYTES: cacheBytes });
        hop.holdBlobs = true;
        const asked = hop.blobRequested();
        const answer = fetch(`${e.url}/files/${rec.file_id}`);
        await asked;
        await change(how, rec.file_id);
        hop.release();
        const res = await answer;
        const body = Buffer.from(await res.arrayBuffer());
        expect(res.status).toBe(how === 'switch' ? 403 : 404);
        expect(body.length).toBeLessThan(1024);
      }, 60_000);
    }
  }

  /** A file cached at `e` and a client that has its first bytes and then stops reading. */
  async function pausedReader(e: RunningEdge, name: string): Promise<{ rec: { file_id: string }; reader: SlowReader }> {
    const rec = await uploadBytes(o, randomBytes(SIZE), { name });
    // The completion prefetches the bytes; wait until they are whole.
    for (let i = 0; i < 200 && !e.cache.lookup(e.state.files.get(rec.file_id)!); i++) await sleep(50);
    const reader = new SlowReader(`${e.url}/files/${rec.file_id}`);
    await reader.headers();
    expect(reader.status).toBe(200);
    reader.pause();
    return { rec, reader };
  }

  for (const how of ['switch', 'delete'] as const) {
    it(`warm edge: a ${how} cuts a response under way before the change is answered`, async () => {
      const { rec, reader } = await pausedReader(await edge(), 'warm.bin');
      await sleep(200);
      await change(how, rec.file_id);
      reader.resume();
      await reader.done;
      expect(reader.body).toBeLessThan(SIZE);
    }, 60_000);
  }

  it('an edge without a lease asks the origin before each chunk and stops when the answer changes', async () => {
    const e = await edge();
    const { rec, reader } = await pausedReader(e, 'lapsed.bin');
    hop.cutFeed();
    for (let i = 0; i < 100 && e.follower.serving(); i++) await sleep(50);
    expect(e.follower.serving()).toBe(false);
    await change('switch', rec.file_id);
    reader.resume();
    await reader.done;
    expect(reader.body).toBeLessThan(SIZE);
    // The same request now, unsigned, is refused by the origin's word.
    expect((await fetch(`${e.url}/files/${rec.file_id}`)).status).toBe(403);
  }, 60_000);

  it('an unchanged file is still served whole, from cache and passed through', async () => {
    const bytes = randomBytes(SIZE);
    const rec = await uploadBytes(o, bytes, { name: 'whole.bin' });
    for (const cacheBytes of [String(1024 ** 3), String(8 * 1024 * 1024)]) {
      const e = await edge({ COFFER_EDGE_CACHE_BYTES: cacheBytes });
      const res = await fetch(`${e.url}/files/${rec.file_id}`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
      const part = await fetch(`${e.url}/files/${rec.file_id}`, { headers: { range: 'bytes=1000-2000999' } });
      expect(part.status).toBe(206);
      expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(1000, 2001000))).toBe(true);
    }
  }, 60_000);
});
