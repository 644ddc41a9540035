/**
 * A client that stalls its headers or its body is dropped, with or without a key; a slow but
 * steady client, the edges' feed and a change waiting for an edge are not.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';

// Wall-clock bounds throughout: the timeouts under test are the sockets' own, on the system's time.
const HEADERS_TIMEOUT_MS = 500;
const IDLE_TIMEOUT_MS = 1000;
// The feed pings every lease / 4 = 1.5 s: longer than the idle timeout.
const LEASE_MS = 6000;
const EDGE_TOKEN = 'timeouts-edge-token-' + randomBytes(12).toString('hex');

let o: TestOrigin;
beforeAll(async () => {
  o = await startTestOrigin({
    COFFER_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), COFFER_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
    COFFER_EDGE_LEASE_MS: String(LEASE_MS), COFFER_EDGE_TOKEN: EDGE_TOKEN,
  });
});
afterAll(async () => o?.close());

/** Sends `text`, then nothing; resolves with how long the server kept the connection open and what it said. */
function stall(text: string): Promise<{ held: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(o.origin.port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => { answer += c; });
    socket.on('error', () => {});
    socket.on('close', () => resolve({ held: performance.now() - started, answer }));
    setTimeout(() => {
      socket.destroy();
      reject(new Error('the server held a stalled connection for 20 s'));
    }, 20_000).unref();
  });
}

const post = (path: string, auth: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

test('headers that stop half-way are dropped after the headers timeout', async () => {
  const { held, answer } = await stall('POST /collections/list HTTP/1.1\r\nHost: x\r\nContent-Ty');
  expect(held).toBeLessThan(HEADERS_TIMEOUT_MS + 4_000);
  expect(answer).not.toMatch(/^HTTP\/1\.1 2/);
});

test('a 60 kB body that stops after "{" is dropped: at once without a key, after the idle timeout with one', async () => {
  for (const auth of ['', 'Authorization: Bearer wrong\r\n']) {
    const { held, answer } = await stall(`${post('/collections/list', auth, 60_000)}{`);
    expect(answer).toMatch(/^HTTP\/1\.1 401/);
    expect(held).toBeLessThan(IDLE_TIMEOUT_MS + 4_000);
  }
  for (const path of ['/collections/list', '/collections/folder/create']) {
    const { held, answer } = await stall(`${post(path, `Authorization: Bearer ${o.key}\r\n`, 60_000)}{`);
    expect(answer).toBe('');
    expect(held).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 100);
    expect(held).toBeLessThan(IDLE_TIMEOUT_MS + 4_000);
  }
});

test('a body sent to a path no route answers is not waited for: 404 at once, and the connection closes', async () => {
  for (const path of ['/nowhere', '/collections/nowhere', '/%63ollections/nowhere']) {
    const { held, answer } = await stall(`${post(path, '', 60_000)}{`);
    expect(answer).toMatch(/^HTTP\/1\.1 404/);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).toContain('"not_found"');
    expect(held).toBeLessThan(IDLE_TIMEOUT_MS);
  }
});

test('a chunk body that stalls is dropped and leaves no part behind', async () => {
  const init = await o.post('/collections/upload/file', { name: 'a.bin', visibility: 'Public', size: 100, file_type: 'other' });
  const s = init.body;
  const head = JSON.stringify({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 1 }).slice(0, -1) + ',"body":"AAAA';
  const { held } = await stall(`${post('/collections/upload/file-progress', `Authorization: Bearer ${o.key}\r\n`, 1000)}${head}`);
  expect(held).toBeLessThan(IDLE_TIMEOUT_MS + 4_000);
  const status = await o.post('/collections/upload/status', { file_id: s.fileId });
  expect(status.status).toBe(200);
  expect(status.body.missing).toEqual([1]);
  expect(status.body.received).toEqual([]);
});

