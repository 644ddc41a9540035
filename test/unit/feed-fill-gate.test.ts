/**
 * A new file's bytes wait for the acknowledgements of the changes waiting when they were
 * asked for (bounded), so the edges' fills never hold up the completion that announced them.
 * On a clock moved by hand.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { StoredFile } from '../../src/core/ports.js';
import { PublishWait, type LocalEdge } from '../../src/feed/publish-wait.js';
import { EdgeRecords } from '../../src/feed/records.js';
import { ManualClock } from '../kit/clock.js';

function setup() {
  const clock = new ManualClock();
  const edges = new Map<string, LocalEdge>();
  const wait = new PublishWait({
    meta: { edgeLeases: async () => [], markEdgesLapsed: async () => [] },
    clock, originId: 'o', skewMs: 0, edges, schedulePoll: () => {}, onError: (what, err) => { throw err; },
  });
  // One edge heard here, holding a long lease, that has applied nothing yet.
  const edge: LocalEdge = { id: 'a', lastHeard: clock.monotonic(), leaseEnd: clock.monotonic() + 60_000, acked: 0 };
  edges.set('a', edge);
  const ack = (seq: number) => {
    edge.acked = seq;
    wait.settle();
  };
  return { clock, wait, ack };
}

/** Whether `p` has settled, after letting pending callbacks run. */
async function done(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void p.then(() => (settled = true));
  for (let i = 0; i < 5; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
  return settled;
}

describe('PublishWait.settled', () => {
  it('answers at once when nothing waits', async () => {
    const { wait } = setup();
    expect(await done(wait.settled(1000))).toBe(true);
  });

  it('answers once the changes waiting when it was asked are acknowledged, not a change published after', async () => {
    const { wait, ack } = setup();
    const change5 = wait.wait(5);
    await new Promise((r) => setImmediate(r));
    const quiet = wait.settled(1000);
    const change6 = wait.wait(6);
    await new Promise((r) => setImmediate(r));
    expect(await done(quiet)).toBe(false);
    ack(5);
    expect(await done(change5)).toBe(true);
    expect(await done(quiet), 'change 6 came later: it does not hold the bytes back').toBe(true);
    expect(await done(change6)).toBe(false);
    ack(6);
    expect(await done(change6)).toBe(true);
  });

  it('gives up after its limit while an edge still holds the change', async () => {
    const { clock, wait } = setup();
    const change = wait.wait(3);
    await new Promise((r) => setImmediate(r));
    const quiet = wait.settled(300);
    await clock.advance(299);
    expect(await done(quiet)).toBe(false);
    await clock.advance(1);
    expect(await done(quiet)).toBe(true);
    expect(await done(change), 'the change still waits for its edge').toBe(false);
  });

  it('lets go when the origin closes', async () => {
    const { wait } = setup();
    void wait.wait(2);
    await new Promise((r) => setImmediate(r));
    const quiet = wait.settled(10_000);
    wait.close();
    expect(await done(quiet)).toBe(true);
  });
});

describe('EdgeRecords.blob with a fill gate', () => {
  const HOLD = 1000;
  function records(clock: ManualClock, file: () => StoredFile | undefined, settled: (limitMs: number) => Promise<void>) {
    const reads: string[] = [];
    const meta = { read: { getFile: async () => file() } } as unknown as ConstructorParameters<typeof EdgeRecords>[0];
    const blobs = { read: async (key: string) => { reads.push(key); return Readable.from([Buffer.from('x')]); } } as unknown as ConstructorParameters<typeof EdgeRecords>[1];
    return { reads, r: new EdgeRecords(meta, blobs, { settled, now: () => clock.now(), holdMs: HOLD }) };
  }
  const ready = (completedAt: number): StoredFile => ({ id: 'f', status: 'ready', blob_key: 'k', size: 1, sha256: 'h', completed_at: completedAt } as StoredFile);

  it('holds a file completed just now until the waiting changes are answered, for what is left of the hold', async () => {
    const clock = new ManualClock();
    let release = () => {};
    const limits: number[] = [];
    const f = ready(clock.now() - 200);
    const { r, reads } = records(clock, () => f, (limitMs) => {
      limits.push(limitMs);
      return new Promise<void>((res) => (release = res));
    });
    const blob = r.blob('f');
    expect(await done(blob)).toBe(false);
    expect(reads).toEqual([]);
    expect(limits).toEqual([HOLD - 200]);
    release();
    expect(await done(blob)).toBe(true);
    expect(reads).toEqual(['k']);
  });

  it('does not hold a file completed longer ago than the hold', async () => {
    const clock = new ManualClock();
    let asked = false;
    const { r, reads } = records(clock, () => ready(clock.now() - HOLD - 1), async () => {
      asked = true;
    });
    expect(await r.blob('f')).toBeDefined();
    expect(asked).toBe(false);
    expect(reads).toEqual(['k']);
  });

  it('answers nothing for a file deleted while held', async () => {
    const clock = new ManualClock();
    let current: StoredFile | undefined = ready(clock.now());
    let release = () => {};
    const { r, reads } = records(clock, () => current, () => new Promise<void>((res) => (release = res)));
    const blob = r.blob('f');
    await done(blob);
    current = undefined;
    release();
    expect(await blob).toBeUndefined();
    expect(reads).toEqual([]);
  });
});
