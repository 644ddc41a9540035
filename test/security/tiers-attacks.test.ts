/**
 * Issue 26, attacked from outside: parents that lie, stall, trickle, redirect or flood a child
 * with interim answers; changes made while a child fills through a parent; the edge-to-edge
 * route under odd spellings. One origin in this process, edges above it, fake parents as plain
 * servers and sockets.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { sha256, waitFor } from '../kit/index.js';
import { parentDeadlineMs } from '../../src/edge/sources.js';
import { parseEdgeStatus } from '../../src/feed/edge-status.js';
import { edgesJson, edgesTable, type EdgesAnswer } from '../../src/cli/edges.js';

let o: TestOrigin;
const started: TestEdge[] = [];
const servers: (http.Server | net.Server)[] = [];
const sockets = new Set<net.Socket>();

beforeAll(async () => {
  o = await startTestOrigin();
});

afterAll(async () => {
  await Promise.all(started.map((e) => e.close()));
  for (const s of servers) if (s instanceof http.Server) s.closeAllConnections();
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await o?.close();
});

async function edge(parents: string[] = []): Promise<TestEdge> {
  const e = await startTestEdge(o, () => ({ COFFER_EDGE_PARENTS: parents.join(','), COFFER_EDGE_NAME: 'attack' }));
  started.push(e);
  return e;
}

const token = () => o.origin.credentials.edgeTokens[0]!;
const cached = (e: TestEdge, id: string) => {
  const f = e.edge.state.files.get(id);
  return f !== undefined && e.edge.cache.lookup(f) !== null;
};
const waitCached = (edges: TestEdge[], id: string, timeoutMs = 30_000) =>
  waitFor(() => edges.every((e) => cached(e, id)), { timeoutMs, what: `file ${id} cached at every edge` });

async function get(e: TestEdge, path: string) {
  const r = await fetch(e.edge.url + path);
  return { status: r.status, body: Buffer.from(await r.arrayBuffer()) };
}

async function listen<S extends http.Server | net.Server>(server: S): Promise<string> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A parent that writes whatever `answer` says on a raw socket: no HTTP library tidies it up. */
const rawParent = (answer: (socket: net.Socket) => void) => listen(net.createServer((s) => {
  s.on('error', () => {});
  sockets.add(s);
  s.once('data', () => answer(s));
}));

/** Sends `text` one byte every `ms` until the socket closes. */
function trickle(socket: net.Socket, text: string, ms: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return clearInterval(timer);
    socket.write(text[i++]!);
  }, ms);
  socket.on('close', () => clearInterval(timer));
}

