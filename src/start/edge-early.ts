/**
 * Imported first by the `coffer` command (src/cli/main.ts), before commander and the
 * settings load: for `coffer edge`, V8's young generation stays at its initial size from the
 * first module on (start/memory.ts), and V8 optimizes nothing until the edge is busy.
 */
import { setV8Flag } from '../core/v8-flags.js';
import { keepEdgeYoungGenerationSmall, settleEdgeAfterStart } from './memory.js';

if (process.argv[2] === 'edge') {
  keepEdgeYoungGenerationSmall();
  // The first function V8 optimizes maps in about 3.5 MB of the optimizing compiler's code
  // (pages of the node binary), and its working memory stays with the process: loading made
  // Node's path functions hot, an idle edge's timers do within a minute. Functions that ran
  // meanwhile are optimized as usual once the flag is back and they run hot.
  setV8Flag('--no-turbofan');
}

/** CPU in one second above which an edge is busy: an idle one spends a few ms a second on its lease and feed. */
export const BUSY_CPU_MICROS = 50_000;

/**
 * The shortest span judged: shorter beats add up to it. An idle edge's CPU comes in lumps (a
 * garbage collection, a usage report): at a lease of 1 s, measured, one 200 ms span in a
 * hundred held 5% of a core or more, while no second held it.
 */
export const MIN_WINDOW_MS = 1000;

/** Turns V8's optimizing compiler on, once, at the first check that finds the process busy. */
export class OptimizeWhenBusy {
  private lastCpu: number;
  private lastAt: number;
  on = false;

  constructor(
    /** User + system CPU the process has used, in microseconds. */
    private readonly cpuMicros: () => number = () => {
      const u = process.cpuUsage();
      return u.user + u.system;
    },
    private readonly enable: () => void = () => setV8Flag('--turbofan'),
    /** A monotonic clock in milliseconds. */
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    this.lastCpu = cpuMicros();
    this.lastAt = nowMs();
  }

  /** Called periodically (about every second); true once the compiler is on. */
  check(): boolean {
    if (this.on) return true;
    const at = this.nowMs();
    const elapsedMs = at - this.lastAt;
    if (!(elapsedMs >= MIN_WINDOW_MS)) return false;
    const cpu = this.cpuMicros();
    const used = cpu - this.lastCpu;
    this.lastCpu = cpu;
    this.lastAt = at;
    // The share of a core, so a beat other than one second judges the same.
    if (used * 1000 < BUSY_CPU_MICROS * elapsedMs) return false;
    this.enable();
    this.on = true;
    return true;
  }
}

/**
 * Once an edge listens: one compaction and V8's young generation defaults (memory.ts), and the
 * optimizing compiler off until the edge is busy. A busy edge's hot path is optimized within
 * a beat of the load arriving; an idle or nearly idle one never maps the compiler in. The check
 * rides the edge's tick (`onTick`) rather than a timer of its own: one wakeup less a second.
 */
export function settleEdge(onTick: (fn: () => void) => void): void {
  settleEdgeAfterStart();
  setV8Flag('--no-turbofan');
  const busy = new OptimizeWhenBusy();
  onTick(() => void busy.check());
}
