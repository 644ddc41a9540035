import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { spawnCoffer } from '../helpers/processes.js';

/**
 * An idle edge measured 53.7 MB on Node 20 (61.3 MB before it loaded and started under
 * start/memory.ts's settings); some 40 MB of it are the pages of the node binary, shared by
 * every Node process on the machine (docs/operations.md, "Memory"). The budget leaves room
 * for the run's noise, not for the optimizing compiler running while the edge loads.
 */
const IDLE_EDGE_RSS_BYTES = 56e6;

/** A process's resident memory in bytes, as the kernel counts it (Linux). */
const rssOf = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

describe("an idle edge's memory", () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin();
  });
  afterAll(async () => {
    await o?.close();
  });

  it('stays within 56 MB one second after the built edge listens, following an origin with its cache empty', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'coffer-edge-memory-'));
    const edge = spawnCoffer({
      kind: 'edge', name: 'edge', args: ['edge', '--origin', o.url],
      env: { COFFER_EDGE_PORT: '0', COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: dataDir, COFFER_SIGNING_SECRET: o.secret, COFFER_EDGE_TOKEN: o.origin.credentials.edgeTokens[0] },
    });
    try {
      const url = await edge.ready;
      // Settled: what starting allocated and dropped is no longer counted (as bench/upload.ts measures an origin).
      await sleep(1000);
      const rss = rssOf(edge.child.pid!);
      // It follows the origin: the memory is that of a working edge, not of one still waiting.
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect(rss).toBeLessThanOrEqual(IDLE_EDGE_RSS_BYTES);
    } finally {
      await edge.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
