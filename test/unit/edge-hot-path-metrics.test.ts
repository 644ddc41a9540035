/**
 * The edge counts its HTTP series in plain numbers and hands prom-client the totals when
 * scraped (src/metrics/tallied.ts): the text must be the one prom-client prints when every
 * request is counted as it ends, whatever the durations, statuses and scrapes in between.
 */
import { describe, expect, it } from 'vitest';
import { Counter, Histogram, Registry } from 'prom-client';
import { DURATION_BUCKETS } from '../../src/metrics/registry.js';
import { RouteTally, fillHttpSeries } from '../../src/metrics/tallied.js';

function series() {
  const registry = new Registry();
  registry.setDefaultLabels({ process: 'edge' });
  return {
    registry,
    requests: new Counter({ name: 'req_total', help: 'r', labelNames: ['route', 'method', 'status'] as const, registers: [registry] }),
    duration: new Histogram({ name: 'dur_seconds', help: 'd', labelNames: ['route', 'method'] as const, buckets: DURATION_BUCKETS, registers: [registry] }),
    bytesOut: new Counter({ name: 'out_total', help: 'o', labelNames: ['route'] as const, registers: [registry] }),
  };
}

/** Lines sorted: prom-client prints a metric's series in the order they first appeared. */
const sorted = async (r: Registry) => (await r.metrics()).split('\n').sort().join('\n');

describe('HTTP series tallied in plain numbers', () => {
  it('print as prom-client does when fed every request, across scrapes', async () => {
    const direct = series();
    const tallied = series();
    const routes = new Map<string, RouteTally>();
    const routeNames = ['/files/:id', '/healthz', '/metrics', 'other'];
    // Bounds themselves, just past them, past the last one, zero and tiny values.
    const durations = [0, 1e-7, ...DURATION_BUCKETS, ...DURATION_BUCKETS.map((b) => b * 1.0001), 31, 1000];
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let scrape = 0; scrape < 3; scrape++) {
      for (let i = 0; i < 400; i++) {
        const route = routeNames[Math.floor(random() * routeNames.length)]!;
        const method = random() < 0.8 ? 'GET' : 'HEAD';
        const status = [200, 206, 304, 404, 416, 503][Math.floor(random() * 6)]!;
        const seconds = i < durations.length ? durations[i]! : random() * random() * 3;
        const bytes = status === 200 && method === 'GET' ? Math.floor(random() * 5000) : 0;
        direct.requests.labels(route, method, String(status)).inc();
        direct.duration.labels(route, method).observe(seconds);
        if (bytes > 0) direct.bytesOut.labels(route).inc(bytes);
        let t = routes.get(route);
        if (!t) routes.set(route, (t = new RouteTally(route, DURATION_BUCKETS)));
        (method === 'HEAD' ? t.head : t.get).add(status, seconds);
        t.bytesOut += bytes;
      }
      fillHttpSeries(routes.values(), tallied.requests, tallied.duration, tallied.bytesOut);
      expect(await sorted(tallied.registry)).toBe(await sorted(direct.registry));
    }
  });

  it('print no series before the first request, as prom-client does', async () => {
    const direct = series();
    const tallied = series();
    fillHttpSeries([], tallied.requests, tallied.duration, tallied.bytesOut);
    expect(await tallied.registry.metrics()).toBe(await direct.registry.metrics());
  });
});
