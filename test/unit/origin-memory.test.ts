import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { BUFFER_HEADROOM_BYTES, BodyCollector, COLLECT_EVERY_BYTES, type Gc } from '../../src/start/memory.js';
import { onReceivedBytes } from '../../src/http/received-bytes.js';
import { httpServerOptions } from '../../src/http/request-timeouts.js';

const DIST = resolve(dirname(fileURLToPath(import.meta.url)), '../../dist');

/** A collector whose collections are recorded and whose buffer figure the test sets. */
function recorded(): { collector: BodyCollector; calls: string[]; setBuffers(n: number): void } {
  const calls: string[] = [];
  let buffers = 0;
  const gc: Gc = (options) => { calls.push(options?.type === 'minor' ? 'minor' : 'full'); };
  return { collector: new BodyCollector(gc, () => buffers), calls, setBuffers: (n) => { buffers = n; } };
}

describe('collecting request bodies by bytes received', () => {
  it('scavenges once per 8 MiB, however the bytes arrive', () => {
    const { collector, calls } = recorded();
    for (let i = 0; i < 4 * COLLECT_EVERY_BYTES / 65536 - 1; i++) collector.add(65536);
    expect(calls).toEqual(['minor', 'minor', 'minor']);
    collector.add(65536);
    expect(calls).toEqual(['minor', 'minor', 'minor', 'minor']);
    collector.add(3 * COLLECT_EVERY_BYTES);
    expect(calls).toHaveLength(5);
  });

  it('collects fully once buffers pass the headroom, then measures what that left and allows the headroom above it', () => {
    const { collector, calls, setBuffers } = recorded();
    setBuffers(BUFFER_HEADROOM_BYTES + 1);
    collector.add(COLLECT_EVERY_BYTES);
    expect(calls).toEqual(['full']);
    // One step later: the full collection left 10 MB, so the limit is 10 MB + headroom.
    setBuffers(10e6);
    collector.add(COLLECT_EVERY_BYTES);
    setBuffers(10e6 + BUFFER_HEADROOM_BYTES);
    collector.add(COLLECT_EVERY_BYTES);
    expect(calls).toEqual(['full', 'minor', 'minor']);
    setBuffers(10e6 + BUFFER_HEADROOM_BYTES + 1);
    collector.add(COLLECT_EVERY_BYTES);
    expect(calls).toEqual(['full', 'minor', 'minor', 'full']);
  });

  it('raises the limit when the buffers in use grow, so a busy origin does not collect fully at every step', () => {
    const { collector, calls, setBuffers } = recorded();
    setBuffers(100e6);
    collector.add(COLLECT_EVERY_BYTES);
    // 100 MB still in use after the full collection: many parts in flight.
    for (let i = 0; i < 10; i++) collector.add(COLLECT_EVERY_BYTES);
    expect(calls.filter((c) => c === 'full')).toHaveLength(1);
  });

  it('counts every body byte an origin server receives', async () => {
    let counted = 0;
    onReceivedBytes((n) => { counted += n; });
    const app = Fastify(httpServerOptions({ headersTimeoutMs: 5000, idleTimeoutMs: 5000 }));
    app.addContentTypeParser('application/octet-stream', (_req, payload, done) => {
      payload.resume();
      payload.on('end', () => done(null, null));
    });
    app.post('/', async () => ({ ok: true }));
    try {
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      const body = Buffer.alloc(3_000_001, 1);
      const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });
      expect(res.status).toBe(200);
      expect(counted).toBe(body.length);
    } finally {
      onReceivedBytes(null);
      await app.close();
    }
  });
});

describe('V8 flags and worker threads', () => {
  // The young generation's largest size while 64 KiB strings are made and some kept, in a
  // process that keeps it small and then starts a worker thread in the given way.
  const script = (start: string) => `
    import v8 from 'node:v8';
    import { Worker } from 'node:worker_threads';
    import { setV8Flag, startWorker } from ${JSON.stringify(`${DIST}/core/v8-flags.js`)};
    setV8Flag('--semi-space-growth-factor=1');
    const worker = ${start}('setInterval(() => {}, 1000)', { eval: true });
    await new Promise((r) => worker.once('online', () => setImmediate(r)));
    const text = Buffer.alloc(65536, 65);
    const kept = [];
    let largest = 0;
    for (let i = 0; i < 20000; i++) {
      kept.push({ length: text.toString('latin1').length, at: { i } });
      if (kept.length > 200) kept.shift();
      if (i % 100 === 0) largest = Math.max(largest, v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').physical_space_size);
    }
    await worker.terminate();
    console.log(largest);
  `;
  const largestYoung = (start: string) => Number(execFileSync(process.execPath, ['--input-type=module', '-e', script(start)], { encoding: 'utf8' }).trim());

  it('keeps a flag set at run time after a worker thread starts, which Node 20 and 22 reset to its default', () => {
    const kept = largestYoung('startWorker');
    expect(kept).toBeLessThanOrEqual(4.5e6);
    // Node 20 and 22 put the growth factor back to 2 while the worker starts: without the flag
    // set again, the young generation grows. Node 24 leaves the flags as they are.
    const plain = largestYoung('new Worker');
    if (Number(process.versions.node.split('.')[0]) < 24) expect(plain).toBeGreaterThanOrEqual(2 * kept);
    else expect(plain).toBeLessThanOrEqual(4.5e6);
  });
});

