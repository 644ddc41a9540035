/**
 * An idle edge renews its lease every second beat, not every beat, and at every beat only for a
 * while after a change or an answer that came late; the lease rules hold as before: the edge
 * serves only while acknowledgements are answered, and stops within a lease of the last one it
 * sent that was answered. A real EdgeHub behind a small HTTP front, one FeedFollower, one clock
 * moved by hand (test/helpers/follower-rig.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSY_LEASES, LATE_ANSWER, RENEW_AT, needsRenewal } from '../../src/edge/follower.js';
import { followerRig, type FollowerRig } from '../helpers/follower-rig.js';

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

describe.each([
  ['streamed on one request', true],
  ['sent one request each (an origin without the stream)', false],
])('a follower on an idle feed, acknowledgements %s', (_name, streamAcks) => {
  let rig: FollowerRig;
  const pass = (ms: number, step = 5, check: () => void = () => {}) => rig.pass(ms, step, check);

  beforeAll(async () => {
    rig = await followerRig(LEASE, { streamAcks });
  });

  afterAll(async () => {
    await rig?.close();
  });

  it('holds its lease throughout, acknowledging every second beat', async () => {
    const before = rig.acks;
    let lapses = 0;
    await pass(10 * LEASE, 5, () => {
      if (!rig.follower.serving()) lapses++;
    });
    const sent = rig.acks - before;
    expect(lapses, 'the lease never ran out').toBe(0);
    // One per beat would be 50; one per second beat 25.
    expect(sent, `${sent} acknowledgements in ten leases`).toBeLessThanOrEqual(10 * LEASE / (2 * BEAT) + 2);
    expect(sent).toBeGreaterThanOrEqual(10 * LEASE / (2 * BEAT) - 2);
    if (streamAcks) expect(rig.ackRequests, 'every renewal was answered on the feed: none fell back to a request').toBe(0);
  });

  it('renews at every beat for BUSY_LEASES leases after a change, then every second beat again', async () => {
    const seq = await rig.append({ type: 'folder.deleted', folder_id: 'x', data: { folder_id: 'x' } });
    let published = false;
    const publishing = rig.hub.publish(seq).then(() => (published = true));
    await rig.until(() => published);
    await publishing;
    const busyFrom = rig.acks;
    await pass(BUSY_LEASES * LEASE - 2 * BEAT);
    const busy = rig.acks - busyFrom;
    await pass(2 * BEAT);
    const idleFrom = rig.acks;
    await pass(BUSY_LEASES * LEASE);
    const idle = rig.acks - idleFrom;
    expect(busy, `${busy} acknowledgements while busy`).toBeGreaterThanOrEqual((BUSY_LEASES * LEASE) / BEAT - 4);
    expect(idle, `${idle} acknowledgements once idle again`).toBeLessThanOrEqual((BUSY_LEASES * LEASE) / (2 * BEAT) + 2);
    expect(rig.follower.serving()).toBe(true);
    if (streamAcks) expect(rig.ackRequests).toBe(0);
  });

  it('renews at every beat for BUSY_LEASES leases after an answer came late, then every second beat again', async () => {
    let lapses = 0;
    const count = () => {
      if (!rig.follower.serving()) lapses++;
    };
    const hold = (on: boolean) => {
      if (streamAcks) rig.delayStreamed = on;
      else rig.delayRequests = on;
    };
    hold(true);
    const before = rig.acks;
    await rig.until(() => rig.acks > before);
    // Answered later than LATE_ANSWER of a lease after it was sent, well within what is left.
    await pass(LEASE * LATE_ANSWER + 2 * 5, 5, count);
    hold(false);
    rig.releaseStreamed();
    rig.releaseRequests();
    await pass(BEAT, 5, count);
    const busyFrom = rig.acks;
    await pass(BUSY_LEASES * LEASE - 2 * BEAT, 5, count);
    const busy = rig.acks - busyFrom;
    await pass(2 * BEAT, 5, count);
    const idleFrom = rig.acks;
    await pass(BUSY_LEASES * LEASE, 5, count);
    const idle = rig.acks - idleFrom;
    expect(busy, `${busy} acknowledgements after the late answer`).toBeGreaterThanOrEqual((BUSY_LEASES * LEASE) / BEAT - 4);
    expect(idle, `${idle} acknowledgements once answers came in time again`).toBeLessThanOrEqual((BUSY_LEASES * LEASE) / (2 * BEAT) + 2);
    expect(lapses, 'the lease never ran out').toBe(0);
    if (streamAcks) expect(rig.ackRequests, 'a late answer within half a lease keeps the stream').toBe(0);
  });

  it('stops serving within a lease of the last acknowledgement answered when the origin goes silent', async () => {
    rig.silent = true;
    const stoppedAnswering = rig.clock.monotonic();
    let stoppedServing = -1;
    await pass(2 * LEASE, 5, () => {
      if (stoppedServing < 0 && !rig.follower.serving()) stoppedServing = rig.clock.monotonic();
    });
    expect(stoppedServing, 'it stopped serving').toBeGreaterThan(0);
    expect(stoppedServing - stoppedAnswering, 'within a lease').toBeLessThanOrEqual(LEASE);
  });
});
