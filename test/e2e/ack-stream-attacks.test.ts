/**
 * Attacks on `POST /_edge/acks` from outside, on a real origin (src/origin/edge-routes.ts,
 * src/feed/ack-stream.ts): hostile lines, bodies and spellings, callers that are not edges, a
 * flood of lines, streams left open across a shutdown; and a real edge whose origin restarts.
 * What test/e2e/edge-ack-stream.test.ts already proves (refusals by status, one lease per
 * renewal, a malformed line) is not repeated.
 */
import http from 'node:http';
import net from 'node:net';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { openAcks, openFeed } from '../helpers/edge-streams.js';
import { startTestEdge } from '../helpers/logging-edge.js';
import { sleep, waitFor } from '../kit/index.js';

const LEASE = 2000;

describe('hostile input on one origin', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin({ COFFER_EDGE_LEASE_MS: String(LEASE) });
  });
  afterAll(async () => {
    await o?.close();
  });

  test('an overlong line, a line never ended, binary, invalid UTF-8 or numbers past the safe ones end the stream and are answered nothing', async () => {
    const cases: Array<[string, Array<string | Buffer>]> = [
      ['a line of 300 characters', [`{"n":1,"seq":0,"renew":true,"pad":"${'x'.repeat(260)}"}\n`]],
      ['a line never ended', ['{"n":1,"seq":0,"renew":true}', ' '.repeat(100), ' '.repeat(100), ' '.repeat(100)]],
      ['binary', [Buffer.from(Array.from({ length: 256 }, (_, i) => i))]],
      ['invalid UTF-8 between the fields', [Buffer.concat([Buffer.from('{"n":1,'), Buffer.from([0xff, 0xfe, 0xc0]), Buffer.from('"seq":0,"renew":true}\n')])]],
      ['a number past the safe integers', ['{"n":9007199254740993,"seq":0,"renew":true}\n']],
      ['a number too large for a double', [`{"n":1,"seq":1${'0'.repeat(400)},"renew":true}\n`]],
      ['a line that is only a NUL', ['\u0000\n']],
    ];
    for (const [name, chunks] of cases) {
      const edge = `hostile-${cases.findIndex((c) => c[0] === name)}`;
      const feed = await openFeed(o, edge);
      const acks = await openAcks(o, edge);
      try {
        expect(acks.status, name).toBe(200);
        for (const c of chunks) acks.write(c);
        await waitFor(() => acks.closed(), { timeoutMs: 5000, what: name });
        await sleep(50);
        expect(feed.leases(), name).toEqual([]);
      } finally {
        feed.close();
      }
    }
    // The origin is none the worse: a good stream is answered.
    const feed = await openFeed(o, 'after-hostile');
    const acks = await openAcks(o, 'after-hostile');
    acks.write('{"n":1,"seq":0,"renew":true}\n');
    await waitFor(() => feed.leases().length === 1, { timeoutMs: 5000 });
    acks.end();
    feed.close();
  });

  test('a body sent with Content-Length instead of chunked is read line by line as it comes', async () => {
    const feed = await openFeed(o, 'sized');
    const body = '{"n":1,"seq":0,"renew":true}\n{"n":2,"seq":0,"renew":true}\n';
    const acks = await openAcks(o, 'sized', { 'transfer-encoding': '', 'content-length': String(body.length + 1000) });
    try {
      expect(acks.status).toBe(200);
      acks.write(body.slice(0, 30));
      await waitFor(() => feed.leases().length === 1, { timeoutMs: 5000, what: 'the first line answered before the body is whole' });
      acks.write(body.slice(30));
      await waitFor(() => feed.leases().length === 2, { timeoutMs: 5000 });
      expect(feed.leases().map((l) => l.n)).toEqual([1, 2]);
    } finally {
      acks.destroy();
      feed.close();
    }
  });

  test('odd spellings of ?edge= are refused, never mistaken for another edge, and the connection closed', async () => {
    const feed = await openFeed(o, 'spelled');
    try {
      const long = 'a'.repeat(65);
      for (const query of ['edge=spelled&edge=spelled', 'edge[]=spelled', 'edge=', '', 'edge=spel%20led', 'edge=spelled%00', 'edge=..%2Fspelled', `edge=${long}`, 'edge=%F0%9F%98%80', 'Edge=spelled', 'edge=spelled%0A']) {
        const acks = await openAcks(o, '', {}, `/_edge/acks?${query}`);
        acks.write('{"n":1,"seq":0,"renew":true}\n');
        expect([400, 409], query).toContain(acks.status);
        await waitFor(() => acks.closed(), { timeoutMs: 5000, what: query });
      }
      for (const odd of ['__proto__', 'constructor', 'hasOwnProperty']) {
        const acks = await openAcks(o, odd);
        expect(acks.status, odd).toBe(409);
        await waitFor(() => acks.closed(), { timeoutMs: 5000, what: odd });
      }
      await sleep(50);
      expect(feed.leases()).toEqual([]);
    } finally {
      feed.close();
    }
  });

  test('a caller with the access key, none or a wrong token gets 401 and causes no lease line', async () => {
    const feed = await openFeed(o, 'notanedge');
    try {
      for (const authorization of [`Bearer ${o.key}`, '', 'Bearer ', `Basic ${Buffer.from(`edge:${o.origin.credentials.edgeTokens[0]}`).toString('base64')}`, `Bearer ${o.origin.credentials.edgeTokens[0]}x`]) {
        const acks = await openAcks(o, 'notanedge', { authorization });
        acks.write('{"n":1,"seq":0,"renew":true}\n');
        expect(acks.status, authorization).toBe(401);
        await waitFor(() => acks.closed(), { timeoutMs: 5000, what: authorization });
      }
      await sleep(50);
      expect(feed.leases()).toEqual([]);
    } finally {
      feed.close();
    }
  });

  test('a flood of renewals in one write is answered for at most 33 of them, the newest among them', async () => {
    const feed = await openFeed(o, 'flood');
    const acks = await openAcks(o, 'flood');
    try {
      const lines = Array.from({ length: 5000 }, (_, i) => `{"n":${i + 1},"seq":0,"renew":true}\n`).join('');
      acks.write(lines);
      await waitFor(() => feed.leases().some((l) => l.n === 5000), { timeoutMs: 10_000 });
      await sleep(100);
      const answered = feed.leases().map((l) => l.n as number);
      expect(answered.length).toBeLessThanOrEqual(33);
      expect(answered).toEqual([...answered].sort((a, b) => a - b));
      expect(acks.closed()).toBe(false);
    } finally {
      acks.end();
      feed.close();
    }
  });

  test('an acknowledgement of the largest safe sequence is stored and listed without harm, and changes go on', async () => {
    const feed = await openFeed(o, 'boaster');
    const acks = await openAcks(o, 'boaster');
    try {
      acks.write(`{"n":1,"seq":${Number.MAX_SAFE_INTEGER},"renew":true}\n`);
      await waitFor(() => feed.leases().length === 1, { timeoutMs: 5000 });
      const listed = await o.post('/collections/edges', {});
      expect(listed.status).toBe(200);
      const file = await uploadBytes(o, Buffer.from('boast'), { name: 'b.txt' });
      const r = await o.post('/collections/file/delete', { file_id: file.file_id });
      expect(r.status).toBe(200);
    } finally {
      acks.end();
      feed.close();
    }
  });

  test('a request with both Transfer-Encoding and Content-Length, or chunked not last, is refused and answered nothing', async () => {
    const feed = await openFeed(o, 'smuggler');
    const token = o.origin.credentials.edgeTokens[0]!;
    const { port } = new URL(o.url);
    try {
      for (const framing of ['Transfer-Encoding: chunked\r\nContent-Length: 40', 'Transfer-Encoding: chunked, gzip', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: identity']) {
        const answer = await new Promise<string>((resolve) => {
          let text = '';
          const socket = net.connect(Number(port), '127.0.0.1', () => {
            socket.write(`POST /_edge/acks?edge=smuggler HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/x-ndjson\r\n${framing}\r\n\r\n`
              + '20\r\n{"n":1,"seq":0,"renew":true}\n  \r\n');
          });
          socket.setEncoding('utf8');
          socket.on('data', (t: string) => (text += t));
          socket.on('close', () => resolve(text));
          socket.on('error', () => {});
          setTimeout(() => socket.destroy(), 3000);
        });
        expect(answer.split('\r\n')[0], framing).toMatch(/^HTTP\/1\.1 (400|411|415|501)/);
      }
      await sleep(50);
      expect(feed.leases()).toEqual([]);
    } finally {
      feed.close();
    }
  });

  test('one line cut into single bytes is answered once whole', async () => {
    const feed = await openFeed(o, 'dribble');
    const acks = await openAcks(o, 'dribble');
    try {
      // The head as it is now: earlier tests here made changes.
      for (const byte of `{"n":42,"seq":${o.origin.hub.headSeq},"renew":true}\n`) {
        acks.write(byte);
        await sleep(2);
      }
      await waitFor(() => feed.leases().length === 1, { timeoutMs: 5000 });
      expect(feed.leases()[0]).toMatchObject({ n: 42, lease: true });
    } finally {
      acks.end();
      feed.close();
    }
  });
});

