/**
 * The edge's status, sent with every usage report (usage.ts) for the origin's fleet page:
 * who it is, where it fills from, how far it has followed the feed, its cache and what it
 * has answered, every count cumulative since start.
 */
import type { Answered } from './metrics.js';
import type { FillCounts } from './sources.js';

export interface EdgeStatus {
  id: string;
  name: string;
  parents: string[];
  started_at: number;
  seq: number;
  cache: { used_bytes: number; capacity_bytes: number };
  requests: number;
  hits: number;
  misses: number;
  bytes_sent: number;
  fills: { parent: number; origin: number; failovers: number; served_to_children: number };
}

export interface StatusSources {
  id: string;
  name: string;
  parents: readonly string[];
  startedAt: number;
  seq(): number;
  cache: { readonly usedBytes: number; readonly capacity: number; readonly counts: FillCounts };
}

export class StatusReport {
  private requests = 0;
  private hits = 0;
  private misses = 0;
  private bytesSent = 0;

  constructor(private readonly s: StatusSources) {}

  /** An `onAnswered` listener: counts every answer once it has ended. */
  readonly answered = (a: Answered): void => {
    this.requests++;
    if (a.cache === 'HIT') this.hits++;
    else if (a.cache === 'MISS') this.misses++;
    this.bytesSent += a.bytes;
  };

  now(): EdgeStatus {
    const { cache } = this.s;
    return {
      id: this.s.id,
      name: this.s.name,
      parents: [...this.s.parents],
      started_at: this.s.startedAt,
      seq: this.s.seq(),
      cache: { used_bytes: cache.usedBytes, capacity_bytes: cache.capacity },
      requests: this.requests,
      hits: this.hits,
      misses: this.misses,
      bytes_sent: this.bytesSent,
      fills: { parent: cache.counts.parent, origin: cache.counts.origin, failovers: cache.counts.failovers, served_to_children: cache.counts.servedToChildren },
    };
  }
}
