import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { spawnCoffer } from '../helpers/processes.js';

/**
 * An idle edge measured 51.0 MB on Node 20 (kB × 1024; 59–61 MB before it loaded less and
 * without the optimizing compiler, bench/README.md "Idle edge memory"); some 39 MB of it are
 * pages of the node binary and its libraries, shared by every Node process on the machine
 * (docs/operations.md, "Memory"). Its own memory (RssAnon) measured 11.7 MB, 15–18 MB before.
 */
const IDLE_EDGE_RSS_BYTES = 55e6;
const IDLE_EDGE_OWN_BYTES = 14.5e6;

/** A process's resident memory in bytes, as the kernel counts it (Linux). */
const statusBytes = (pid: number, field: 'VmRSS' | 'RssAnon'): number =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

describe("an idle edge's memory", () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin();
  });
  afterAll(async () => {
    await o?.close();
  });

  it('stays within 55 MB, 14.5 MB of it its own, one second after the built edge listens, following an origin with its cache empty', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'coffer-edge-memory-'));
    const edge = spawnCoffer({
      kind: 'edge', name: 'edge', args: ['edge', '--origin', o.url],
      env: { COFFER_EDGE_PORT: '0', COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: dataDir, COFFER_SIGNING_SECRET: o.secret, COFFER_EDGE_TOKEN: o.origin.credentials.edgeTokens[0] },
    });
    try {
      const url = await edge.ready;
      // Settled: what starting allocated and dropped is no longer counted (as bench/upload.ts measures an origin).
      await sleep(1000);
      const rss = statusBytes(edge.child.pid!, 'VmRSS');
      const own = statusBytes(edge.child.pid!, 'RssAnon');
      // It follows the origin: the memory is that of a working edge, not of one still waiting.
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect(rss).toBeLessThanOrEqual(IDLE_EDGE_RSS_BYTES);
      expect(own).toBeLessThanOrEqual(IDLE_EDGE_OWN_BYTES);
    } finally {
      await edge.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
