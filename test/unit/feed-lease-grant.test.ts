/**
 * How long a lease an origin grants (src/feed/lease-grant.ts): a full lease at the head; behind
 * it, what is left of a lease since the origin learned of the first event the edge lacks; none
 * once that is a lease old, or for events known from before the origin started.
 */
import { describe, expect, it } from 'vitest';
import { LeaseGrants } from '../../src/feed/lease-grant.js';
import { ManualClock } from '../kit/clock.js';

const LEASE = 1000;

describe('lease grants', () => {
  it('grants a full lease at the head and what is left since the first missing event behind it', async () => {
    const clock = new ManualClock();
    const grants = new LeaseGrants(LEASE, () => clock.monotonic());
    grants.reset(10);
    expect(grants.grant(10, clock.monotonic()), 'at the head').toBe(LEASE);
    expect(grants.grant(9, clock.monotonic()), 'behind a head known from the start').toBe(0);

    await clock.advance(100);
    expect(grants.learn(11, clock.monotonic())).toBe(true);
    await clock.advance(300);
    expect(grants.learn(12, clock.monotonic())).toBe(true);
    expect(grants.learn(12, clock.monotonic()), 'a head already known').toBe(false);
    const t = clock.monotonic();
    expect(grants.grant(12, t)).toBe(LEASE);
    expect(grants.grant(11, t), 'lacks 12, learned just now').toBe(LEASE);
    expect(grants.grant(10, t), 'lacks 11, learned 300 ms ago').toBe(LEASE - 300);
    // Received before the event was learned: counted from receipt.
    expect(grants.grant(10, t - 350)).toBe(LEASE);

    await clock.advance(LEASE - 300);
    expect(grants.grant(10, clock.monotonic()), 'lacks an event known for a lease').toBe(0);
    expect(grants.grant(11, clock.monotonic())).toBe(300);
  });

  it('dates an earlier head back when a later one was learned earlier', () => {
    const clock = new ManualClock();
    const grants = new LeaseGrants(LEASE, () => clock.monotonic());
    grants.reset(0);
    grants.learn(5, 500);
    // Read from the log at a read that began before: 5 cannot have been learned after 7.
    grants.learn(7, 200);
    expect(grants.grant(4, 500)).toBe(LEASE - 300);
    expect(grants.grant(6, 500)).toBe(LEASE - 300);
  });
});
