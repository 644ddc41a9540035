/**
 * Rigs for attacking a parent edge that sends its children a fill as it arrives (issue 26,
 * test/security/tiers-stream-attacks.test.ts): a fake upstream that stops mid-body in chosen
 * ways, a child's raw request that can abort or stall, and a proxy to the origin that sends
 * blob answers slowly or pauses them.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { sha256 } from '../kit/index.js';

export type Mode = 'pause' | 'close' | 'stall';

/**
 * A fake upstream for the parent: for each version (by SHA-256) registered, the right headers,
 * then `first` bytes, then per `mode`: wait for `release` and send the rest ('pause'), destroy
 * the socket ('close'), or never send more nor close ('stall').
 */
export async function fakeUpstream(servers: http.Server[]) {
  const files = new Map<string, { bytes: Buffer; first: number; mode: Mode; tail?: Buffer }>();
  const waiting: Array<() => void> = [];
  const asked = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const sha = new URL(req.url ?? '/', 'http://x').searchParams.get('sha256') ?? '';
    asked.set(sha, (asked.get(sha) ?? 0) + 1);
    const f = files.get(sha);
    if (!f) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-length': f.bytes.length, 'x-coffer-sha256': sha });
    if (f.first > 0) res.write(f.bytes.subarray(0, f.first));
    if (f.mode === 'close') setTimeout(() => res.socket?.destroy(), 50);
    else if (f.mode === 'pause') {
      // A byte every 500 ms while held, as a live upstream would: the parent's idle bound
      // (PARENT_IDLE_MS) must not end a fill held for the test on a busy machine.
      let at = f.first;
      const trickle = setInterval(() => {
        if (at < f.bytes.length - 1) res.write(f.bytes.subarray(at, ++at));
      }, 500);
      res.once('close', () => clearInterval(trickle));
      waiting.push(() => {
        clearInterval(trickle);
        res.end(f.tail ? f.tail.subarray(at - f.first) : f.bytes.subarray(at));
      });
    }
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** `tail`: sent at the release instead of the rest of `bytes` (from `first` on). */
    add(bytes: Buffer, first: number, mode: Mode = 'pause', tail?: Buffer) {
      files.set(sha256(bytes), { bytes, first, mode, ...(tail ? { tail } : {}) });
    },
    asked: (bytes: Buffer) => asked.get(sha256(bytes)) ?? 0,
    release() {
      for (const w of waiting.splice(0)) w();
    },
  };
}


/** A child's raw request: its status, the bytes as they come, and ways to abort or stall it. */
export function askParent(parentUrl: string, token: string, id: string, sha: string, method = 'GET') {
  const chunks: Buffer[] = [];
  let status = 0;
  let req!: http.ClientRequest;
  let response: http.IncomingMessage | undefined;
  let stalled = false;
  const received = () => chunks.reduce((n, c) => n + c.length, 0);
  const done = new Promise<{ complete: boolean }>((resolve) => {
    req = http.request(`${parentUrl}/_edge/blob/${id}?sha256=${sha}&seq=0`, { method, headers: { authorization: `Bearer ${token}` } }, (res) => {
      response = res;
      status = res.statusCode ?? 0;
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        if (stalled) res.pause();
      });
      res.on('end', () => resolve({ complete: res.complete }));
      res.on('error', () => resolve({ complete: false }));
      res.on('close', () => resolve({ complete: res.complete }));
    });
    req.on('error', () => resolve({ complete: false }));
    req.end();
  });
  return {
    status: () => status, received, body: () => Buffer.concat(chunks), done,
    abort: () => req.destroy(),
    /** Stops reading, for good: the socket's buffers fill and the parent's writes wait. */
    stall: () => {
      stalled = true;
      response?.pause();
    },
  };
}

/**
 * A proxy to the origin that sends the answers to blob fetches at `perTick` bytes each 100 ms
 * (a slow but steady origin), with `pause` once `after` bytes of one went, and everything else
 * as it comes.
 */
export async function slowBlobProxy(target: string, perTick: number, onClose: (close: () => void) => void, pause?: { after: number; ms: number }): Promise<string> {
  const { hostname, port } = new URL(target);
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    let slow = false;
    const queue: Buffer[] = [];
    let sent = 0;
    let pausedUntil: number | undefined;
    const timer = setInterval(() => {
      if (pause && pausedUntil === undefined && sent >= pause.after) pausedUntil = Date.now() + pause.ms;
      if (pausedUntil !== undefined && Date.now() < pausedUntil) return;
      const cap = pause && pausedUntil === undefined ? pause.after - sent : Infinity;
      for (let room = Math.min(perTick, cap); room > 0 && queue.length > 0;) {
        const head = queue[0]!;
        const part = head.subarray(0, room);
        client.write(part);
        sent += part.length;
        room -= part.length;
        if (part.length === head.length) queue.shift();
        else queue[0] = head.subarray(part.length);
      }
    }, 100);
    for (const sock of [client, upstream]) sock.on('error', () => undefined);
    client.on('data', (d: Buffer) => {
      if (/GET \/_edge\/blob\//.test(d.toString('latin1'))) slow = true;
      upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => (slow ? queue.push(d) : client.write(d)));
    client.once('close', () => (clearInterval(timer), upstream.destroy()));
    // The origin closes once it has sent everything: what is queued still goes first.
    upstream.once('close', () => {
      const drained = setInterval(() => {
        if (queue.length > 0 && !client.destroyed) return;
        clearInterval(drained);
        clearInterval(timer);
        client.end();
      }, 100);
    });
  });
  onClose(() => {
    server.close();
    for (const c of connections) c.destroy();
  });
  const connections = new Set<net.Socket>();
  server.on('connection', (c) => (connections.add(c), c.once('close', () => connections.delete(c))));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
