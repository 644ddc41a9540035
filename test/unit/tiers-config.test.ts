/**
 * Issue 26, tiers: COFFER_EDGE_PARENTS / --parent and COFFER_EDGE_NAME / --name, the edges'
 * token check of the edge-to-edge route, its Via list, and the status every usage report
 * carries (usage.ts with status.ts), caught by a fake origin.
 */
import http from 'node:http';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConfigError, MAX_EDGE_NAME, MAX_EDGE_PARENTS, MIN_EDGE_LEASE_MS, edgeName, edgeParents, loadConfig } from '../../src/config/config.js';
import { edgeTokenMatches, viaOf } from '../../src/edge/tier-route.js';
import { UsageMeter } from '../../src/edge/usage.js';
import { StatusReport } from '../../src/edge/status.js';
import { FillCounts } from '../../src/edge/sources.js';
import { originClient } from '../../src/edge/origin-client.js';
import type { Answered } from '../../src/edge/metrics.js';

describe('COFFER_EDGE_LEASE_MS', () => {
  it('is 5000 by default and at least 100: a shorter lease than five beats of 20 ms is refused, saying so', () => {
    expect(loadConfig({}).edgeLeaseMs).toBe(5000);
    expect(loadConfig({ COFFER_EDGE_LEASE_MS: String(MIN_EDGE_LEASE_MS) }).edgeLeaseMs).toBe(100);
    for (const bad of ['1', '20', '99', '0']) {
      expect(() => loadConfig({ COFFER_EDGE_LEASE_MS: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ COFFER_EDGE_LEASE_MS: bad })).toThrow('COFFER_EDGE_LEASE_MS must be a whole number of at least 100.');
    }
  });
});

describe('COFFER_EDGE_PARENTS', () => {
  it('is empty when unset, and keeps the order given, without trailing slashes', () => {
    expect(loadConfig({}).edgeParents).toEqual([]);
    expect(edgeParents(' http://10.0.1.5:8081/ , https://parent.internal ')).toEqual(['http://10.0.1.5:8081', 'https://parent.internal']);
  });

  it('the flag overrides the environment', () => {
    const config = loadConfig({ COFFER_EDGE_PARENTS: 'http://a:1' }, { COFFER_EDGE_PARENTS: 'http://b:2,http://c:3' });
    expect(config.edgeParents).toEqual(['http://b:2', 'http://c:3']);
  });

  it.each([
    'http://a:1/path', 'ftp://a', 'a:8081', 'http://user@a:1', 'http://a:1?x=1', 'http://a:1,', 'http://a:1,http://a:1',
    Array.from({ length: MAX_EDGE_PARENTS + 1 }, (_, i) => `http://p${i}:8081`).join(','),
  ])('refuses %s', (raw) => {
    expect(() => loadConfig({ COFFER_EDGE_PARENTS: raw })).toThrow(ConfigError);
  });

  it('allows up to 8 parents', () => {
    expect(edgeParents(Array.from({ length: MAX_EDGE_PARENTS }, (_, i) => `http://p${i}:8081`).join(','))).toHaveLength(8);
  });
});

describe('COFFER_EDGE_NAME', () => {
  it('defaults to the host name, and takes the flag over the environment', () => {
    expect(loadConfig({}).edgeName).toBe(hostname());
    expect(loadConfig({ COFFER_EDGE_NAME: 'eu-west' }).edgeName).toBe('eu-west');
    expect(loadConfig({ COFFER_EDGE_NAME: 'eu-west' }, { COFFER_EDGE_NAME: 'us-east' }).edgeName).toBe('us-east');
  });

  it('is refused when the origin would refuse it in reports, and a long host name is cut to fit', () => {
    expect(() => loadConfig({ COFFER_EDGE_NAME: 'x'.repeat(MAX_EDGE_NAME + 1) })).toThrow(ConfigError);
    expect(() => loadConfig({ COFFER_EDGE_NAME: 'eu\u001b[31mwest' })).toThrow(/printable/);
    expect(loadConfig({ COFFER_EDGE_NAME: 'x'.repeat(MAX_EDGE_NAME) }).edgeName).toHaveLength(MAX_EDGE_NAME);
    expect(edgeName(undefined, 'h'.repeat(300))).toBe('h'.repeat(MAX_EDGE_NAME));
    expect(edgeName('  ', '')).toBe('edge');
    // C1 controls and text-direction overrides, which the origin refuses in reports too.
    expect(() => loadConfig({ COFFER_EDGE_NAME: 'eu\u009b31m' })).toThrow(/printable/);
    expect(() => loadConfig({ COFFER_EDGE_NAME: 'eu\u202ewest' })).toThrow(/printable/);
  });

  it('never repeats credentials written into a parent address', () => {
    expect(() => edgeParents('http://user:s3cret@10.0.1.5:8081')).toThrow(ConfigError);
    try {
      edgeParents('http://user:s3cret@10.0.1.5:8081');
    } catch (err) {
      expect((err as Error).message).not.toContain('s3cret');
    }
  });
});