describe('shutdown', () => {
  test('an origin closes promptly with acknowledgement streams open: silent, mid-line, refused and still sending', async () => {
    const o = await startTestOrigin({ COFFER_EDGE_LEASE_MS: String(LEASE) });
    let closed = false;
    try {
      const feed = await openFeed(o, 'closer');
      const silent = await openAcks(o, 'closer');
      const midLine = await openAcks(o, 'closer');
      midLine.write('{"n":1,"seq":0,"re');
      const refused = await openAcks(o, 'nofeed');
      expect([silent.status, midLine.status, refused.status]).toEqual([200, 200, 409]);
      const sending = setInterval(() => refused.write('{"n":1,"seq":0}\n'), 20);
      const t0 = performance.now();
      await Promise.race([o.close().then(() => (closed = true)), sleep(15_000)]);
      clearInterval(sending);
      expect(closed, 'close() finished').toBe(true);
      // Well before the streams' idle bound (30 s) would have ended them.
      expect(performance.now() - t0).toBeLessThan(15_000);
      await waitFor(() => silent.closed() && midLine.closed(), { timeoutMs: 5000 });
      feed.close();
    } finally {
      if (!closed) await o.close();
    }
  });

  // A stream whose request was under way when close() ended the streams (routed before the
  // server refused new requests, its handler run after) is refused: taken, it would hold the
  // close, an acknowledgement stream until its idle bound, a feed, pinged meanwhile, for ever.
  test.each(['feed', 'acks'] as const)('an origin closes promptly when a stream (%s) is taken just after the streams were ended', async (what) => {
    const o = await startTestOrigin({ COFFER_EDGE_LEASE_MS: String(LEASE) });
    const token = o.origin.credentials.edgeTokens[0]!;
    const hub = o.origin.hub as unknown as Record<'attach' | 'hasStream', (...a: unknown[]) => unknown>;
    let closing: Promise<void> | null = null;
    const feed = what === 'acks' ? await openFeed(o, 'late') : null;
    // The moment the route's handler runs, close() begins (it ends the streams at once).
    const hook = what === 'feed' ? 'attach' : 'hasStream';
    const original = hub[hook]!.bind(o.origin.hub);
    hub[hook] = (...a: unknown[]) => {
      // A feed is attached after the streams ended; an acknowledgement stream finds its feed, then is taken after.
      if (what === 'feed') closing ??= o.close();
      const r = original(...a);
      closing ??= o.close();
      return r;
    };
    // Asked for, and left to whatever answer comes (with the fix: none, the socket closed).
    const late = what === 'feed'
      ? http.get(`${o.url}/_edge/feed?after=0&edge=late`, { headers: { authorization: `Bearer ${token}` } }, (res) => res.resume())
      : http.request(`${o.url}/_edge/acks?edge=late`, {
        method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson', 'transfer-encoding': 'chunked' },
      }, (res) => res.resume());
    late.on('error', () => {});
    if (what === 'acks') late.flushHeaders();
    await waitFor(() => closing !== null, { timeoutMs: 5000 });
    try {
      const finished = await Promise.race([closing!.then(() => true), sleep(10_000).then(() => false)]);
      expect(finished, 'close() finished').toBe(true);
    } finally {
      late.destroy();
      feed?.close();
      await closing;
    }
  });

  test('a silent acknowledgement stream is dropped by the origin after its idle bound (30 s at this lease)', async () => {
    const o = await startTestOrigin({ COFFER_EDGE_LEASE_MS: String(LEASE) });
    try {
      const feed = await openFeed(o, 'quiet');
      const acks = await openAcks(o, 'quiet');
      acks.write('{"n":1,"seq":0,"renew":true}\n');
      await waitFor(() => feed.leases().length === 1, { timeoutMs: 5000 });
      const t0 = performance.now();
      await waitFor(() => acks.closed(), { timeoutMs: 45_000, intervalMs: 200 });
      expect(performance.now() - t0).toBeGreaterThan(25_000);
      feed.close();
    } finally {
      await o.close();
    }
  }, 90_000);
});