/** Sends a folder/create body a byte every `everyMs` after its first 15; resolves with the time taken and the answer. */
function trickle(everyMs: number): Promise<{ took: number; answer: string }> {
  const body = JSON.stringify({ name: 'slow', visibility: 'Public' });
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(o.origin.port, '127.0.0.1');
    let data = '';
    socket.on('data', (c) => { data += c; });
    socket.on('error', () => {});
    socket.on('close', () => { clearInterval(timer); resolve({ took: performance.now() - started, answer: data }); });
    socket.write(`${post('/collections/folder/create', `Authorization: Bearer ${o.key}\r\nConnection: close\r\n`, body.length)}${body.slice(0, 15)}`);
    let i = 15;
    const timer = setInterval(() => {
      if (socket.destroyed) return;
      socket.write(body[i++]!);
      if (i === body.length) clearInterval(timer);
    }, everyMs);
  });
}

// A JSON call's body limit is 64 KiB: its deadline is the idle timeout plus 1 s (docs/security.md).
test('a slow but steady body, longer than the idle timeout and within its deadline, is not cut off', async () => {
  const { took, answer } = await trickle(60); // 23 bytes: ~1.4 s
  expect(took).toBeGreaterThan(IDLE_TIMEOUT_MS);
  expect(answer).toMatch(/^HTTP\/1\.1 200/);
});

test('a body trickled past its deadline is cut off, however steady', async () => {
  const { took, answer } = await trickle(200); // 23 bytes: ~4.6 s
  expect(answer).toBe('');
  expect(took).toBeLessThan(4_000);
});

const edgeHeaders = { authorization: `Bearer ${EDGE_TOKEN}` };

/** Acknowledges `seq` as edge `id`; the answer grants a lease. */
async function ack(id: string, seq: number): Promise<void> {
  const res = await fetch(`${o.url}/_edge/ack`, { method: 'POST', headers: { ...edgeHeaders, 'content-type': 'application/json' }, body: JSON.stringify({ edge: id, seq }) });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

/** Follows the feed as edge `id` from `seq`, reading everything; `closed()` says when the origin ended it. */
async function follow(id: string): Promise<{ seq: number; req: http.ClientRequest; closedAfter: () => number | null }> {
  const snapshot = await fetch(`${o.url}/_edge/snapshot`, { headers: edgeHeaders });
  const seq = ((await snapshot.json()) as { seq: number }).seq;
  let closedAt: number | null = null;
  const opened = performance.now();
  const req = await new Promise<http.ClientRequest>((resolve, reject) => {
    const r = http.get(`${o.url}/_edge/feed?after=${seq}&edge=${id}`, { headers: edgeHeaders }, (res) => {
      expect(res.statusCode).toBe(200);
      res.resume();
      res.on('close', () => { closedAt = performance.now(); });
      resolve(r);
    });
    r.on('error', reject);
  });
  return { seq, req, closedAfter: () => (closedAt === null ? null : Math.round(closedAt - opened)) };
}

test('the edges\' feed stays open while quiet for longer than the idle timeout', async () => {
  const feed = await follow('quiet-' + randomBytes(4).toString('hex'));
  try {
    await new Promise((r) => setTimeout(r, 3 * IDLE_TIMEOUT_MS));
    expect(feed.closedAfter(), 'the feed was closed after (ms)').toBeNull();
  } finally {
    feed.req.destroy();
  }
});

test('a change that waits for an edge longer than the idle timeout gets its answer', async () => {
  const id = 'slow-' + randomBytes(4).toString('hex');
  const feed = await follow(id);
  try {
    // The edge holds a lease and never acknowledges again: the change waits for it, up to the lease.
    await ack(id, feed.seq);
    const started = performance.now();
    const done = await o.post('/collections/folder/create', { name: 'waited', visibility: 'Public' });
    const waited = performance.now() - started;
    expect(done.status).toBe(200);
    expect(waited).toBeGreaterThan(IDLE_TIMEOUT_MS);
    expect(waited).toBeLessThan(LEASE_MS + 3_000);
  } finally {
    feed.req.destroy();
  }
}, 30_000);
