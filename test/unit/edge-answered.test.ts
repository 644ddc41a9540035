/**
 * What the edge's metrics hand their listeners (usage, the status, the access log) once an
 * answer has ended: the file id noted by the handler (or read from the path), the arrival
 * time observe() returned, and the client's address and Range header, read from the request
 * only when a listener asks for them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock } from '../kit/clock.js';
import { edgeMetrics, type Answered, type EdgeMetrics } from '../../src/edge/metrics.js';
import { accessLine } from '../../src/edge/access-log.js';

interface Seen {
  fields: Omit<Answered, 'client' | 'range'>;
  client: string;
  range: string | null;
  line: string;
}

let server: http.Server | null = null;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = null;
});

/** A server whose handler counts each request with the edge's metrics, the way server.ts does. */
async function serving(handler: (m: EdgeMetrics, req: http.IncomingMessage, res: http.ServerResponse, arrived: number) => void) {
  const clock = new ManualClock();
  const seen: Seen[] = [];
  const arrivals: number[] = [];
  // Read as the access log reads them: while the listener is called.
  const listener = (a: Answered) => {
    const { time, method, fileId, status, bytes, complete, durationMs, cache, preview } = a;
    seen.push({ fields: { time, method, fileId, status, bytes, complete, durationMs, cache, preview }, client: a.client, range: a.range, line: accessLine(a) });
  };
  const deps = { cache: {}, state: {}, follower: {}, token: undefined, clock, onAnswered: [listener] } as unknown as Parameters<typeof edgeMetrics>[0];
  const m = edgeMetrics(deps);
  server = http.createServer((req, res) => {
    const arrived = m.observe(req, res, req.url?.includes('/files/') ? '/files/:id' : 'other');
    arrivals.push(arrived);
    // Time moves on before the answer ends: the answer keeps the time the request arrived.
    void clock.advance(1500);
    handler(m, req, res, arrived);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { clock, seen, arrivals, port };
}

function get(port: number, path: string, headers: http.OutgoingHttpHeaders = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}

const settle = async (seen: Seen[], n: number) => {
  for (let i = 0; i < 200 && seen.length < n; i++) await new Promise((r) => setTimeout(r, 5));
};

describe("the edge's answered requests", () => {
  it('carry the noted file id, the arrival time, the client and the Range header', async () => {
    const { clock, seen, arrivals, port } = await serving((m, _req, res) => {
      m.file(res, 'abc_DEF-123');
      m.body(res, true, 4);
      res.writeHead(206, ['Content-Length', '4']);
      res.end('abcd');
    });
    const start = clock.now();
    expect(await get(port, '/files/abc_DEF-123?preview=1', { range: 'bytes=0-3' })).toBe(206);
    await settle(seen, 1);
    expect(arrivals).toEqual([start]);
    const [one] = seen;
    expect(one!.fields).toMatchObject({ time: start, method: 'GET', fileId: 'abc_DEF-123', status: 206, bytes: 4, complete: true, cache: 'HIT', preview: true });
    expect(one!.client).toBe('127.0.0.1');
    expect(one!.range).toBe('bytes=0-3');
    expect(JSON.parse(one!.line)).toMatchObject({ time: new Date(start).toISOString(), file_id: 'abc_DEF-123', client: '127.0.0.1', range: 'bytes=0-3', cache: 'HIT' });
  });

  it('read the file id from the path when the handler noted none, and carry no Range when none was sent', async () => {
    const { seen, port } = await serving((_m, _req, res) => {
      res.writeHead(404, ['Content-Length', '0']);
      res.end();
    });
    expect(await get(port, '/files/not!an!id?x=1')).toBe(404);
    expect(await get(port, '/other')).toBe(404);
    await settle(seen, 2);
    expect(seen.map((s) => s.fields.fileId)).toEqual(['not!an!id', null]);
    expect(seen.map((s) => s.range)).toEqual([null, null]);
    expect(seen.map((s) => s.fields.preview)).toEqual([false, false]);
    expect(seen.map((s) => s.fields.cache)).toEqual([null, null]);
  });
});
