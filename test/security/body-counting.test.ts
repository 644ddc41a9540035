/**
 * The origin's servers make their requests as ReceivingMessage (src/http/received-bytes.ts),
 * which counts body bytes for the memory policy (src/start/memory.ts). Attacked here:
 * - ReceivingMessage against Node's own IncomingMessage, byte for byte, for every awkward
 *   request shape (chunked with trailers and thousands of tiny chunks, empty, 100-continue,
 *   pipelined, aborted mid-body, GET/HEAD with bodies, absolute-form targets, Upgrade and
 *   CONNECT), and that the count is exactly the body bytes handed over;
 * - the count through a real origin (raw parts, JSON, the S3 port's aws-chunked bodies), and a
 *   CLI origin, which collects as it counts, answering every such shape and staying up;
 * - BodyCollector's policy: never a full collection at two steps in a row, whatever the buffers do.
 * The embedded store's kept statements are attacked in statement-cache.test.ts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import http, { IncomingMessage } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { PutObjectCommand, GetObjectCommand, CreateBucketCommand } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BUFFER_HEADROOM_BYTES, BodyCollector, COLLECT_EVERY_BYTES, type Gc } from '../../src/start/memory.js';
import { ReceivingMessage, onReceivedBytes } from '../../src/http/received-bytes.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectContractError, rawRequest, rawSocket } from '../helpers/raw-http.js';
import { makeKey, s3Client } from '../helpers/s3-api.js';
import { spawnCoffer, stopAll } from '../helpers/processes.js';

let counted = 0;
const count = (n: number) => { counted += n; };

// ================================================================ ReceivingMessage vs IncomingMessage

/** A plain node:http server recording what each request delivered, in order. */
async function tracingServer(receiving: boolean): Promise<{ port: number; trace: string[]; delivered: () => number; close(): Promise<void> }> {
  const trace: string[] = [];
  let delivered = 0;
  const server = http.createServer(receiving ? { IncomingMessage: ReceivingMessage } : {}, (req, res) => {
    const id = `${req.method} ${req.url} ${req.constructor === IncomingMessage ? 'plain' : 'subclass'}`.replace(/ (plain|subclass)$/, '');
    expect(req).toBeInstanceOf(IncomingMessage);
    if (req.url === '/ignore') {
      // Answered without reading: Node dumps the rest of the body.
      res.end('ignored');
      trace.push(`${id} answered unread`);
      return;
    }
    const hash = createHash('sha256');
    let length = 0;
    req.on('data', (c: Buffer) => { hash.update(c); length += c.length; delivered += c.length; });
    req.on('end', () => {
      trace.push(`${id} end ${length} ${hash.copy().digest('hex').slice(0, 12)} complete=${req.complete} trailers=${JSON.stringify(req.trailers)}`);
      res.setHeader('x-got', String(length));
      res.end(req.method === 'HEAD' ? undefined : `got ${length}`);
    });
    req.on('close', () => trace.push(`${id} close complete=${req.complete} length=${length}`));
  });
  server.on('clientError', (err, socket) => { trace.push(`clientError ${(err as NodeJS.ErrnoException).code}`); socket.destroy(); });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    trace,
    delivered: () => delivered,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** Writes `pieces` to a fresh connection one after another, then waits for the server to close or `ms`; the answer without Date headers. */
function exchange(port: number, pieces: Array<string | Buffer>, opts: { ms?: number; destroyAfter?: boolean } = {}): Promise<string> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = net.connect(port, '127.0.0.1', async () => {
      for (const p of pieces) {
        socket.write(p);
        await new Promise((r) => setImmediate(r));
      }
      if (opts.destroyAfter) setTimeout(() => socket.destroy(), 50);
    });
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => { answer += c; });
    socket.on('error', () => {});
    const done = () => resolve(answer.replace(/\r\nDate: [^\r]*/g, ''));
    socket.on('close', done);
    setTimeout(() => { socket.destroy(); }, opts.ms ?? 400);
  });
}

