/**
 * Changes waiting for the edges (the rules are in the header of hub.ts). A change is answered
 * once no live edge lacks it: an edge heard here holds it while a lease this origin granted
 * runs (memory); any edge holds it while its row in the lease table is live. A quiet edge's row
 * is marked `lapsed` (compare-and-set) before a change is answered without it.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import type { EdgeLease, MetadataStore } from '../core/ports.js';

/** An edge heard by this origin. */
export interface LocalEdge {
  id: string;
  /** Monotonic time of the last acknowledgement received. */
  lastHeard: number;
  /** Monotonic time at which the longest lease granted to it ends. */
  leaseEnd: number;
  acked: number;
}

interface Waiter {
  seq: number;
  /** The lease table as read by a read numbered at least this (begun after the change committed) may settle it. */
  minRead: number;
  resolve(): void;
}

export interface PublishWaitOptions {
  meta: Pick<MetadataStore, 'edgeLeases' | 'markEdgesLapsed'>;
  clock: Clock;
  originId: string;
  /** How much longer another origin's row counts as live, for clocks that disagree a little. */
  skewMs: number;
  /** The edges heard here (leases.ts owns them). */
  edges: ReadonlyMap<string, LocalEdge>;
  /** Asks for a poll: a newer read of the table is wanted. */
  schedulePoll(): void;
  onError(what: string, err: unknown): void;
}

/** Someone waiting for the changes waiting at one moment to be answered (`settled`). */
interface Quiet {
  upTo: number;
  finish(): void;
}

export class PublishWait {
  private waiters: Waiter[] = [];
  private quiet: Quiet[] = [];
  /** The lease table as last read, patched by this origin's own writes since. */
  private rows = new Map<string, EdgeLease>();
  /** The number of the read `rows` came from. */
  private rowsRead = 0;
  private readsStarted = 0;
  private reading = false;
  private readAgain = false;
  /** Set when a waiting change needs a newer read of the table. */
  private wantRead = false;
  private marking = false;
  private wakeTimer: TimerHandle | null = null;
  private closed = false;

  constructor(private readonly o: PublishWaitOptions) {}

  get waiting(): number {
    return this.waiters.length;
  }

  /** Whether a poll should read the table again. */
  get wantsRead(): boolean {
    return this.wantRead;
  }

