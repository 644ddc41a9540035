/**
 * How long a lease an origin may grant an edge: no longer than a lease from when the origin
 * learned of the first event the edge has not applied (see the header of hub.ts). Kept
 * here are the heads learned within the last lease; older ones only count as "long known".
 */

/** The head as it grew: `seq` was known (or taken to be) from `at` on, in monotonic ms. */
interface Learned {
  seq: number;
  at: number;
}

export class LeaseGrants {
  /** The highest sequence known. */
  head = 0;
  /** Ascending in both fields. */
  private learned: Learned[] = [];
  /** Every event up to this was learned more than a lease ago (or before the origin started). */
  private forgotten = 0;

  constructor(private readonly leaseMs: number, private readonly now: () => number) {}

  /** The head read when the origin starts: when it was learned is unknown, so it counts as long known. */
  reset(head: number): void {
    this.head = this.forgotten = head;
    this.learned = [];
  }

  /** Events up to `seq` are known from `at` on (or earlier: an earlier time only shortens leases). */
  learn(seq: number, at: number): boolean {
    if (seq <= this.head) return false;
    this.head = seq;
    // An earlier head cannot have been learned after a later one.
    for (let i = this.learned.length - 1; i >= 0 && this.learned[i]!.at > at; i--) this.learned[i]!.at = at;
    this.learned.push({ seq, at });
    this.forget(this.now());
    return true;
  }

  private forget(now: number): void {
    let n = 0;
    while (n < this.learned.length && this.learned[n]!.at < now - this.leaseMs) n++;
    if (n === 0) return;
    this.forgotten = Math.max(this.forgotten, this.learned[n - 1]!.seq);
    this.learned.splice(0, n);
  }

  /**
   * The lease, in ms from `t`, for an edge that has applied everything up to `seq`:
   * `min(t, L) + lease - t`, L being when the first event after `seq` was learned; 0 for none.
   */
  grant(seq: number, t: number): number {
    if (seq >= this.head) return this.leaseMs;
    this.forget(t);
    if (seq < this.forgotten) return 0;
    let lo = 0;
    let hi = this.learned.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.learned[mid]!.seq > seq) hi = mid;
      else lo = mid + 1;
    }
    const first = this.learned[lo];
    if (!first || first.seq <= seq) return 0;
    return Math.max(0, Math.floor(Math.min(t, first.at) + this.leaseMs - t));
  }
}
