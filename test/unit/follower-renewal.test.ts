/**
 * An idle edge renews its lease every second beat, not every beat, and the lease rules hold as
 * before: the edge serves only while acknowledgements are answered, and stops within a lease of
 * the last one it sent that was answered. A real EdgeHub behind a small HTTP front, one
 * FeedFollower, one clock moved by hand.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MetadataStore } from '../../src/core/ports.js';
import { openSqliteStore } from '../../src/adapters/metadata/sqlite.js';
import { EdgeHub } from '../../src/feed/hub.js';
import { BUSY_LEASES, FeedFollower, RENEW_AT, needsRenewal } from '../../src/edge/follower.js';
import { originClient } from '../../src/edge/origin-client.js';
import { EdgeState } from '../../src/edge/state.js';
import { ManualClock } from '../kit/clock.js';

const LEASE = 1000;
const BEAT = LEASE / 5;

describe('needsRenewal', () => {
  it('renews with no lease, with RENEW_AT of it or less left, or with an applied sequence unacknowledged', () => {
    expect(needsRenewal(0, 0, LEASE, 3, 3)).toBe(true);
    expect(needsRenewal(0, LEASE, LEASE, 3, 3), 'a whole lease left').toBe(false);
    expect(needsRenewal(0, LEASE * RENEW_AT + 1, LEASE, 3, 3)).toBe(false);
    expect(needsRenewal(0, LEASE * RENEW_AT, LEASE, 3, 3)).toBe(true);
    expect(needsRenewal(0, LEASE, LEASE, 3, 4), 'applied 4, acknowledged 3').toBe(true);
  });
});

describe('a follower on an idle feed', () => {
  const clock = new ManualClock();
  let dir = '';
  let store: MetadataStore;
  let hub: EdgeHub;
  let server: http.Server;
  let follower: FeedFollower;
  let acks = 0;
  /** While true, acknowledgements are taken but never answered (a partition one way). */
  let silent = false;
  const held: http.ServerResponse[] = [];

  /** Moves the clock `ms` in steps, leaving the sockets real time between them. */
  const pass = async (ms: number, step = 5, check: () => void = () => {}): Promise<void> => {
    for (let t = 0; t < ms; t += step) {
      await clock.advance(step);
      await new Promise((r) => setTimeout(r, 1));
      check();
    }
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'coffer-renewal-'));
    store = await openSqliteStore(join(dir, 'coffer.sqlite'));
    hub = new EdgeHub(store, { leaseMs: LEASE, originId: 'origin' }, clock);
    await hub.start();
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/_edge/snapshot') {
        res.end(JSON.stringify({ seq: hub.headSeq, folders: [], files: [] }));
      } else if (url.pathname === '/_edge/feed') {
        hub.attach(url.searchParams.get('edge')!, Number(url.searchParams.get('after')), res);
      } else if (url.pathname === '/_edge/ack') {
        acks++;
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          if (silent) {
            held.push(res);
            return;
          }
          const { edge, seq } = JSON.parse(body) as { edge: string; seq: number };
          void hub.ack(edge, seq).then((answer) => res.end(JSON.stringify(answer)));
        });
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const state = new EdgeState({ fileReady: () => {}, fileGone: () => {}, changed: () => {} });
    follower = new FeedFollower({ origin: originClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, undefined), token: 't', leaseMs: LEASE, state, clock });
    let started = false;
    const starting = follower.start().then(() => (started = true));
    for (let i = 0; i < 2000 && !started; i++) await pass(1, 1);
    await starting;
  });

  afterAll(async () => {
    follower?.stop();
    for (const res of held) res.destroy();
    await hub?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await store?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('holds its lease throughout, acknowledging every second beat', async () => {
    const before = acks;
    let lapses = 0;
    await pass(10 * LEASE, 5, () => {
      if (!follower.serving()) lapses++;
    });
    const sent = acks - before;
    expect(lapses, 'the lease never ran out').toBe(0);
    // One per beat would be 50; one per second beat 25.
    expect(sent, `${sent} acknowledgements in ten leases`).toBeLessThanOrEqual(10 * LEASE / (2 * BEAT) + 2);
    expect(sent).toBeGreaterThanOrEqual(10 * LEASE / (2 * BEAT) - 2);
  });

  it('renews at every beat for BUSY_LEASES leases after a change, then every second beat again', async () => {
    const seq = await store.transaction((tx) => tx.appendEvent({ type: 'folder.deleted', folder_id: 'x', data: { folder_id: 'x' } }, clock.now()));
    let published = false;
    const publishing = hub.publish(seq).then(() => (published = true));
    for (let i = 0; i < 2000 && !published; i++) await pass(1, 1);
    await publishing;
    const busyFrom = acks;
    await pass(BUSY_LEASES * LEASE - 2 * BEAT);
    const busy = acks - busyFrom;
    await pass(2 * BEAT);
    const idleFrom = acks;
    await pass(BUSY_LEASES * LEASE);
    const idle = acks - idleFrom;
    expect(busy, `${busy} acknowledgements while busy`).toBeGreaterThanOrEqual((BUSY_LEASES * LEASE) / BEAT - 4);
    expect(idle, `${idle} acknowledgements once idle again`).toBeLessThanOrEqual((BUSY_LEASES * LEASE) / (2 * BEAT) + 2);
    expect(follower.serving()).toBe(true);
  });

  it('stops serving within a lease of the last acknowledgement answered when the origin goes silent', async () => {
    silent = true;
    const stoppedAnswering = clock.monotonic();
    let stoppedServing = -1;
    await pass(2 * LEASE, 5, () => {
      if (stoppedServing < 0 && !follower.serving()) stoppedServing = clock.monotonic();
    });
    expect(stoppedServing, 'it stopped serving').toBeGreaterThan(0);
    expect(stoppedServing - stoppedAnswering, 'within a lease').toBeLessThanOrEqual(LEASE);
  });
});