describe("the edges' token on the edge-to-edge route", () => {
  it('accepts any of the tokens (rotation) as a Bearer token, and nothing else', () => {
    const tokens = ['new-token', 'old-token'];
    expect(edgeTokenMatches('Bearer new-token', tokens)).toBe(true);
    expect(edgeTokenMatches('Bearer old-token', tokens)).toBe(true);
    for (const h of [undefined, '', 'Bearer ', 'Bearer new-tokenx', 'Bearer new-toke', 'new-token', 'Basic new-token', 'bearer x']) {
      expect(edgeTokenMatches(h, tokens)).toBe(false);
    }
    expect(edgeTokenMatches('Bearer anything', [])).toBe(false);
  });

  it('compares digests of equal length in constant time (crypto.timingSafeEqual), every token each time', async () => {
    const source = (await import('node:fs')).readFileSync(new URL('../../src/edge/tier-route.ts', import.meta.url), 'utf8');
    expect(source).toMatch(/timingSafeEqual\(given, digest\(t\)\) \|\| ok/);
  });

  it('reads the Via list, the asker last', () => {
    expect(viaOf(undefined)).toEqual([]);
    expect(viaOf(' a , b,,c ')).toEqual(['a', 'b', 'c']);
    expect(viaOf(['a', 'b'])).toEqual(['a', 'b']);
  });
});

describe('the status in usage reports', () => {
  it('is sent with every report, even with no file served, with the fields the fleet page reads', async () => {
    const bodies: any[] = [];
    const server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        bodies.push({ path: req.url, auth: req.headers.authorization, body: JSON.parse(text) });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const counts = Object.assign(new FillCounts(), { parent: 3, origin: 1, failovers: 2, servedToChildren: 5 });
    const status = new StatusReport({
      id: 'edge-1', name: 'eu-west', parents: ['http://p:8081'], startedAt: 1_700_000_000_000, seq: () => 42,
      cache: { usedBytes: 1000, capacity: 5000, counts },
    });
    const answer = (a: Partial<Answered>): Answered => ({
      time: 0, method: 'GET', fileId: 'f1', status: 200, bytes: 10, complete: true, durationMs: 1, cache: 'HIT', client: '', range: null, ...a,
    });
    status.answered(answer({}));
    status.answered(answer({ cache: 'MISS', bytes: 20 }));
    status.answered(answer({ cache: null, status: 404, bytes: 5, fileId: null }));
    const meter = new UsageMeter(originClient(url, undefined), () => ({ authorization: 'Bearer t' }), 60_000, () => {}, () => status.now());
    await meter.flush();
    await meter.close();
    server.close();
    expect(bodies).toHaveLength(2);
    expect(bodies[0].path).toBe('/_edge/usage');
    expect(bodies[0].body).toEqual({
      files: {},
      edge: {
        id: 'edge-1', name: 'eu-west', parents: ['http://p:8081'], started_at: 1_700_000_000_000, seq: 42,
        cache: { used_bytes: 1000, capacity_bytes: 5000 },
        requests: 3, hits: 1, misses: 1, bytes_sent: 35,
        fills: { parent: 3, origin: 1, failovers: 2, served_to_children: 5 },
      },
    });
  });
});

describe("a parent's wait for its feed (EdgeState.whenSeq)", () => {
  it('resolves once the applied sequence reaches the one asked, and forgets a cancelled wait', async () => {
    const { EdgeState } = await import('../../src/edge/state.js');
    const state = new EdgeState({ fileReady: () => {}, fileGone: () => {} });
    state.load({ seq: 5, files: [], folders: [] });
    let done = false;
    const now = state.whenSeq(5);
    await now.reached;
    const later = state.whenSeq(7);
    void later.reached.then(() => (done = true));
    const cancelled = state.whenSeq(9);
    cancelled.cancel();
    state.apply({ seq: 6, type: 'folder.deleted', data: { folder_id: 'x' } });
    await Promise.resolve();
    expect(done).toBe(false);
    state.apply({ seq: 7, type: 'folder.deleted', data: { folder_id: 'y' } });
    await later.reached;
    expect(done).toBe(true);
    state.apply({ seq: 9, type: 'folder.deleted', data: { folder_id: 'z' } });
    expect((state as unknown as { seqWaiters: Set<unknown> }).seqWaiters.size).toBe(0);
  });
});