describe('a hostile parent cannot hold, bend or poison a child\'s fill', () => {
  let current = { bytes: Buffer.alloc(0), sha: '' };
  const good = () => `HTTP/1.1 200 OK\r\nContent-Length: ${current.bytes.length}\r\nX-Coffer-Sha256: ${current.sha}\r\n\r\n`;

  it('gives up on a parent that sends 102 Processing forever, or trickles its bytes, within the bound, and fills from the origin', async () => {
    const flood = await rawParent((s) => {
      const timer = setInterval(() => (s.destroyed ? clearInterval(timer) : s.write('HTTP/1.1 102 Processing\r\n\r\n')), 500);
      s.on('close', () => clearInterval(timer));
    });
    // The right version named, then its bytes at 1 byte each 500 ms: never idle 3 s, never done.
    const slow = await rawParent((s) => {
      s.write(good());
      trickle(s, current.bytes.toString('latin1'), 500);
    });
    const children = [await edge([flood]), await edge([slow])];
    current.bytes = randomBytes(100_000);
    current.sha = sha256(current.bytes);
    const rec = await uploadBytes(o, current.bytes, { name: 'held.bin' });
    await waitCached(children, rec.file_id, parentDeadlineMs(current.bytes.length) + 20_000);
    for (const c of children) {
      expect(c.edge.cache.counts).toMatchObject({ parent: 0, origin: 1, failovers: 1 });
      expect(sha256((await get(c, `/files/${rec.file_id}`)).body)).toBe(current.sha);
    }
  }, 60_000);

  it('never follows a redirect, and refuses a huge Content-Length, chunked bytes, a flood of interim answers and junk', async () => {
    let followed = 0;
    const target = await listen(http.createServer((_req, res) => {
      followed++;
      res.writeHead(200, { 'content-length': current.bytes.length, 'x-coffer-sha256': current.sha });
      res.end(current.bytes);
    }));
    const parents = [
      await rawParent((s) => s.end(`HTTP/1.1 302 Found\r\nLocation: ${target}/_edge/blob/x\r\nContent-Length: 0\r\n\r\n`)),
      await rawParent((s) => s.end(`HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\nX-Coffer-Sha256: ${current.sha}\r\n\r\n` + 'x'.repeat(200_000))),
      await rawParent((s) => s.end(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: ${current.bytes.length}\r\nX-Coffer-Sha256: ${current.sha}\r\n\r\n`)),
      await rawParent((s) => s.end('HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n'.repeat(20_000) + 'HTTP/1.1 200 OK\r\n')),
      await rawParent((s) => s.end(`HTTP/1.1 200 OK\r\nContent-Length: ${current.bytes.length}\r\nX-Coffer-Sha256: ${current.sha}\r\n\r\n` + '<html>junk</html>')),
      await rawParent((s) => s.end('HTTP/1.1 200 OK\r\n' + 'X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n'.repeat(5000))),
    ];
    const children = await Promise.all(parents.map((p) => edge([p])));
    current.bytes = randomBytes(150_000);
    current.sha = sha256(current.bytes);
    const rec = await uploadBytes(o, current.bytes, { name: 'bent.bin' });
    await waitCached(children, rec.file_id);
    for (const c of children) {
      expect(c.edge.cache.counts).toMatchObject({ parent: 0, origin: 1, failovers: 1 });
      expect(sha256((await get(c, `/files/${rec.file_id}`)).body)).toBe(current.sha);
    }
    expect(followed).toBe(0);
  });
});

describe('the bound on a parent', () => {
  it('grows with the file\'s size and stays a delay a timer can take', () => {
    expect(parentDeadlineMs(0)).toBe(8000);
    expect(parentDeadlineMs(1024 ** 3)).toBe(8000 + 8192 * 1000);
    expect(parentDeadlineMs(2 ** 50)).toBe(2 ** 31 - 1);
  });
});

describe('parents that are not parents', () => {
  it('a child naming itself, or the origin, as its parent fills from the origin and serves the right bytes', async () => {
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const self = await startTestEdge(o, () => ({ COFFER_EDGE_PARENTS: `http://127.0.0.1:${port}`, COFFER_EDGE_PORT: String(port) }));
    started.push(self);
    const viaOrigin = await edge([o.url]);
    const bytes = randomBytes(60_000);
    const rec = await uploadBytes(o, bytes, { name: 'self.bin' });
    await waitCached([self, viaOrigin], rec.file_id);
    for (const c of [self, viaOrigin]) {
      expect(c.edge.cache.counts).toMatchObject({ parent: 0, origin: 1, failovers: 1 });
      expect(sha256((await get(c, `/files/${rec.file_id}`)).body)).toBe(sha256(bytes));
    }
  });
});

describe('odd sizes through a parent', () => {
  it('an empty file and a one-byte file fill a child from its parent', async () => {
    const parent = await edge();
    const child = await edge([parent.edge.url]);
    for (const bytes of [Buffer.alloc(0), Buffer.from('x')]) {
      const rec = await uploadBytes(o, bytes, { name: `tiny-${bytes.length}.bin` });
      await waitCached([parent, child], rec.file_id);
      const r = await get(child, `/files/${rec.file_id}`);
      expect([r.status, sha256(r.body)]).toEqual([200, sha256(bytes)]);
    }
    expect(child.edge.cache.counts).toMatchObject({ origin: 0, failovers: 0 });
  });

  it('a file too large for the parent\'s cache: the parent refuses at once (503) and the child fills from the origin', async () => {
    const parent = await startTestEdge(o, () => ({ COFFER_EDGE_CACHE_BYTES: '100000', COFFER_EDGE_NAME: 'small' }));
    started.push(parent);
    const child = await edge([parent.edge.url]);
    const bytes = randomBytes(300_000);
    const rec = await uploadBytes(o, bytes, { name: 'large.bin' });
    await waitCached([child], rec.file_id);
    expect(child.edge.cache.counts).toMatchObject({ parent: 0, origin: 1, failovers: 1 });
    expect(sha256((await get(child, `/files/${rec.file_id}`)).body)).toBe(sha256(bytes));
  });
});

describe('changes made while a child fills through a parent', () => {
  /** A parent that holds each fill (sending 102s) until released, then answers the bytes it is given. */
  async function heldParent() {
    let release: (bytes: Buffer) => void = () => {};
    let asked = 0;
    const released = new Promise<Buffer>((r) => { release = r; });
    const url = await listen(http.createServer((_req, res) => {
      asked++;
      const beat = setInterval(() => res.writeProcessing(), 500);
      void released.then((bytes) => {
        clearInterval(beat);
        res.writeHead(200, { 'content-length': bytes.length, 'x-coffer-sha256': sha256(bytes) });
        res.end(bytes);
      });
    }));
    return { url, release: (b: Buffer) => release(b), asked: () => asked };
  }

  for (const change of ['Private', 'delete', 'revoke'] as const) {
    it(`a ${change} made mid-fill: the waiting request and every later one get no bytes without a valid link`, async () => {
      const p = await heldParent();
      const child = await edge([p.url]);
      const bytes = randomBytes(80_000);
      const rec = await uploadBytes(o, bytes, { name: 'midfill.bin', visibility: change === 'revoke' ? 'Private' : 'Public' });
      await waitFor(() => p.asked() >= 1, { timeoutMs: 10_000, what: 'the child asked its parent' });
      let path = `/files/${rec.file_id}`;
      if (change === 'revoke') {
        const link = await o.post('/collections/create-link', { file_id: rec.file_id, file_type: 'other' });
        const url = new URL(link.body.presigned_url);
        path = url.pathname + url.search;
      }
      let answered = false;
      const waiting = get(child, path).finally(() => { answered = true; });
      await new Promise((r) => setTimeout(r, 300));
      expect(answered).toBe(false);
      const call = change === 'Private' ? o.post('/collections/file/update', { file_id: rec.file_id, visibility: 'Private' })
        : change === 'delete' ? o.post('/collections/file/delete', { file_id: rec.file_id })
          : o.post('/collections/file/revoke-links', { file_id: rec.file_id });
      expect((await call).status).toBe(200);
      p.release(bytes);
      const first = await waiting;
      const after = await get(child, path);
      const expected = change === 'delete' ? 404 : 403;
      for (const r of [first, after]) {
        expect(r.status).toBe(expected);
        expect(r.body.includes(bytes.subarray(0, 64))).toBe(false);
      }
    }, 30_000);
  }
});

describe('the edge-to-edge route under odd spellings', () => {
  let e: TestEdge;
  let f: { id: string; sha: string };
  beforeAll(async () => {
    e = await edge();
    const bytes = randomBytes(20_000);
    const rec = await uploadBytes(o, bytes, { name: 'route.bin', visibility: 'Private' });
    f = { id: rec.file_id, sha: sha256(bytes) };
    await waitCached([e], f.id);
  });

  /** The status line of the answer to one raw request. */
  const status = (request: string) => new Promise<number>((resolve, reject) => {
    const s = net.connect(e.edge.port, '127.0.0.1', () => s.write(request));
    let got = '';
    s.on('data', (b) => {
      got += b.toString('latin1');
      const m = /^HTTP\/1\.1 ([2-5]\d\d)/m.exec(got);
      if (m) {
        resolve(Number(m[1]));
        s.destroy();
      }
    });
    s.on('error', reject);
  });

  it('answers the bytes of a Private file only with the token, through no other path', async () => {
    const q = `?sha256=${f.sha}&seq=0`;
    const auth = `Authorization: Bearer ${token()}\r\n`;
    const t = token();
    const cases: [string, number][] = [
      [`GET /_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 200],
      [`GET http://evil.example/_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 200],
      [`GET http://evil.example/_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n\r\n`, 401],
      [`GET /_edge/blob/${f.id}${q}&token=${t}&access_token=${t} HTTP/1.1\r\nHost: x\r\n\r\n`, 401],
      [`GET /_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\nAuthorization: bearer ${t}\r\n\r\n`, 401],
      [`GET /_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.slice(0, 5)}\r\n\r\n`, 401],
      [`GET /_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer x\r\nAuthorization: Bearer ${t}\r\n\r\n`, 401],
      [`GET //_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 404],
      [`GET /_edge/blob/${f.id}/${q} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 404],
      [`GET /_edge/blob/%2e%2e${q} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 404],
      [`GET /_edge/blob/${'a'.repeat(4000)}${q} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 404],
      [`GET /files/..%2f_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 400],
      [`GET /files/${f.id} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 403],
      [`POST /_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 0\r\n\r\n`, 405],
      [`GET /_edge/blob/${f.id}?sha256=${f.sha}&seq=-1 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 400],
      [`GET /_edge/blob/${f.id}?sha256=${f.sha}&seq=1e3 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 400],
      [`GET /_edge/blob/${f.id}?sha256=${f.sha.toUpperCase()}&seq=0 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 400],
      [`GET /_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n${auth}X-Coffer-Via: a\r\nX-Coffer-Via: b,c,d\r\n\r\n`, 508],
      [`GET /_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n${auth}X-Coffer-Via: ${e.edge.follower.edgeId}\r\n\r\n`, 508],
      [`GET /_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n${auth}X-Coffer-Via: ${'a'.repeat(15_000)}\r\n\r\n`, 400],
      [`GET /_edge/blob/${f.id}${q} HTTP/1.1\r\nHost: x\r\n${auth}X-Coffer-Via: ${','.repeat(10_000)}\r\n\r\n`, 200],
    ];
    for (const [request, want] of cases) expect([request.slice(0, 90), await status(request)]).toEqual([request.slice(0, 90), want]);
  });
});

describe('what an edge says of itself reaches operators inert', () => {
  const status = (over: Record<string, unknown>) => ({
    id: 'e1', name: 'ok', parents: [], started_at: 0, seq: 0, cache: { used_bytes: 0, capacity_bytes: 0 }, requests: 0, hits: 0,
    misses: 0, bytes_sent: 0, fills: { parent: 0, origin: 0, failovers: 0, served_to_children: 0 }, ...over,
  });

  it('the origin refuses control characters, 101+ character names, 9+ parents and unknown fields in a report', () => {
    for (const bad of [{ name: 'a\u001b[31mred' }, { name: 'x'.repeat(101) }, { name: ' ' }, { parents: Array(9).fill('p') },
      { parents: Array(10_000).fill('p') }, { parents: ['a\nb'] }, { id: 'a'.repeat(65) }, { id: '../x' }, { extra: 1 }, { seq: -1 }, { requests: 1e300 }]) {
      expect(typeof parseEdgeStatus(status(bad))).toBe('string');
    }
    expect(typeof parseEdgeStatus(status({ name: '<script>alert(1)</script>' }))).toBe('object');
  });

  it('coffer edges shows markup, C1 controls and bidi overrides as text, in the table and in --json', () => {
    const name = 'evil\u009b31m\u202egnp.exe<script>alert(1)</script>\u2066';
    const row = {
      id: 'e1', name, parents: [`http://x\u009d0;title\u0007/`], state: 'live' as const, answering: true, last_seen_at: '2026-01-01T00:00:00Z',
      lease_expires_at: null, applied_seq: 1, feed_lag_events: 0, cache_used_bytes: null, cache_capacity_bytes: null, hit_ratio: null,
      requests: null, bytes_sent: null, started_at: null,
    };
    const answer: EdgesAnswer = { head_seq: 1, checked_at: '2026-01-01T00:00:01Z', edges: [row] };
    for (const text of [edgesTable(answer), edgesJson(answer)]) {
      expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    }
    expect(JSON.parse(edgesJson(answer))).toEqual(answer);
  });
});
