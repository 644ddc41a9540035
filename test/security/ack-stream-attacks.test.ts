/**
 * Attacks on streamed acknowledgements from the edge's side (src/edge/ack-sender.ts,
 * src/edge/follower.ts, src/feed/ack-stream.ts): forged and stale `event: lease` lines, renewals
 * piling up behind a slow write, a stream that fails or is held again and again, and a feed that
 * reconnects, through the front of test/helpers/ack-front.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AckTurns, parseAckLine } from '../../src/feed/ack-stream.js';
import { STREAM_RETRY_LEASES } from '../../src/edge/ack-sender.js';
import { followerRig, type FollowerRig } from '../helpers/follower-rig.js';
import { LEASE, front, type Front } from '../helpers/ack-front.js';

const lease = (n: number, extra: Record<string, unknown> = {}) =>
  `event: lease\ndata: ${JSON.stringify({ n, lease: true, lease_ms: 1e12, head: 0, ...extra })}\n\n`;

let f: Front | undefined;
let rig: FollowerRig | undefined;
afterEach(async () => {
  await f?.close();
  await rig?.close();
  f = undefined;
  rig = undefined;
});

describe('forged and stale lease lines on the feed', () => {
  it('grant nothing for a number never sent, one asked on a stream given up, or one asked before the feed reconnected', async () => {
    f = await front();
    expect(f.follower.serving()).toBe(true);
    f.silent = true;
    // Renewals asked and never answered: the stream is given up, requests are held.
    await f.pass(2 * LEASE, 10);
    expect(f.follower.serving()).toBe(false);
    const asked = f.lines.filter((l) => l.renew).map((l) => l.n);
    expect(asked.length).toBeGreaterThan(0);
    const never = Math.max(...f.lines.map((l) => l.n)) + 1000;
    f.inject(lease(never) + asked.map((n) => lease(n)).join('') + lease(0) + lease(-1) + 'event: lease\ndata: {"n":"1","lease":true}\n\n');
    await f.pass(20, 5);
    expect(f.follower.serving(), 'no line answers a renewal still waiting').toBe(false);

    // Back on the stream: a renewal waits; the feed drops before its answer comes.
    f.silent = false;
    await f.pass((STREAM_RETRY_LEASES + 2) * LEASE, 50);
    f.silent = true;
    const before = f.lines.length;
    await f.until(() => f!.lines.slice(before).some((l) => l.renew));
    const pending = f.lines.slice(before).find((l) => l.renew)!;
    f.dropFeeds();
    await f.until(() => !f!.follower.serving());
    await f.pass(150, 5);
    f.inject(lease(pending.n));
    await f.pass(20, 5);
    expect(f.follower.serving(), 'an answer asked on the feed before is none on this one').toBe(false);
  });

  it('never holds a lease longer than its own lease from the sending, whatever lease_ms says', async () => {
    f = await front();
    f.silent = true;
    await f.pass(2 * LEASE, 10);
    f.silent = false;
    await f.pass((STREAM_RETRY_LEASES + 2) * LEASE, 50);
    f.silent = true;
    const before = f.lines.length;
    await f.until(() => f!.lines.slice(before).some((l) => l.renew));
    const asked = f.lines.slice(before).find((l) => l.renew)!;
    await f.clock.advance(100);
    f.inject(lease(asked.n, { lease_ms: Number.MAX_SAFE_INTEGER }));
    await f.until(() => f!.follower.serving());
    expect(f.follower.serving()).toBe(true);
    await f.clock.advance(asked.at + LEASE - f.clock.monotonic());
    expect(f.follower.serving(), 'a lease from the sending, the edge\'s own length at most').toBe(false);
  });

  it('counts a lease from the sending when the answer comes late (a slow write), not from its arrival', async () => {
    f = await front();
    await f.pass(LEASE, 10);
    const release = f.holdWrites();
    const before = f.lines.length;
    await f.until(() => f!.lines.slice(before).some((l) => l.renew));
    const asked = f.lines.slice(before).find((l) => l.renew)!;
    // Nothing after this renewal is answered; it is, 300 ms after it was sent.
    f.silent = true;
    await f.clock.advance(300);
    release();
    await f.until(() => f!.follower.serving() && f!.clock.monotonic() > asked.at + 300);
    await f.clock.advance(asked.at + LEASE - f.clock.monotonic());
    expect(f.follower.serving(), 'the lease ran from the sending').toBe(false);
  });
});

describe('renewals piling up behind a slow write', () => {
  it('a burst of more renewals than the origin keeps waiting leaves the edge on its stream', async () => {
    f = await front();
    await f.pass(LEASE, 10);
    const id = f.follower.edgeId;
    const requestsBefore = f.ackRequests;
    // Just after a beat, the feed drops and comes back: no lease, so every change applied asks to renew.
    const seen = f.lines.length;
    await f.until(() => f!.lines.slice(seen).some((l) => l.renew));
    const release = f.holdWrites();
    f.dropFeeds();
    await f.until(() => !f!.hub.hasStream(id));
    await f.until(() => f!.hub.hasStream(id));
    await f.pass(10, 5);
    const before = f.lines.length;
    for (let i = 0; i < 60; i++) {
      await f.publishChange();
      await new Promise((r) => setTimeout(r, 2));
    }
    const renewals = f.lines.slice(before).filter((l) => l.renew).length;
    expect(renewals, 'the burst asked more than 32 renewals at once').toBeGreaterThan(33);
    release();
    await f.pass(2 * LEASE, 10);
    expect(f.follower.serving()).toBe(true);
    expect(f.ackRequests - requestsBefore, 'no fall back to one request each').toBe(0);
  });

  it('the origin keeps at most 32 renewals waiting per edge, and answers the newest', async () => {
    let release!: () => void;
    const answered: number[] = [];
    let takes = 0;
    const turns = new AckTurns(async () => {
      takes++;
      if (takes === 1) await new Promise<void>((r) => (release = r));
      return { lease: true };
    }, (_edge, n) => answered.push(n));
    for (let n = 1; n <= 5000; n++) turns.push('e', { n, seq: n, renew: true });
    release();
    await new Promise((r) => setTimeout(r, 20));
    expect(takes).toBe(2);
    expect(answered).toEqual([1, ...Array.from({ length: 32 }, (_, i) => 5000 - 31 + i)]);
  });
});

describe('a feed that reconnects', () => {
  it('does not send the edge to one request each for leases', async () => {
    f = await front();
    // At ten moments of the beat (a fifth of the lease apart), so one falls while the feed is away.
    for (let i = 0; i < 10; i++) {
      await f.pass(20 + 20 * i, 5);
      f.dropFeeds();
      await f.until(() => !f!.follower.serving());
      await f.until(() => f!.follower.serving());
    }
    const requests = f.ackRequests;
    const lines = f.lines.length;
    await f.pass(3 * LEASE, 10);
    expect(f.lines.length, 'acknowledges on its stream').toBeGreaterThan(lines);
    expect(f.ackRequests - requests, 'not by request').toBe(0);
  });
});

describe('an acknowledgement stream dropped mid-way', () => {
  it.each([false, true])('under the acknowledgement of a change (a renewal: %s), the change is still answered well within a lease', async (renewal) => {
    f = await front();
    await f.pass(LEASE, 10);
    // A change's acknowledgement asks to renew only when little of the lease is left: writes
    // held for 2/5 of a lease leave renewals unanswered (not yet for long enough to give up).
    const release = renewal ? f.holdWrites() : () => {};
    if (renewal) await f.pass((2 * LEASE) / 5, 10);
    f.dropAtSeq = f.state.seq + 1;
    const t0 = f.clock.monotonic();
    const change = await f.publishChange();
    await f.until(() => change.answered());
    expect(f.dropped?.renew, 'the line lost with its stream').toBe(renewal);
    expect(f.clock.monotonic() - t0).toBeLessThan(LEASE / 2);
    release();
  });
});

describe('two origins on one database behind a load balancer', () => {
  it.each([false, true])('feed on one, acknowledgements on the other (a stale feed of the edge there: %s): changes answered well within a lease, never without the edge while it serves', async (staleThere) => {
    f = await front(LEASE, 'route', 'other');
    if (staleThere) await f.staleFeedOnOther();
    await f.pass(LEASE, 10);
    expect(f.other!.hasStream(f.follower.edgeId)).toBe(staleThere);
    for (let i = 0; i < 5; i++) {
      const t0 = f.clock.monotonic();
      const change = await f.publishChange();
      let early = false;
      await f.until(() => {
        if (change.answered() && f!.state.seq < change.seq && f!.follower.serving()) early = true;
        return change.answered();
      });
      expect(early, 'answered without the edge while it served').toBe(false);
      expect(f.clock.monotonic() - t0, `change ${i}`).toBeLessThan(LEASE / 2);
      expect(f.follower.serving()).toBe(true);
      await f.pass(LEASE / 2, 10);
    }
  });
});

describe('a stream that fails again and again', () => {
  it('opens a bounded number of streams and leaves no sockets or timers behind over 100 leases of 409', async () => {
    f = await front(LEASE, 'elsewhere');
    const timers = f.clock.pending;
    await f.pass(100 * LEASE, 50, () => {
      expect(f!.sockets, 'connections held').toBeLessThanOrEqual(6);
      expect(f!.clock.pending, 'timers waiting').toBeLessThanOrEqual(timers + 4);
    });
    expect(f.ackStreams, 'one stream tried per STREAM_RETRY_LEASES').toBeLessThanOrEqual(100 / STREAM_RETRY_LEASES + 2);
    expect(f.follower.serving()).toBe(true);
  });
});

describe('a proxy that gathers request bodies', () => {
  it('when the stream is tried again, a change is still answered well within a lease', async () => {
    rig = await followerRig(LEASE, { streamAcks: 'buffer' });
    const sender = (rig.follower as unknown as { acks: { requestsUntil: number } }).acks;
    await rig.pass(sender.requestsUntil - rig.clock.monotonic() - 5, 20);
    await rig.until(() => rig!.clock.monotonic() >= sender.requestsUntil);
    const seq = await rig.append({ type: 'folder.deleted', folder_id: 'x', data: { folder_id: 'x' } });
    const t0 = rig.clock.monotonic();
    let done = false;
    const publishing = rig.hub.publish(seq).then(() => (done = true));
    await rig.until(() => done);
    await publishing;
    expect(rig.clock.monotonic() - t0).toBeLessThan(LEASE / 4);
  });
});

describe('line parsing against hostile numbers', () => {
  it('refuses numbers past the safe integers and accepts the largest', () => {
    expect(parseAckLine('{"n":9007199254740992,"seq":0}')).toBeNull();
    expect(parseAckLine('{"n":1,"seq":1e21}')).toBeNull();
    expect(parseAckLine('{"n":1,"seq":-0}')?.seq === 0, 'a negative zero is a zero').toBe(true);
    expect(parseAckLine('{"n":1,"seq":9007199254740991}')).toEqual({ n: 1, seq: 9007199254740991, renew: false });
    expect(parseAckLine('{"n":1,"seq":1,"__proto__":{"renew":true}}')).toEqual({ n: 1, seq: 1, renew: false });
  });
});
