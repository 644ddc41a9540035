/**
 * Bounded waits on one origin, on a clock moved by hand: an edge that keeps acknowledging an
 * old sequence holds a change up for a lease from when the origin learned of it, not longer;
 * then it is lapsed and gets a lease again only once it acknowledges the head.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TimerHandle } from '../../src/core/clock.js';
import type { MetadataStore } from '../../src/core/ports.js';
import { openSqliteStore } from '../../src/adapters/metadata/sqlite.js';
import { EdgeHub } from '../../src/feed/hub.js';
import { ManualClock } from '../kit/clock.js';

const LEASE = 1000;

describe('an edge that keeps acknowledging an old sequence', () => {
  const clock = new ManualClock();
  let dir = '';
  let store: MetadataStore;
  let hub: EdgeHub;

  const append = () => store.transaction((tx) => tx.appendEvent({ type: 'folder.deleted', folder_id: 'x', data: { folder_id: 'x' } }, clock.now()));
  /** Moves the clock a millisecond at a time until `p` settles; resolves with its value. */
  const drive = async <T>(p: Promise<T>, limitMs = 10 * LEASE): Promise<T> => {
    let done = false;
    const watched = p.finally(() => (done = true));
    for (let t = 0; t < limitMs && !done; t++) await clock.advance(1);
    if (!done) throw new Error(`still waiting after ${limitMs} ms`);
    return watched;
  };
  /** Publishes a change; resolves with how many ms of the clock it waited for the edges. */
  const change = async (): Promise<number> => {
    const seq = await append();
    const t = clock.monotonic();
    await drive(hub.publish(seq));
    return clock.monotonic() - t;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'coffer-bounded-'));
    store = await openSqliteStore(join(dir, 'coffer.sqlite'));
    hub = new EdgeHub(store, { leaseMs: LEASE, originId: 'origin' }, clock);
    await hub.start();
  });

  afterAll(async () => {
    await hub?.close();
    await store?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('holds each change up for a lease at most, is marked lapsed, and gets a lease again only at the head', async () => {
    const joined = await append();
    const first = await drive(hub.ack('stuck', joined));
    expect(first, 'at the head when it joins').toEqual({ lease: true, lease_ms: LEASE, head: joined });
    // From now on it acknowledges what it had when it joined, every 100 ms.
    const acking: TimerHandle = clock.setInterval(() => void hub.ack('stuck', joined), 100);
    await clock.advance(250);
    const waits: number[] = [];
    try {
      for (let n = 0; n < 4; n++) waits.push(await change());
    } finally {
      clock.clearInterval(acking);
    }
    // The first change found it holding a lease renewed 50 ms before: held until a lease after the change.
    expect(waits[0]!, `waits ${waits.join(', ')} ms`).toBeGreaterThanOrEqual(LEASE);
    expect(waits[0]!, `waits ${waits.join(', ')} ms`).toBeLessThanOrEqual(LEASE + 5);
    // Lapsed by then: it holds nothing up any more.
    for (const ms of waits.slice(1)) expect(ms, `waits ${waits.join(', ')} ms`).toBeLessThanOrEqual(5);
    const row = (await store.edgeLeases()).find((r) => r.edge_id === 'stuck');
    expect(row?.state).toBe('lapsed');

    const behind = await drive(hub.ack('stuck', joined));
    expect(behind, 'behind the head: no lease').toMatchObject({ lease: false, lease_ms: 0 });
    expect(behind.head).toBeGreaterThan(joined);
    const caught = await drive(hub.ack('stuck', behind.head));
    expect(caught, 'at the head: a lease again').toEqual({ lease: true, lease_ms: LEASE, head: behind.head });
  });

  it('answers a change at once when every edge has it', async () => {
    const seq = await append();
    const t = clock.monotonic();
    const waiting = hub.publish(seq);
    await drive(hub.ack('stuck', seq));
    await drive(waiting);
    expect(clock.monotonic() - t, 'no longer than the acknowledgement took').toBeLessThanOrEqual(10);
  });
});