describe('scavenges on the origin thread alone', () => {
  // Every scavenge's share done by helper threads, as V8's own trace reports it, in a process
  // that makes young objects which survive (work a helper would take), with or without the
  // origin's flags. Tracing starts once they are set: loading the module may scavenge before.
  const helperShares = (flags: boolean): number[] => {
    const script = `
      ${flags ? `const { keepYoungGenerationSmall } = await import(${JSON.stringify(`${DIST}/start/memory.js`)}); keepYoungGenerationSmall();` : ''}
      (await import('node:v8')).default.setFlagsFromString('--trace-gc-nvp');
      const kept = [];
      for (let i = 0; i < 2e6; i++) {
        kept.push({ i, s: 'x' + i });
        if (kept.length > 200000) kept.length = 0;
      }
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    return out.split('\n').filter((l) => l.includes('gc=s ')).map((l) => Number(/background\.scavenge\.parallel=([\d.]+)/.exec(l)?.[1] ?? NaN));
  };

  it('does not hand scavenges to helper threads', () => {
    const withFlags = helperShares(true);
    expect(withFlags.length).toBeGreaterThan(5);
    expect(withFlags.every((ms) => ms === 0)).toBe(true);
    // The same work in a process left at V8's defaults: helpers take part.
    expect(helperShares(false).some((ms) => ms > 0)).toBe(true);
  });
});

describe('marks on the origin thread alone', () => {
  // The kilobytes V8's incremental marking reports as marked by helper threads at each step,
  // in a process whose old generation fills up (so marking starts by itself), with or without
  // the origin's flags; and how many marking cycles started.
  const helperMarking = (flags: boolean): { cycles: number; kb: number[] } => {
    const script = `
      ${flags ? `const { keepYoungGenerationSmall } = await import(${JSON.stringify(`${DIST}/start/memory.js`)}); keepYoungGenerationSmall();` : ''}
      const ring = new Array(300000);
      for (let i = 0; i < 3e6; i++) ring[i % ring.length] = { i, b: [i], s: 'x' + i };
    `;
    const out = execFileSync(process.execPath, ['--trace-incremental-marking', '--input-type=module', '-e', script], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const lines = out.split('\n');
    return {
      cycles: lines.filter((l) => l.includes('[IncrementalMarking] Start marking')).length,
      // V8 11 (Node 20) prints "Marked NKB on background threads"; V8 12 and later print each
      // step's schedule, "(mutator: NKB, concurrent NKB)".
      kb: lines.map((l) => /Marked (\d+)KB on background threads|concurrent (\d+)KB\)/.exec(l)).filter((m) => m !== null).map((m) => Number(m[1] ?? m[2])),
    };
  };

  it('leaves no marking to helper threads between collections', () => {
    const withFlags = helperMarking(true);
    expect(withFlags.cycles).toBeGreaterThan(0);
    expect(withFlags.kb.filter((kb) => kb > 0)).toEqual([]);
    // The same work in a process left at V8's defaults: helpers mark while it runs.
    expect(helperMarking(false).kb.some((kb) => kb > 0)).toBe(true);
  });
});

describe('memory given back once started', () => {
  it('keeps no more heap than its live objects need after the collection that follows loading', () => {
    // 70 MB of objects made and dropped, as loading leaves behind; then the origin's step.
    // From Node 22 a plain full collection keeps the pages it frees for reuse (on Node 24,
    // some 50 MB here). The young generation is left out: its size is keepYoungGenerationSmall's.
    const script = `
      import v8 from 'node:v8';
      const { compactAfterStart } = await import(${JSON.stringify(`${DIST}/start/memory.js`)});
      let made = [];
      for (let i = 0; i < 400000; i++) made.push({ i, s: 'x' + i, a: [i, i] });
      made = null;
      compactAfterStart();
      const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').physical_space_size;
      console.log(process.memoryUsage().heapTotal - young);
    `;
    const heap = Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }).trim());
    expect(heap).toBeLessThan(20e6);
  });
});
