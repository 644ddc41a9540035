/**
 * The parent side of tiered fill waits for its feed on the clock port: a child asking at a
 * sequence the parent has not applied hears a 102 each second and a 503 after SEQ_WAIT_MS, both
 * driven by the clock, not the wall. A 200 answer says nosniff like every other answer.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../kit/clock.js';
import { SEQ_WAIT_MS, tierRoute } from '../../src/edge/tier-route.js';
import { EdgeState, type EdgeFile } from '../../src/edge/state.js';
import type { EdgeCache } from '../../src/edge/cache.js';

const TOKEN = 'edge-token-for-tier-route-tests';
const SHA = 'ab'.repeat(32);
const file: EdgeFile = {
  file_id: 'f1', name: 'f1.bin', visibility: 'Public', folder_id: null, size: 3, content_type: 'application/octet-stream',
  sha256: SHA, completed_at: 0, updated_at: 0,
};

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

async function parent(clock: ManualClock, state: EdgeState): Promise<string> {
  const cache = {
    ensure: async () => ({ path: undefined, size: 3, memory: Buffer.from('abc') }),
    fillAlive: () => false,
    fetching: () => false,
    counts: { servedToChildren: 0 },
  } as unknown as EdgeCache;
  const route = tierRoute({ tokens: [TOKEN], follower: { edgeId: 'parent', serving: () => true }, state, cache, onError: () => {}, clock });
  const server = http.createServer((req, res) => {
    const [path, query] = (req.url ?? '').split('?');
    void route(req, res, path!, query ?? '');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Answer {
  status: number;
  interim: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function ask(base: string, seq: number, onInterim: () => void = () => {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let interim = 0;
    const req = http.get(`${base}/_edge/blob/f1?sha256=${SHA}&seq=${seq}`, { headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, interim, headers: res.headers, body }));
    });
    req.on('information', () => {
      interim++;
      onInterim();
    });
    req.on('error', reject);
  });
}

/** Advances the clock in steps, giving the sockets real time between them, until `done` settles. */
async function drive(clock: ManualClock, done: Promise<unknown>, stepMs: number, steps: number): Promise<void> {
  let settled = false;
  void done.finally(() => (settled = true));
  for (let i = 0; i < steps && !settled; i++) {
    await new Promise((r) => setTimeout(r, 10));
    await clock.advance(stepMs);
  }
}

describe('tier route on the clock port', () => {
  it('a child ahead of the parent hears 102s and then 503, as the clock moves', async () => {
    const clock = new ManualClock();
    const state = new EdgeState({ fileReady: () => {}, fileGone: () => {}, changed: () => {} });
    const base = await parent(clock, state);
    const answer = ask(base, 7);
    await drive(clock, answer, 500, (SEQ_WAIT_MS / 500) + 30);
    // Under a second of real time went by: only the clock port can have ended the wait.
    const got = await Promise.race([answer, new Promise<null>((r) => setTimeout(() => r(null), 100))]);
    if (got === null) throw new Error('the wait did not end when the clock passed SEQ_WAIT_MS');
    expect(got.status).toBe(503);
    expect(got.interim, 'one 102 for each second of the wait').toBeGreaterThanOrEqual(1);
    expect(JSON.parse(got.body).error.code).toBe('edge_unavailable');
    expect(got.headers['x-content-type-options']).toBe('nosniff');
  });

  it('answers once the feed reaches the sequence, with nosniff, without the wall clock moving 2 s', async () => {
    const clock = new ManualClock();
    const state = new EdgeState({ fileReady: () => {}, fileGone: () => {}, changed: () => {} });
    const base = await parent(clock, state);
    const answer = ask(base, 1);
    await new Promise((r) => setTimeout(r, 50));
    state.apply({ seq: 1, type: 'file.ready', data: { ...file } });
    const got = await answer;
    expect(got.status).toBe(200);
    expect(got.body).toBe('abc');
    expect(got.headers['x-content-type-options']).toBe('nosniff');
    expect(got.headers['x-coffer-sha256']).toBe(SHA);
  });
});