  /** Resolves once no live edge lacks `seq`. */
  wait(seq: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      // Only a read begun now sees every edge that might not have had this change.
      this.waiters.push({ seq, minRead: this.readsStarted + 1, resolve });
      this.readRows();
    });
  }

  /**
   * Resolves once every change waiting now has been answered, or after `limitMs`. Bytes of a
   * new file are sent to edges after this, so the fills do not compete with the
   * acknowledgements its completion waits for.
   */
  settled(limitMs: number): Promise<void> {
    const upTo = this.waiters.reduce((m, w) => Math.max(m, w.seq), -Infinity);
    if (this.closed || upTo === -Infinity || limitMs <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = this.o.clock.setTimeout(() => entry.finish(), limitMs);
      timer.unref?.();
      const entry: Quiet = {
        upTo,
        finish: () => {
          this.o.clock.clearTimeout(timer);
          this.quiet = this.quiet.filter((q) => q !== entry);
          resolve();
        },
      };
      this.quiet.push(entry);
    });
  }

  /** Lets go of those in `settled` once no change up to theirs is waiting. */
  private releaseQuiet(): void {
    if (this.quiet.length === 0) return;
    const lowest = this.waiters.reduce((m, w) => Math.min(m, w.seq), Infinity);
    for (const q of [...this.quiet]) if (q.upTo < lowest) q.finish();
  }

  /** A row as this origin wrote it. */
  written(row: EdgeLease): void {
    this.rows.set(row.edge_id, row);
  }

  /** Reads the lease table, one read at a time; a read asked for meanwhile runs next. */
  readRows(): void {
    if (this.closed) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    this.wantRead = false;
    void this.readLoop();
  }

  private async readLoop(): Promise<void> {
    try {
      do {
        this.readAgain = false;
        const number = ++this.readsStarted;
        try {
          const rows = await this.o.meta.edgeLeases();
          this.rows = new Map(rows.map((r) => [r.edge_id, r]));
          this.rowsRead = number;
        } catch (err) {
          // Nothing is answered on a failed read; the poll tries again.
          this.o.onError('reading the edge lease table', err);
          this.wantRead = true;
          break;
        }
        this.settle();
      } while (this.readAgain && !this.closed);
    } finally {
      this.reading = false;
    }
  }

  private rowLive(row: EdgeLease, wall: number): boolean {
    return wall < row.live_until + (row.origin_id === this.o.originId ? 0 : this.o.skewMs);
  }

  /** Answers the waiters nothing holds back any more; marks quiet edges' rows on the way. */
  settle(): void {
    if (this.closed) return;
    const at = this.o.clock.monotonic();
    const wall = this.o.clock.now();
    const found = { next: Infinity, remoteWait: false, marks: new Map<string, number>() };
    this.waiters = this.waiters.filter((w) => {
      if (this.rowsRead < w.minRead) {
        this.wantRead = true;
        return true;
      }
      const blocked = this.holdsBack(w.seq, at, wall, found);
      if (!blocked) w.resolve();
      return blocked;
    });
    // Rows of other origins change only in the database: read again while one holds a change back.
    if (found.remoteWait) this.wantRead = true;
    if (this.wantRead) this.o.schedulePoll();
    if (found.marks.size > 0) void this.mark(found.marks);
    this.wakeAt(found.next, at);
    this.releaseQuiet();
  }

  /**
   * Whether some edge holds `seq` back: it lacks it and is live, or its row is to be marked
   * lapsed first. Notes the earliest end of a lease held here, rows to mark, and whether
   * another origin's row holds it.
   */
  private holdsBack(seq: number, at: number, wall: number, found: { next: number; remoteWait: boolean; marks: Map<string, number> }): boolean {
    let blocked = false;
    const quiet = (row: EdgeLease): void => {
      if (this.rowLive(row, wall)) {
        blocked = found.remoteWait = true;
      } else if (row.state !== 'lapsed') {
        blocked = true;
        found.marks.set(row.edge_id, row.version);
      }
    };
    for (const e of this.o.edges.values()) {
      const row = this.rows.get(e.id);
      if (e.acked >= seq || (row && row.acked_seq >= seq)) continue;
      if (at < e.leaseEnd) {
        blocked = true;
        found.next = Math.min(found.next, e.leaseEnd);
      } else if (row) {
        quiet(row);
      }
      // No row: the edge never held a lease that a row did not record, and will have to catch up.
    }
    for (const row of this.rows.values()) {
      if (row.acked_seq >= seq || this.o.edges.has(row.edge_id)) continue;
      quiet(row);
    }
    return blocked;
  }

  /** Settles again when the first lease held here runs out. */
  private wakeAt(next: number, at: number): void {
    if (this.wakeTimer) this.o.clock.clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    if (next === Infinity) return;
    this.wakeTimer = this.o.clock.setTimeout(() => this.settle(), Math.max(1, Math.ceil(next - at) + 1));
    this.wakeTimer.unref?.();
  }

  /** Marks quiet edges' rows lapsed (compare-and-set); a row that changed meanwhile is read again. */
  private async mark(marks: Map<string, number>): Promise<void> {
    if (this.marking) return;
    this.marking = true;
    let all = false;
    try {
      const wanted = [...marks].map(([edge_id, version]) => ({ edge_id, version }));
      const done = new Set(await this.o.meta.markEdgesLapsed(wanted));
      for (const m of wanted) {
        const row = this.rows.get(m.edge_id);
        if (done.has(m.edge_id) && row && row.version === m.version) this.rows.set(m.edge_id, { ...row, state: 'lapsed', version: m.version + 1 });
      }
      all = done.size === wanted.length;
    } catch (err) {
      this.o.onError('marking quiet edges', err);
    } finally {
      this.marking = false;
    }
    if (all) this.settle();
    else {
      this.wantRead = true;
      this.o.schedulePoll();
    }
  }

  /** Answers every waiter: a closing origin holds no change up. */
  close(): void {
    this.closed = true;
    if (this.wakeTimer) this.o.clock.clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
    this.releaseQuiet();
  }
}
