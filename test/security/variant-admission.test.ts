/**
 * Issue 23, finding 6: an unauthenticated storm of distinct variants must not stall other
 * clients' thumbnails. Admission to an edge's transforms: a share per client address with
 * the next slot going to the client with the fewest running, a budget of new variants per
 * file for unsigned requests, optional presets, and a bounded wait answered 503 with
 * Retry-After. Orders are observed (who is next, the order transforms reach the helper, the
 * answers), never durations: the helper is held with SIGSTOP, the limiter and the budget run
 * on fake clocks.
 */
import http from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { AdmissionError, Limiter } from '../../src/edge/variants/limiter.js';
import { SourceBudget } from '../../src/edge/variants/source-budget.js';
import { addressKey } from '../../src/core/listener-bounds.js';
import { loadConfig, ConfigError } from '../../src/config/config.js';
import { expectError } from '../helpers/api.js';
import { solidImage } from '../helpers/images.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';

describe('the transform line', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const options = { concurrency: 2, maxQueued: 1000, perClient: 4, maxWaitMs: 10_000 };

  test('one client holds at most its share; another client\'s transform is next in line, ahead of the storm\'s', async () => {
    const limiter = new Limiter(options);
    const started: string[] = [];
    const releases: Array<() => void> = [];
    const task = (name: string) => () => new Promise<void>((resolve) => {
      started.push(name);
      releases.push(resolve);
    });
    const storm = Array.from({ length: 40 }, (_, i) => limiter.run('storm', task(`s${i}`)).then(() => 'done', (e: unknown) => e));
    const refused = (await Promise.all(storm.slice(4))) as AdmissionError[];
    expect(refused.every((e) => e instanceof AdmissionError && e.reason === 'client' && e.retryAfter >= 1)).toBe(true);
    expect([limiter.active, limiter.queued, limiter.held('storm')]).toEqual([2, 2, 4]);
    const thumb = limiter.run('thumbnail', task('thumb'));
    expect(limiter.nextClient).toBe('thumbnail');
    releases.shift()!();
    await vi.waitFor(() => expect(started).toEqual(['s0', 's1', 'thumb']));
    while (started.length < 5 || releases.length > 0) {
      releases.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    await thumb;
    expect(await Promise.all(storm.slice(0, 4))).toEqual(['done', 'done', 'done', 'done']);
    expect(started).toEqual(['s0', 's1', 'thumb', 's2', 's3']);
    expect([limiter.active, limiter.queued, limiter.held('storm')]).toEqual([0, 0, 0]);
  });

  test('among clients with as many running, the one served least recently goes first', async () => {
    const limiter = new Limiter({ ...options, concurrency: 1 });
    const started: string[] = [];
    const releases: Array<() => void> = [];
    const task = (name: string) => () => new Promise<void>((resolve) => {
      started.push(name);
      releases.push(resolve);
    });
    const all = [['a', 'a1'], ['a', 'a2'], ['b', 'b1'], ['a', 'a3'], ['c', 'c1']].map(([c, n]) => limiter.run(c!, task(n!)));
    while (started.length < 5) {
      releases.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    releases.shift()!();
    await Promise.all(all);
    // a1 runs; then b and c (none running) before a's second and third.
    expect(started).toEqual(['a1', 'b1', 'c1', 'a2', 'a3']);
  });

  test('a transform that waits past the bound is refused with a retry time, and its place is given up', async () => {
    vi.useFakeTimers();
    const limiter = new Limiter({ ...options, maxWaitMs: 500 });
    const releases: Array<() => void> = [];
    const hold = () => new Promise<void>((resolve) => releases.push(resolve));
    const running = [limiter.run('a', hold), limiter.run('b', hold)];
    const waiting = limiter.run('c', hold).catch((e: unknown) => e);
    expect(limiter.queued).toBe(1);
    await vi.advanceTimersByTimeAsync(499);
    expect(limiter.queued).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    const refused = await waiting;
    expect(refused).toBeInstanceOf(AdmissionError);
    expect((refused as AdmissionError).reason).toBe('waited');
    expect((refused as AdmissionError).retryAfter).toBeGreaterThanOrEqual(1);
    expect([limiter.queued, limiter.held('c')]).toEqual([0, 0]);
    // The slots were not lost: the next transform runs once one frees.
    const next = limiter.run('d', async () => 'made');
    releases.shift()!();
    expect(await next).toBe('made');
    releases.shift()!();
    await Promise.all(running);
    expect([limiter.active, limiter.queued]).toEqual([0, 0]);
  });

  test('a full line refuses every client', async () => {
    const limiter = new Limiter({ ...options, concurrency: 1, maxQueued: 1 });
    const hold = () => new Promise<void>(() => {});
    void limiter.run('a', hold);
    void limiter.run('b', hold).catch(() => {});
    expect(limiter.refusal('c')).toBe('full');
    await expect(limiter.run('c', hold)).rejects.toMatchObject({ reason: 'full' });
  });
});

describe('the per-file budget and client addresses', () => {
  test('new variants of one file per minute: refused past the budget with the seconds until the next', () => {
    let now = 1_000_000;
    const budget = new SourceBudget(3, () => now);
    expect([budget.take('f'), budget.take('f'), budget.take('f')]).toEqual([0, 0, 0]);
    expect(budget.take('f')).toBe(20);
    expect(budget.take('g')).toBe(0);
    now += 19_000;
    expect(budget.take('f')).toBe(1);
    now += 1_000;
    expect(budget.take('f')).toBe(0);
    expect(new SourceBudget(0, () => now).take('f')).toBe(60);
  });

  test('clients are IPv4 addresses and IPv6 /64 networks', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2:ffff:ffff:ffff:fffe')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('')).toBe('');
  });

  test('settings: defaults, and lists checked', () => {
    const c = loadConfig({});
    expect([c.variantPerClient, c.variantQueueMs, c.variantPerSource, c.variantSizes, c.variantQualities]).toEqual([6, 10_000, 24, undefined, undefined]);
    const set = loadConfig({ COFFER_VARIANT_SIZES: '64, 320,640', COFFER_VARIANT_QUALITIES: '75' });
    expect([set.variantSizes, set.variantQualities]).toEqual([[64, 320, 640], [75]]);
    for (const env of [{ COFFER_VARIANT_SIZES: '64,,128' }, { COFFER_VARIANT_SIZES: '5000' }, { COFFER_VARIANT_QUALITIES: '0' }, { COFFER_VARIANT_PER_CLIENT: '0' }]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
    }
  });
});

