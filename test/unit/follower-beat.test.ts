/**
 * An edge's periodic work rides one timer, the follower's beat (a fifth of the lease): the
 * lease's renewals, the silent-stream watch, and whatever registers with `onTick` (the state
 * file, the optimizing-compiler check). A listener that throws costs neither the lease nor the
 * listeners after it.
 */
import { afterEach, expect, it } from 'vitest';
import { followerRig, type FollowerRig } from '../helpers/follower-rig.js';

let rig: FollowerRig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
});

it('runs every listener once a beat, in order, and none after the follower stops', async () => {
  rig = await followerRig(1000);
  expect(rig.follower.beatMs).toBe(200);
  const calls: string[] = [];
  rig.follower.onTick(() => calls.push('a'));
  rig.follower.onTick(() => calls.push('b'));
  await rig.pass(1000, 10);
  expect(calls.length).toBe(10);
  expect(calls.join('')).toBe('ababababab');
  rig.follower.stop();
  await rig.pass(600, 10);
  expect(calls.length).toBe(10);
});

it('keeps the lease and the later listeners when a listener throws', async () => {
  rig = await followerRig(1000);
  let after = 0;
  rig.follower.onTick(() => {
    throw new Error('a listener that fails');
  });
  rig.follower.onTick(() => after++);
  const acks = rig.acks;
  // Three leases: without renewals at the beat the lease would run out.
  await rig.pass(3000, 10, () => expect(rig!.follower.serving()).toBe(true));
  expect(after).toBe(15);
  expect(rig.acks).toBeGreaterThan(acks + 3);
});

it('ticks each second under a long lease, and renews the lease at its own beat', async () => {
  rig = await followerRig(10_000);
  expect(rig.follower.beatMs).toBe(2000);
  expect(rig.follower.tickMs).toBe(1000);
  let ticks = 0;
  rig.follower.onTick(() => ticks++);
  const acks = rig.acks;
  await rig.pass(20_000, 50, () => expect(rig!.follower.serving()).toBe(true));
  expect(ticks).toBe(20);
  // An idle edge renews every second beat (4 s here): about five in 20 s, never one a tick.
  expect(rig.acks - acks).toBeGreaterThanOrEqual(4);
  expect(rig.acks - acks).toBeLessThanOrEqual(7);
});
