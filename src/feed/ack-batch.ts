/**
 * Writes edges' acknowledgements in batches. The first of a burst waits `delayMs` for the rest
 * (every edge acknowledges a change within a few ms of the others): one write for the lot,
 * made after the acknowledgements have settled waiting changes, not between them. Every one
 * that arrives during a write goes in the next.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import type { EdgeAck, EdgeLease } from '../core/ports.js';

interface Queued {
  ack: EdgeAck;
  resolve(row: EdgeLease): void;
  reject(err: unknown): void;
}

export class AckBatch {
  private queue: Queued[] = [];
  private flushing = false;
  private timer: TimerHandle | null = null;

  constructor(
    private readonly write: (acks: EdgeAck[]) => Promise<EdgeLease[]>,
    private readonly delayMs: number,
    private readonly clock: Clock,
  ) {}

  /** Resolves with the edge's row as written. */
  record(ack: EdgeAck): Promise<EdgeLease> {
    return new Promise<EdgeLease>((resolve, reject) => {
      this.queue.push({ ack, resolve, reject });
      if (!this.flushing && !this.timer) {
        this.timer = this.clock.setTimeout(() => {
          this.timer = null;
          void this.flush();
        }, this.delayMs);
      }
    });
  }

  /** Refuses what is queued and anything written later. */
  close(): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = null;
    for (const q of this.queue.splice(0)) q.reject(new Error('the origin is shutting down'));
  }

  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0);
        try {
          const rows = new Map((await this.write(batch.map((b) => b.ack))).map((r) => [r.edge_id, r]));
          for (const b of batch) {
            const row = rows.get(b.ack.edge_id);
            if (row) b.resolve(row);
            else b.reject(new Error(`no row for edge ${b.ack.edge_id}`));
          }
        } catch (err) {
          for (const b of batch) b.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