describe('a real edge whose origin restarts', () => {
  test('has a delete answered well within a lease after the restart, and acknowledges on its stream again', async () => {
    let o = await startTestOrigin({ COFFER_EDGE_LEASE_MS: String(LEASE), COFFER_HOST: '127.0.0.1' });
    const port = new URL(o.url).port;
    const settings = { COFFER_EDGE_LEASE_MS: String(LEASE), COFFER_HOST: '127.0.0.1', COFFER_PORT: port, COFFER_DATA_DIR: o.dataDir };
    const edge = await startTestEdge(o, () => ({ COFFER_EDGE_LEASE_MS: String(LEASE) }));
    const dataDir = o.dataDir;
    try {
      const file = await uploadBytes(o, Buffer.from('restart me'), { name: 'r.txt' });
      await waitFor(async () => (await fetch(`${edge.edge.url}/files/${file.file_id}`)).status === 200, { timeoutMs: 10_000 });
      await o.origin.close();
      await sleep(300);
      o = await startTestOrigin({ ...settings, COFFER_ACCESS_KEY: o.key, COFFER_SIGNING_SECRET: o.secret, COFFER_LOG_LEVEL: 'debug' });
      // The edge finds the origin again and holds a lease: its cache answers.
      await waitFor(async () => (await fetch(`${edge.edge.url}/files/${file.file_id}`)).status === 200, { timeoutMs: 10_000 });
      await sleep(LEASE);
      const t0 = performance.now();
      const r = await o.post('/collections/file/delete', { file_id: file.file_id });
      expect(r.status).toBe(200);
      expect(performance.now() - t0, 'not held for the lease').toBeLessThan(LEASE / 2);
      expect((await fetch(`${edge.edge.url}/files/${file.file_id}`)).status).toBe(404);
      const requests = () => o.logs.map((l) => JSON.parse(l) as { msg?: string; url?: string }).filter((l) => l.msg === 'request').map((l) => l.url ?? '');
      const before = requests().filter((u) => u === '/_edge/ack').length;
      await sleep(2 * LEASE);
      expect(requests().filter((u) => u === '/_edge/ack').length - before, 'back on the stream, not one request each').toBe(0);
    } finally {
      await edge.close();
      await o.close();
      // The second origin was given the first one's directory, so its close leaves it.
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
