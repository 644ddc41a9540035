/**
 * The test TCP proxy (test/helpers/tcp-proxy.ts) that the fleet tests put between edges and
 * origins: a server that sends its answer and closes must reach a slow reader whole, as it
 * would without the proxy; a reset still reaches it as a reset; cutAt and freezeAt act
 * at their byte exactly.
 */
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { sleep } from '../kit/index.js';

let server: Server | null = null;
let proxy: TcpProxy | null = null;

afterEach(async () => {
  await proxy?.close();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = proxy = null;
});

async function serve(onConnection: (s: Socket) => void): Promise<TcpProxy> {
  server = createServer(onConnection);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  proxy = await TcpProxy.start('127.0.0.1', address.port);
  return proxy;
}

/** Connects through the proxy, reads nothing for `stallMs`, then reads to the end. */
async function readSlowly(p: TcpProxy, stallMs: number): Promise<{ bytes: Buffer; error: string | null }> {
  const socket = connect(p.port, '127.0.0.1');
  socket.pause();
  await sleep(stallMs);
  const chunks: Buffer[] = [];
  return new Promise((resolve) => {
    let error: string | null = null;
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (err: NodeJS.ErrnoException) => { error = err.code ?? err.message; });
    socket.on('close', () => resolve({ bytes: Buffer.concat(chunks), error }));
    socket.resume();
  });
}

describe('TcpProxy', () => {
  it('delivers every byte an upstream sent before it closed to a reader that was not reading yet', async () => {
    // Far more than the kernel's socket buffers hold, so most of it waits in the proxy.
    const body = randomBytes(24 * 1024 * 1024);
    const p = await serve((s) => s.end(body));
    const { bytes, error } = await readSlowly(p, 300);
    expect(error).toBeNull();
    expect(bytes.length).toBe(body.length);
    expect(bytes.equals(body)).toBe(true);
  });

  it('passes an upstream reset on as a reset', async () => {
    const p = await serve((s) => {
      s.write(randomBytes(1024));
      setTimeout(() => s.resetAndDestroy(), 50);
    });
    // Read at once: a reset that finds unread bytes reads as an end on Linux.
    const { bytes, error } = await readSlowly(p, 0);
    expect(error).toBe('ECONNRESET');
    expect(bytes.length).toBeLessThanOrEqual(1024);
  });

  /** A target that keeps what it is sent; `closed` resolves with it once the connection ends or breaks. */
  async function receiver(): Promise<{ p: TcpProxy; closed: Promise<Buffer> }> {
    let done!: (b: Buffer) => void;
    const closed = new Promise<Buffer>((r) => (done = r));
    const p = await serve((s) => {
      const chunks: Buffer[] = [];
      s.on('data', (d: Buffer) => chunks.push(d));
      s.on('error', () => undefined);
      s.on('close', () => done(Buffer.concat(chunks)));
    });
    return { p, closed };
  }

  it('cuts, at cutAt(n), with no more than n bytes sent to the target', async () => {
    const { p, closed } = await receiver();
    const body = randomBytes(8 * 1024 * 1024);
    const cut = p.cutAt(3_000_001);
    const client = connect(p.port, '127.0.0.1');
    client.on('error', () => undefined);
    client.end(body);
    await cut;
    const got = await closed;
    expect(p.sentToTarget).toBe(3_000_001);
    expect(got.length).toBeLessThanOrEqual(3_000_001);
    expect(got.equals(body.subarray(0, got.length))).toBe(true);
  });

  it('freezes at freezeAt(n) with exactly n bytes sent, and sends the rest in order at the thaw', async () => {
    const { p, closed } = await receiver();
    const body = randomBytes(8 * 1024 * 1024);
    const frozen = p.freezeAt(3_000_001);
    connect(p.port, '127.0.0.1').end(body);
    await frozen;
    expect(p.frozen).toBe(true);
    expect(p.sentToTarget).toBe(3_000_001);
    p.thaw();
    const got = await closed;
    expect(got.equals(body)).toBe(true);
  });
});
