/**
 * The edge's listener sets the idle timeout per response (src/edge/listener.ts): a request
 * answered at once keeps its keep-alive connection with no timer, while a request whose body
 * stalls before its answer, or a response still under way, is dropped after COFFER_IDLE_TIMEOUT_MS.
 */
import net from 'node:net';
import type http from 'node:http';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { listenEdge } from '../../src/edge/listener.js';

const IDLE_MS = 300;
let server: http.Server | null = null;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = null;
});

async function listen(handler: http.RequestListener): Promise<number> {
  const config = { headersTimeoutMs: 5000, idleTimeoutMs: IDLE_MS, edgePort: 0, host: '127.0.0.1', maxConnections: 100 } as unknown as Config;
  server = await listenEdge(config, handler, pino({ level: 'silent' }));
  return (server.address() as net.AddressInfo).port;
}

/** Sends `text` and resolves with when the server closed the connection (ms after sending), or null if it stayed open for `waitMs`. */
function closedAfter(port: number, text: string, waitMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    const t0 = Date.now();
    socket.on('data', () => {});
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(null);
    }, waitMs);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - t0);
    });
  });
}

describe('the edge listener\'s idle timeout', () => {
  it('leaves a keep-alive connection answered at once open past it', async () => {
    const port = await listen((_req, res) => res.writeHead(200, ['Content-Length', '2']).end('ok'));
    expect(await closedAfter(port, 'GET /a HTTP/1.1\r\nHost: a\r\n\r\n', IDLE_MS * 4)).toBeNull();
  });

  it('drops a connection whose request body stalls while its answer waits for it', async () => {
    const port = await listen((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, ['Content-Length', '2']).end('ok'));
    });
    const ms = await closedAfter(port, 'GET /a HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nabc', 10_000);
    expect(ms).not.toBeNull();
    expect(ms!).toBeGreaterThanOrEqual(IDLE_MS - 50);
  });

  it('drops a connection whose answer is still under way and makes no progress', async () => {
    const port = await listen((_req, res) => {
      res.writeHead(200, ['Content-Length', '10']);
      res.write('12345');
    });
    const ms = await closedAfter(port, 'GET /a HTTP/1.1\r\nHost: a\r\n\r\n', 10_000);
    expect(ms).not.toBeNull();
    expect(ms!).toBeGreaterThanOrEqual(IDLE_MS - 50);
  });
});