/** A chunked body of `bytes` cut into chunks of 1 to 3 bytes, with a trailer. */
function tinyChunks(bytes: Buffer): string {
  let out = '';
  for (let i = 0, n = 1; i < bytes.length; i += n, n = (n % 3) + 1) {
    const piece = bytes.subarray(i, i + n);
    out += `${piece.length.toString(16)}\r\n${piece.toString('latin1')}\r\n`;
  }
  return `${out}0\r\nX-Trailer: yes\r\n\r\n`;
}

const SHAPES: Array<{ name: string; pieces: Array<string | Buffer>; destroyAfter?: boolean }> = (() => {
  const body = randomBytes(6000);
  const head = (method: string, target: string, extra: string) => `${method} ${target} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;
  const chunked = tinyChunks(body);
  return [
    { name: 'content-length body', pieces: [head('POST', '/a', 'Content-Length: 6000\r\nConnection: close\r\n'), body] },
    { name: 'empty body', pieces: [head('POST', '/a', 'Content-Length: 0\r\nConnection: close\r\n')] },
    { name: 'chunked, 4000 tiny chunks and a trailer, written in pieces', pieces: [head('POST', '/a', 'Transfer-Encoding: chunked\r\nConnection: close\r\n'), ...chunked.match(/[\s\S]{1,997}/g)!] },
    { name: 'chunked, zero-length body', pieces: [head('PUT', '/a', 'Transfer-Encoding: chunked\r\nConnection: close\r\n') + '0\r\n\r\n'] },
    { name: 'Expect: 100-continue', pieces: [head('POST', '/a', 'Expect: 100-continue\r\nContent-Length: 6000\r\nConnection: close\r\n'), body] },
    {
      name: 'three pipelined requests in one write',
      pieces: [head('POST', '/1', 'Content-Length: 5\r\n') + 'hello' + head('POST', '/2', 'Transfer-Encoding: chunked\r\n') + '3\r\nabc\r\n0\r\n\r\n' + head('POST', '/3', 'Content-Length: 2\r\nConnection: close\r\n') + 'hi'],
    },
    { name: 'GET and HEAD with bodies, pipelined', pieces: [head('GET', '/g', 'Content-Length: 4\r\n') + 'body' + head('HEAD', '/h', 'Content-Length: 3\r\nConnection: close\r\n') + 'abc'] },
    { name: 'absolute-form target', pieces: [head('POST', 'http://other.example:81/abs?q=1', 'Content-Length: 3\r\nConnection: close\r\n') + 'abc'] },
    { name: 'Upgrade asked, no upgrade listener', pieces: [head('POST', '/up', 'Connection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 4\r\n') + 'abcd'] },
    { name: 'Upgrade asked, then a pipelined request (Node stops reading)', pieces: [head('POST', '/up', 'Connection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 4\r\n') + 'abcd' + head('POST', '/next', 'Content-Length: 1\r\nConnection: close\r\n') + 'z'] },
    { name: 'CONNECT', pieces: [head('CONNECT', '127.0.0.1:22', 'Content-Length: 4\r\n') + 'abcd'] },
    { name: 'aborted mid-body', pieces: [head('POST', '/cut', 'Content-Length: 100000\r\n'), body], destroyAfter: true },
    { name: 'aborted mid-chunk', pieces: [head('POST', '/cut2', 'Transfer-Encoding: chunked\r\n') + 'ffff\r\n', body], destroyAfter: true },
    { name: 'answered unread, then dumped', pieces: [head('POST', '/ignore', 'Content-Length: 6000\r\n'), body, head('POST', '/after', 'Content-Length: 1\r\nConnection: close\r\n') + 'z'] },
    { name: 'body longer than its Content-Length (the rest parsed as a request)', pieces: [head('POST', '/a', 'Content-Length: 2\r\n') + 'abGARBAGE\r\n\r\n'] },
    { name: 'both Content-Length and chunked', pieces: [head('POST', '/a', 'Content-Length: 3\r\nTransfer-Encoding: chunked\r\n') + '3\r\nabc\r\n0\r\n\r\n'] },
  ];
})();

describe('ReceivingMessage is IncomingMessage, and counts exactly the body bytes handed over', () => {
  let plain: Awaited<ReturnType<typeof tracingServer>>;
  let receiving: Awaited<ReturnType<typeof tracingServer>>;
  beforeAll(async () => {
    plain = await tracingServer(false);
    receiving = await tracingServer(true);
  });
  afterAll(async () => {
    await plain?.close();
    await receiving?.close();
  });
  afterEach(() => onReceivedBytes(null));

  for (const shape of SHAPES) {
    it(shape.name, async () => {
      plain.trace.length = 0;
      receiving.trace.length = 0;
      const a = await exchange(plain.port, shape.pieces, { destroyAfter: shape.destroyAfter });
      counted = 0;
      onReceivedBytes(count);
      const before = receiving.delivered();
      const b = await exchange(receiving.port, shape.pieces, { destroyAfter: shape.destroyAfter });
      await new Promise((r) => setTimeout(r, 20));
      onReceivedBytes(null);
      expect(b).toBe(a);
      expect(receiving.trace).toEqual(plain.trace);
      const delivered = receiving.delivered() - before;
      // Every byte a reader saw was counted once; a dumped body's rest is neither pushed nor counted.
      if (shape.name.startsWith('answered unread')) expect(counted).toBeLessThanOrEqual(6001);
      else expect(counted).toBe(delivered);
    });
  }

  it('counts nothing, and still works, with no listener; a string pushed by hand is not counted', async () => {
    counted = 0;
    const a = await exchange(receiving.port, SHAPES[0]!.pieces);
    expect(a).toMatch(/^HTTP\/1.1 200 OK/);
    expect(counted).toBe(0);
    onReceivedBytes(count);
    const m = new ReceivingMessage(new net.Socket());
    m.push('text', 'utf8');
    m.push(new Uint8Array(7));
    m.push(null);
    const got: Buffer[] = [];
    for await (const c of m) got.push(c as Buffer);
    expect(Buffer.concat(got).length).toBe(11);
    expect(counted).toBe(7);
  });
});

// ================================================================ through an origin

describe('counting through an origin: every body of every port, answers unchanged', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin();
  });
  afterAll(async () => {
    onReceivedBytes(null);
    await o?.close();
  });
  afterEach(() => onReceivedBytes(null));

  const port = () => Number(new URL(o.url).port);

  it('a raw part in thousands of tiny chunks is stored whole and counted byte for byte', async () => {
    const bytes = randomBytes(20_000);
    const init = await o.post('/collections/upload/file', { name: 'tiny.bin', visibility: 'Private', size: bytes.length, file_type: 'other' });
    expect(init.status).toBe(200);
    const s = init.body;
    const q = new URLSearchParams({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: '1' });
    counted = 0;
    onReceivedBytes(count);
    const pieces = async function* () {
      for (let i = 0; i < bytes.length; i += 7) yield bytes.subarray(i, i + 7);
    };
    const r = await rawRequest(o.url, `/collections/upload/file-progress?${q}`, {
      method: 'POST', headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/octet-stream' }, body: pieces(),
    });
    onReceivedBytes(null);
    expect(r.status, r.body.toString()).toBe(200);
    expect(counted).toBe(bytes.length);
    const done = await o.post('/collections/upload/complete-upload', { file_id: s.fileId });
    expect(done.status).toBe(200);
    expect(done.body.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it('Expect: 100-continue, pipelined, absolute-form and Upgrade requests get the contract\'s answers', async () => {
    const json = '{"file_id":"nope"}';
    const head = (target: string, extra = '') =>
      `POST ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${o.key}\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n${extra}\r\n${json}`;
    counted = 0;
    onReceivedBytes(count);
    const continued = await rawSocket(port(), head('/collections/upload/status', 'Expect: 100-continue\r\nConnection: close\r\n'));
    expect(continued).toMatch(/^HTTP\/1.1 100 Continue\r\n\r\nHTTP\/1.1 404 /);
    const pipelined = await rawSocket(port(), head('/collections/upload/status') + head('http://elsewhere.example/collections/upload/status') + head('/collections/upload/status', 'Connection: close\r\n'));
    expect(pipelined.match(/HTTP\/1.1 \d+/g)).toEqual(['HTTP/1.1 404', 'HTTP/1.1 404', 'HTTP/1.1 404']);
    expect(pipelined.match(/"code":"file_not_found"/g)).toHaveLength(3);
    // Node 20 reads nothing more on a connection after a request asking for an Upgrade nobody
    // takes (IncomingMessage does the same): that one is answered, the connection then idles.
    const upgrade = await rawSocket(port(), head('/collections/upload/status', 'Connection: Upgrade, close\r\nUpgrade: websocket\r\n'));
    expect(upgrade.match(/HTTP\/1.1 \d+/g)).toEqual(['HTTP/1.1 404']);
    onReceivedBytes(null);
    expect(counted).toBe(5 * json.length);
    // The origin still answers as before, in the contract's shape.
    const after = await rawRequest(o.url, '/collections/upload/status', { method: 'POST', headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' }, body: Buffer.from(json) });
    expectContractError(after, 404, 'status after the shapes');
  });

  it('an upload cut off mid-body is counted as far as it came, and the origin answers the next', async () => {
    const s = (await o.post('/collections/upload/file', { name: 'cut.bin', visibility: 'Private', size: 100_000, file_type: 'other' })).body;
    const q = new URLSearchParams({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: '1' });
    counted = 0;
    onReceivedBytes(count);
    const sent = Buffer.from(randomBytes(15_000).toString('hex'));
    const cut = await rawSocket(port(), `POST /collections/upload/file-progress?${q} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${o.key}\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n${sent.toString('latin1')}`, 300);
    expect(cut).toBe('');
    onReceivedBytes(null);
    expect(counted).toBeGreaterThan(0);
    expect(counted).toBeLessThanOrEqual(sent.length);
    expect((await o.post('/collections/upload/status', { file_id: s.fileId })).body.received).toEqual([]);
  });

  it('the S3 port\'s aws-chunked body is counted as it came on the wire, and stored decoded', async () => {
    const key = await makeKey(o);
    const { client, sent } = s3Client(o.origin.s3Url, key);
    try {
      await client.send(new CreateBucketCommand({ Bucket: 'counting' }));
      const body = randomBytes(300_000);
      counted = 0;
      onReceivedBytes(count);
      await client.send(new PutObjectCommand({ Bucket: 'counting', Key: 'a.bin', Body: Readable.from([body.subarray(0, 1000), body.subarray(1000)]), ContentLength: body.length }));
      onReceivedBytes(null);
      const headers = sent.at(-1)!;
      expect(headers['x-amz-content-sha256']).toMatch(/^STREAMING-/);
      expect(Number(headers['x-amz-decoded-content-length'])).toBe(body.length);
      // The framing (chunk sizes, the trailer) is body bytes too.
      if (headers['content-length'] !== undefined) expect(counted).toBe(Number(headers['content-length']));
      expect(counted).toBeGreaterThan(body.length);
      expect(counted).toBeLessThan(body.length + 4096);
      const got = await client.send(new GetObjectCommand({ Bucket: 'counting', Key: 'a.bin' }));
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
    } finally {
      client.destroy();
    }
  });
});

// ================================================================ a CLI origin: the real collector

describe('an origin started by the CLI, which collects while its parser hands bodies over', () => {
  afterAll(() => stopAll());

  it('answers every request shape and 48 MiB of parts in tiny and large pieces, and stays up', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'coffer-counting-'));
    const key = 'counting-key-0123456789';
    const proc = spawnCoffer({
      name: 'origin', kind: 'origin', args: ['origin'],
      env: { COFFER_PORT: '0', COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: key, COFFER_SIGNING_SECRET: 'counting-secret-0123456789', COFFER_EDGE_TOKEN: 'counting-edge-token-0123', COFFER_LOG_LEVEL: 'error', COFFER_RATE_LIMIT: '100000' },
    });
    try {
      const url = await proc.ready;
      const port = Number(new URL(url).port);
      const post = (path: string, body: unknown) => rawRequest(url, path, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(body)) });
      for (const shape of SHAPES) await exchange(port, shape.pieces, { destroyAfter: shape.destroyAfter, ms: 300 });
      const CHUNK = 5 * 1024 * 1024;
      const parts = 10;
      const init = (await post('/collections/upload/file', { name: 'big.bin', visibility: 'Private', size: parts * CHUNK, file_type: 'other' })).json;
      const part = randomBytes(CHUNK);
      const send = (n: number) => {
        const q = new URLSearchParams({ bucket: init.bucket, key: init.key, uploadId: init.uploadId, fileId: init.fileId, partNumber: String(n) });
        // Every other part as thousands of 1 KiB writes (chunked), the rest whole.
        const body = n % 2 ? part : (async function* () { for (let i = 0; i < part.length; i += 1024) yield part.subarray(i, i + 1024); })();
        return rawRequest(url, `/collections/upload/file-progress?${q}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' }, body });
      };
      for (let n = 1; n <= parts; n += 4) {
        const answers = await Promise.all([n, n + 1, n + 2, n + 3].filter((k) => k <= parts).map(send));
        for (const a of answers) expect(a.status, a.body.toString()).toBe(200);
      }
      const done = await post('/collections/upload/complete-upload', { file_id: init.fileId });
      expect(done.status, done.body.toString()).toBe(200);
      expect(done.json.size).toBe(parts * CHUNK);
      // JSON parts too: 3 × 5 MiB of base64, with many scavenges and a full collection or two.
      const init2 = (await post('/collections/upload/file', { name: 'json.bin', visibility: 'Private', size: 3 * CHUNK, file_type: 'other' })).json;
      const answers = await Promise.all([1, 2, 3].map((n) => post('/collections/upload/file-progress', { bucket: init2.bucket, key: init2.key, uploadId: init2.uploadId, fileId: init2.fileId, partNumber: n, body: part.toString('base64') })));
      for (const a of answers) expect(a.status, a.body.toString()).toBe(200);
      expect(proc.exit).toBeNull();
      expect(proc.stderr()).not.toMatch(/Error|uncaught/i);
    } finally {
      await proc.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

// ================================================================ the collection policy

describe('BodyCollector never collects fully at two steps in a row', () => {
  it('whatever buffer memory it reads and however the bytes arrive', () => {
    fc.assert(fc.property(
      fc.array(fc.record({ bytes: fc.integer({ min: 0, max: 3 * COLLECT_EVERY_BYTES }), buffers: fc.integer({ min: 0, max: 2_000_000_000 }) }), { maxLength: 300 }),
      (steps) => {
        const calls: string[] = [];
        let buffers = 0;
        const gc: Gc = (options) => { calls.push(options?.type === 'minor' ? 'minor' : 'full'); };
        const collector = new BodyCollector(gc, () => buffers);
        let received = 0;
        let expectedSteps = 0;
        for (const step of steps) {
          buffers = step.buffers;
          received += step.bytes;
          if (received >= COLLECT_EVERY_BYTES) {
            received = 0;
            expectedSteps++;
          }
          collector.add(step.bytes);
        }
        // One collection per step, and the step after a full one is a scavenge.
        expect(calls).toHaveLength(expectedSteps);
        for (let i = 1; i < calls.length; i++) if (calls[i - 1] === 'full') expect(calls[i]).toBe('minor');
      },
    ), { numRuns: 300 });
  });

  it('sustained load with more live buffers than the headroom: one full collection, then scavenges', () => {
    const calls: string[] = [];
    const collector = new BodyCollector((o) => { calls.push(o?.type === 'minor' ? 'minor' : 'full'); }, () => 150e6);
    for (let i = 0; i < 1000; i++) collector.add(COLLECT_EVERY_BYTES);
    expect(calls.filter((c) => c === 'full')).toEqual(['full']);
    // Buffers that grow by less than the headroom between full collections never cause one more.
    const grown: string[] = [];
    let live = 50e6;
    const growing = new BodyCollector((o) => { grown.push(o?.type === 'minor' ? 'minor' : 'full'); }, () => live);
    for (let i = 0; i < 1000; i++) {
      live += BUFFER_HEADROOM_BYTES / 4;
      growing.add(COLLECT_EVERY_BYTES);
    }
    // At most one full collection per 4 steps: every 24 MB of growth, never in a loop.
    expect(grown.filter((c) => c === 'full').length).toBeLessThanOrEqual(1000 / 4 + 1);
  });
});
