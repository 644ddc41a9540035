/**
 * Memory of an origin or edge process (docs/operations.md, "Memory"). V8 lets its young generation
 * grow to 16 MiB semi-spaces while the modules load (and, with its flags reset, after a worker
 * thread starts: core/v8-flags.ts), and keeps them; an origin's garbage is
 * mostly short-lived buffers whose bytes live outside that heap, so small semi-spaces cost
 * it little time and keep both its idle and its busy memory lower. For a process that runs
 * an origin, not for one that only embeds it (tests): called before the origin's modules load.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { setV8Flag } from '../core/v8-flags.js';
import { onReceivedBytes } from '../http/received-bytes.js';

/** Bytes of request bodies between two collections of the buffers they arrived in. */
export const COLLECT_EVERY_BYTES = 8 * 1024 * 1024;
/**
 * Buffer memory allowed above what the last full collection left. Buffers that wait a few
 * milliseconds (a JSON part's text behind its decoding, 4 parts in flight) outlive two
 * scavenges and move to the old generation, which V8 collects only once such memory has
 * grown by 64 MB.
 */
export const BUFFER_HEADROOM_BYTES = 24 * 1000 * 1000;

export type Gc = (options?: { type: 'minor' | 'major'; execution?: 'sync'; flavor?: 'regular' | 'last-resort' }) => void;

/**
 * A full collection that also hands freed pages back to the system. From V8 12 (Node 22) a
 * plain full collection keeps the pages it frees for reuse: an origin on Node 24 stayed at
 * 130 MB after starting, against 75 MB on Node 20. Node 20 takes these options for a scavenge.
 */
const RELEASING = { type: 'major', execution: 'sync', flavor: 'last-resort' } as const;

/**
 * Collects request bodies' buffers by the bytes received: a scavenge every 8 MiB frees those
 * that died young, and a full collection frees the promoted ones once buffers take more than
 * the headroom above what the last full collection left. Node 20's `gc({ type: 'major' })`
 * only scavenges, so a full collection is `gc()`.
 */
export class BodyCollector {
  private received = 0;
  private limit = BUFFER_HEADROOM_BYTES;
  private measureAfterFull = false;

  constructor(
    private readonly gc: Gc,
    /** Bytes held outside V8's heap (buffers, live or not yet collected); cheaper to read than process.memoryUsage(). */
    private readonly bufferBytes: () => number = () => v8.getHeapStatistics().external_memory,
  ) {}

  add(bytes: number): void {
    this.received += bytes;
    if (this.received < COLLECT_EVERY_BYTES) return;
    this.received = 0;
    const buffers = this.bufferBytes();
    if (this.measureAfterFull) {
      // Measured one step later: V8 frees a full collection's buffers in the background.
      this.measureAfterFull = false;
      this.limit = buffers + BUFFER_HEADROOM_BYTES;
    }
    if (buffers > this.limit) {
      this.gc();
      this.measureAfterFull = true;
    } else {
      this.gc({ type: 'minor' });
    }
  }
}

/**
 * Keeps the young generation at its initial size, and compiles nothing beyond bytecode while
 * the origin starts: its startup code runs once, and the optimizing compilers' working memory
 * stays with the process's allocator after they finish (about 7 MB of an idle origin's RSS).
 * A scavenge of a 1 MiB semi-space is too little work to share: handing it to helper threads
 * (which wait for a core the origin's clients may hold) made each one take 0.95 ms, not 0.55.
 * Marking between collections stays on the origin's thread too: helper threads marking a
 * heap of a few tens of MB cost more CPU than they save (per 256 MiB upload, /tus 1.21 s →
 * 0.97 s, raw parts 0.99 → 0.89 s). V8 reads the flag when a marking cycle starts.
 */
export function keepYoungGenerationSmall(): void {
  setV8Flag('--semi-space-growth-factor=1');
  setV8Flag('--no-parallel-scavenge');
  setV8Flag('--no-concurrent-marking');
  setV8Flag('--no-turbofan');
  setV8Flag('--no-sparkplug');
}

/** The compilers back, and one compacting collection; returns V8's collector, when it can be had. */
function compact(): Gc | undefined {
  setV8Flag('--turbofan');
  setV8Flag('--sparkplug');
  setV8Flag('--expose-gc');
  const gc = vm.runInNewContext('gc') as Gc | undefined;
  if (typeof gc !== 'function') return undefined;
  setV8Flag('--compact-on-every-full-gc');
  try {
    gc();
    gc(RELEASING);
  } finally {
    setV8Flag('--no-compact-on-every-full-gc');
  }
  return gc;
}

/**
 * Once started: the compilers are back for the code that serves requests, one compacting
 * collection gives what loading left behind back to the system, and request bodies'
 * buffers are collected by the bytes received.
 */
export function compactAfterStart(): void {
  const gc = compact();
  if (!gc) return;
  const collector = new BodyCollector(gc);
  onReceivedBytes((bytes) => collector.add(bytes));
}

/**
 * For an edge while it loads: the young generation stays at its initial size. start/edge-early.ts
 * also loads it under `--no-turbofan` (about 4 MB lower idle: the optimizing compiler's code in the
 * node binary never touched); settleEdgeAfterStart turns the compiler back on, and the hot path
 * is optimized as before (the same functions under --trace-opt, the same CPU per 4 KiB hit).
 */
export function keepEdgeYoungGenerationSmall(): void {
  setV8Flag('--semi-space-growth-factor=1');
}

/**
 * An edge once started (`coffer edge`, loaded under keepEdgeYoungGenerationSmall): the compilers
 * are back, one compacting collection gives what loading left behind back to the system, and
 * the young generation, its scavenges and marking return to V8's defaults. An edge receives
 * no request bodies; its hot path makes small objects per request, so the young generation
 * may grow again under load as it did before, while an idle edge keeps the one it started with.
 */
export function settleEdgeAfterStart(): void {
  compact();
  // V8's defaults (flag-definitions.h).
  setV8Flag('--semi-space-growth-factor=2');
  setV8Flag('--parallel-scavenge');
  setV8Flag('--concurrent-marking');
}
