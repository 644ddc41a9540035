/**
 * An edge process runs without V8's optimizing compiler until it is busy
 * (src/start/edge-early.ts): the compiler comes on at the first one-second check in which the
 * process used BUSY_CPU_MICROS of CPU or more, once, and never at an idle edge's few
 * milliseconds a second.
 */
import { describe, expect, it } from 'vitest';
import { BUSY_CPU_MICROS, OptimizeWhenBusy } from '../../src/start/edge-early.js';

/** Checks `msPerCheck` apart (the edge's beat), the process having used each given CPU since the last. */
function edgeProcess(cpuPerCheck: number[], msPerCheck = 1000) {
  let cpu = 1_000_000;
  let now = 5_000;
  let enabled = 0;
  const busy = new OptimizeWhenBusy(() => cpu, () => enabled++, () => now);
  const seen = cpuPerCheck.map((used) => {
    cpu += used;
    now += msPerCheck;
    return busy.check();
  });
  return { seen, enabled: () => enabled };
}

describe('the optimizing compiler at an edge', () => {
  it('stays off while the edge idles at a few milliseconds of CPU a second', () => {
    const idle = edgeProcess(Array.from({ length: 600 }, (_, i) => 2_000 + (i % 7) * 1_000));
    expect(idle.seen.every((on) => !on)).toBe(true);
    expect(idle.enabled()).toBe(0);
  });

  it('comes on at the first busy second, once, and stays on', () => {
    const p = edgeProcess([5_000, 5_000, BUSY_CPU_MICROS - 1, BUSY_CPU_MICROS, 0, 900_000, 0]);
    expect(p.seen).toEqual([false, false, false, true, true, true, true]);
    expect(p.enabled()).toBe(1);
  });

  it('judges the share of a core, whatever the beat: a short beat is not idle for using less per check', () => {
    // A lease of 1 s gives a 200 ms beat: its checks add up to a second, so 10 ms in one 200 ms
    // (an idle edge's garbage collection) is not busy, and 50 ms over the second is.
    expect(edgeProcess([2_000, BUSY_CPU_MICROS / 5], 200).seen).toEqual([false, false]);
    expect(edgeProcess([10_000, 10_000, 10_000, 10_000, 9_999], 200).enabled()).toBe(0);
    expect(edgeProcess([10_000, 10_000, 10_000, 10_000, 10_000], 200).seen).toEqual([false, false, false, false, true]);
    // A lease of 10 s gives a 2 s beat: 60 ms in it is 3% of a core, not busy.
    expect(edgeProcess([60_000], 2000).enabled()).toBe(0);
    // A check with no time gone by decides nothing.
    expect(edgeProcess([900_000], 0).enabled()).toBe(0);
  });

  it('counts the CPU of each second alone: many calm seconds do not add up to a busy one', () => {
    const p = edgeProcess(Array.from({ length: 100 }, () => BUSY_CPU_MICROS / 2));
    expect(p.enabled()).toBe(0);
  });
});
