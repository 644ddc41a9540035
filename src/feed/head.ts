/**
 * The head of the event log as this origin knows it, and when it learned each recent part of
 * it (lease-grant.ts). A local change is learned when it is published; another origin's when a
 * read of the log finds it, dated back to the start of the previous read that did not (it was
 * committed after that). Reads run one at a time.
 */
import type { Clock } from '../core/clock.js';
import type { MetadataStore } from '../core/ports.js';
import { LeaseGrants } from './lease-grant.js';

export class EventHead {
  private readonly grants: LeaseGrants;
  /** Start of the latest completed read of the head: any event above `seq` was committed after it. */
  private checkedAt = -Infinity;
  private reading: Promise<void> | null = null;

  constructor(
    private readonly meta: Pick<MetadataStore, 'lastEventSeq'>,
    leaseMs: number,
    private readonly clock: Clock,
    /** Called after every read: streams behind the head have more to send. */
    private readonly onRead: () => void,
  ) {
    this.grants = new LeaseGrants(leaseMs, () => clock.monotonic());
  }

  get seq(): number {
    return this.grants.head;
  }

  /** Reads the head when the origin starts; what it finds counts as long known. */
  async start(): Promise<void> {
    const started = this.clock.monotonic();
    this.grants.reset(await this.meta.lastEventSeq());
    this.checkedAt = started;
  }

  /** A change made here: known from now on. */
  published(seq: number): void {
    this.grants.learn(seq, this.clock.monotonic());
  }

  /** A sequence read from the log for a stream: committed after the last head read began, since that read did not see it. */
  readFromLog(seq: number): void {
    this.grants.learn(seq, this.checkedAt);
  }

  /** Reads the head, one read at a time. */
  read(): Promise<void> {
    this.reading ??= (async () => {
      try {
        const started = this.clock.monotonic();
        const last = await this.meta.lastEventSeq();
        this.grants.learn(last, this.checkedAt);
        this.checkedAt = Math.max(this.checkedAt, started);
      } finally {
        this.reading = null;
      }
      this.onRead();
    })();
    return this.reading;
  }

  /** Reads until a read that began at `t` or later has completed. */
  async readSince(t: number): Promise<void> {
    while (this.checkedAt < t) await this.read();
  }

  /** The lease, in ms from `t`, for an edge that has applied everything up to `seq` (0 for none). */
  grant(seq: number, t: number): number {
    return this.grants.grant(seq, t);
  }
}