describe('at an edge', () => {
  let o: TestOrigin;
  let fair: TestEdge;
  let strict: TestEdge;

  beforeAll(async () => {
    o = await startTestOrigin();
    fair = await startTestEdge(o, () => ({ COFFER_VARIANT_PER_CLIENT: '4', COFFER_VARIANT_PER_SOURCE: '1000', COFFER_VARIANT_QUEUE_MS: '120000' }));
    strict = await startTestEdge(o, () => ({
      COFFER_VARIANT_PER_SOURCE: '3', COFFER_VARIANT_QUEUE_MS: '300', COFFER_VARIANT_SIZES: '8,16,24,32,48', COFFER_VARIANT_QUALITIES: '50,80',
    }));
  });

  afterAll(async () => {
    await fair?.close();
    await strict?.close();
    await o?.close();
  });

  const upload = async () => (await uploadBytes(o, await solidImage('png', 64, 48), { name: 'p.png', file_type: 'image', content_type: 'image/png', visibility: 'Public' })).file_id as string;

  /** A GET of the edge from `from`, one of the loopback addresses: clients the edge tells apart. */
  function get(edge: TestEdge, path: string, from = '127.0.0.1'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer; json: any }> {
    const url = new URL(path, edge.edge.url);
    return new Promise((resolve, reject) => {
      http.get({ host: url.hostname, port: url.port, path: url.pathname + url.search, localAddress: from, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          let json: unknown;
          try { json = JSON.parse(body.toString()); } catch { json = undefined; }
          resolve({ status: res.statusCode!, headers: res.headers, body, json });
        });
      }).on('error', reject);
    });
  }

  /** Holds the edge's helper stopped while `during` runs, after it has started with a variant. */
  async function helperStopped<T>(edge: TestEdge, during: () => Promise<T>): Promise<T> {
    const warm = await upload();
    expect((await get(edge, `/files/${warm}?w=8`, '127.0.0.9')).status).toBe(200);
    const pid = edge.edge.variants.helper.pid!;
    process.kill(pid, 'SIGSTOP');
    try {
      return await during();
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  }

  test('a storm from one address gets its share and 503 for the rest; another address\'s thumbnail is next in line', async () => {
    const [big, small] = [await upload(), await upload()];
    for (const id of [big, small]) expect((await get(fair, `/files/${id}`)).status).toBe(200);
    const maker = fair.edge.variants;
    // The order in which transforms reach the helper.
    const handed: string[] = [];
    const transform = maker.helper.transform.bind(maker.helper);
    maker.helper.transform = (input, params, out, maxPixels) => {
      handed.push(params.w === 300 ? 'thumb' : `storm w=${params.w}`);
      return transform(input, params, out, maxPixels);
    };
    type Got = Awaited<ReturnType<typeof get>>;
    const answered: Got[] = [];
    let pending: Array<Promise<Got>> = [];
    let thumb!: Promise<Got>;
    await helperStopped(fair, async () => {
      handed.length = 0;
      pending = Array.from({ length: 40 }, (_, i) => get(fair, `/files/${big}?w=${200 + i}&format=avif&q=90`, '127.0.0.2').then((a) => {
        answered.push(a);
        return a;
      }));
      // Past its share, the storm is answered at once while its admitted transforms are held.
      await vi.waitFor(() => expect(answered).toHaveLength(36), { timeout: 20_000 });
      for (const a of answered) {
        expectError(a, 503, 'variant_busy');
        expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      expect([maker.active, maker.queued]).toEqual([2, 2]);
      thumb = get(fair, `/files/${small}?w=300&format=webp`, '127.0.0.1');
      await vi.waitFor(() => expect(maker.queued).toBe(3));
      expect(maker.nextClient).toBe('127.0.0.1');
    });
    const storm = await Promise.all(pending);
    expect((await thumb).status).toBe(200);
    expect(storm.filter((a) => a.status === 200)).toHaveLength(4);
    // The two running when it arrived, then the thumbnail, then the storm's waiting ones.
    expect(handed.slice(0, 3).map((h) => h.startsWith('storm'))).toEqual([true, true, false]);
    expect(handed).toHaveLength(5);
    expect([maker.active, maker.queued]).toEqual([0, 0]);
  });

  test('unsigned requests make a bounded number of new variants of one file; kept ones and signed links are still served', async () => {
    const id = await upload();
    expect((await get(strict, `/files/${id}`)).status).toBe(200);
    for (const w of [8, 16, 24]) expect((await get(strict, `/files/${id}?w=${w}`)).headers['x-cache']).toBe('MISS');
    const limited = await get(strict, `/files/${id}?w=32`);
    expectError(limited, 429, 'variant_limit');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.json.error.details.retry_after).toBe(Number(limited.headers['retry-after']));
    expect((await get(strict, `/files/${id}?w=16`)).headers['x-cache']).toBe('HIT');
    // Another file has a budget of its own; a signed link names its variant and is not counted.
    const other = await upload();
    expect((await get(strict, `/files/${other}?w=32`)).status).toBe(200);
    const link = await o.post('/collections/create-link', { file_id: id, file_type: 'image', variant: { w: 32 } });
    const signed = new URL(link.body.presigned_url);
    expect((await get(strict, signed.pathname + signed.search)).status).toBe(200);
  });

  test('with presets, unsigned requests ask only for listed sizes and qualities; signed links for any', async () => {
    const id = await upload();
    expect((await get(strict, `/files/${id}`)).status).toBe(200);
    expectError(await get(strict, `/files/${id}?w=33`), 400, 'variant_not_allowed', { field: 'w', allowed: [8, 16, 24, 32, 48] });
    expectError(await get(strict, `/files/${id}?w=16&h=20`), 400, 'variant_not_allowed', { field: 'h' });
    expectError(await get(strict, `/files/${id}?w=16&q=90`), 400, 'variant_not_allowed', { field: 'q', allowed: [50, 80] });
    const link = await o.post('/collections/create-link', { file_id: id, file_type: 'image', variant: { w: 33, q: 90 } });
    const signed = new URL(link.body.presigned_url);
    expect((await get(strict, signed.pathname + signed.search)).status).toBe(200);
    // Kept or not, the unsigned answer is the same.
    expectError(await get(strict, `/files/${id}?w=33&q=90`), 400, 'variant_not_allowed');
  });

  test('a transform that waits past COFFER_VARIANT_QUEUE_MS is answered 503 variant_busy with Retry-After', async () => {
    const ids = [await upload(), await upload(), await upload()];
    for (const id of ids) expect((await get(strict, `/files/${id}`)).status).toBe(200);
    const maker = strict.edge.variants;
    let running: Array<Promise<Awaited<ReturnType<typeof get>>>> = [];
    const late = await helperStopped(strict, async () => {
      running = ids.slice(0, 2).map((id, i) => get(strict, `/files/${id}?w=16`, `127.0.0.${3 + i}`));
      await vi.waitFor(() => expect(maker.active).toBe(2));
      return get(strict, `/files/${ids[2]}?w=16`, '127.0.0.5');
    });
    expectError(late, 503, 'variant_busy');
    expect(Number(late.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    for (const a of await Promise.all(running)) expect(a.status).toBe(200);
    expect([maker.active, maker.queued]).toEqual([0, 0]);
  });
});
