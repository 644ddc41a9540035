/**
 * An edge loads prom-client at its first scrape (edge/metrics.ts): a scrape without the
 * metrics token is refused before that, so anyone reaching /metrics cannot make an idle edge
 * load it (and keep it in memory).
 */
import { describe, expect, it, vi } from 'vitest';
import http from 'node:http';
import { Socket } from 'node:net';

let loaded = 0;
vi.mock('prom-client', async (original) => {
  loaded++;
  return await original();
});

function exchange(authorization?: string) {
  const req = new http.IncomingMessage(new Socket());
  if (authorization !== undefined) req.headers.authorization = authorization;
  const res = new http.ServerResponse(req);
  let status = 0;
  res.writeHead = ((code: number) => {
    status = code;
    return res;
  }) as typeof res.writeHead;
  res.end = (() => res) as typeof res.end;
  return { req, res, status: () => status };
}

describe('an edge scrape without the token', () => {
  it('is refused before prom-client loads', async () => {
    const { edgeMetrics } = await import('../../src/edge/metrics.js');
    const deps = { cache: {}, state: {}, follower: {}, token: 'right-token' } as unknown as Parameters<typeof edgeMetrics>[0];
    const m = edgeMetrics(deps);
    for (const auth of [undefined, 'Bearer wrong', 'right-token']) {
      const x = exchange(auth);
      await m.serve(x.req, x.res);
      expect(x.status(), String(auth)).toBe(401);
    }
    expect(loaded).toBe(0);
  });
});
