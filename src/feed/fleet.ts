/**
 * The fleet as operators see it: every edge in the shared lease table joined with its last
 * report of itself (edge-status.ts). Both live in the metadata store, so any origin sharing it
 * lists every edge, whichever origin the edge follows. An edge that stops answering stays
 * listed, as `lapsed` or `unreachable`, until it has been silent for an hour.
 */
import type { Clock } from '../core/clock.js';
import type { EdgeLease, EdgeReportRow, MetadataStore } from '../core/ports.js';
import type { EdgeEntry, EdgeState, EdgesResponse } from '../core/api-edges.js';
import { parseEdgeStatus, type EdgeStatus } from './edge-status.js';

/** How often edges report (their usage reporter's interval). */
export const REPORT_EVERY_MS = 10_000;
/** Reports missed before an edge counts as unreachable. */
const MISSED_REPORTS = 3;
/** An edge silent this long is forgotten. */
export const FORGET_AFTER_MS = 60 * 60_000;
/**
 * Edge ids one origin keeps reports for within FORGET_AFTER_MS: the edges' token may name any
 * id, and a holder naming a new one in every report would grow the table and the list without end.
 */
export const MAX_REPORTED_EDGES = 10_000;

export type FleetStore = Pick<MetadataStore, 'edgeLeases' | 'recordEdgeReport' | 'edgeReports' | 'pruneEdgeReports'>;

export interface EdgeFleetOptions {
  meta: FleetStore;
  clock: Clock;
  originId: string;
  head: () => number;
  reportEveryMs?: number;
  onError?: (what: string, err: unknown) => void;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** A stored report, checked again: a row another version wrote lists the edge without its counts. */
function storedStatus(text: string): EdgeStatus | undefined {
  try {
    const parsed = parseEdgeStatus(JSON.parse(text));
    return typeof parsed === 'string' ? undefined : parsed;
  } catch {
    return undefined;
  }
}

export class EdgeFleet {
  private lastPrune = -Infinity;
  /** Ids this origin kept a report for, and when: bounded by MAX_REPORTED_EDGES. */
  private readonly kept = new Map<string, number>();
  private readonly reportEveryMs: number;

  constructor(private readonly o: EdgeFleetOptions) {
    this.reportEveryMs = o.reportEveryMs ?? REPORT_EVERY_MS;
  }

  /** Keeps an edge's report (the newest replaces the one before); forgets long-silent ones now and then. */
  async record(status: EdgeStatus): Promise<void> {
    const now = this.o.clock.now();
    for (const [id, at] of this.kept) {
      if (now - at <= FORGET_AFTER_MS) break;
      this.kept.delete(id);
    }
    if (!this.kept.has(status.id) && this.kept.size >= MAX_REPORTED_EDGES) {
      this.o.onError?.('keeping an edge report', new Error(`more than ${MAX_REPORTED_EDGES} edge ids reported within an hour; ${status.id} is not listed`));
      return;
    }
    this.kept.delete(status.id);
    this.kept.set(status.id, now);
    await this.o.meta.recordEdgeReport({ edge_id: status.id, origin_id: this.o.originId, received_at: now, report: JSON.stringify(status) });
    if (now - this.lastPrune > FORGET_AFTER_MS / 12) {
      this.lastPrune = now;
      this.o.meta.pruneEdgeReports(now - FORGET_AFTER_MS).catch((err) => this.o.onError?.('pruning edge reports', err));
    }
  }

  /** Every edge heard from in the last hour, by name. */
  async list(): Promise<EdgesResponse> {
    const [leases, reports] = await Promise.all([this.o.meta.edgeLeases(), this.o.meta.edgeReports()]);
    const now = this.o.clock.now();
    const head = this.o.head();
    const byId = new Map<string, { lease?: EdgeLease; report?: EdgeReportRow }>();
    for (const lease of leases) byId.set(lease.edge_id, { lease });
    for (const report of reports) byId.set(report.edge_id, { ...byId.get(report.edge_id), report });
    const edges: EdgeEntry[] = [];
    for (const [id, { lease, report }] of byId) {
      const entry = this.entry(id, lease, report, now, head);
      if (entry && now - Date.parse(entry.last_seen_at) <= FORGET_AFTER_MS) edges.push(entry);
    }
    edges.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1));
    return { head_seq: head, checked_at: iso(now), edges };
  }

  private entry(id: string, lease: EdgeLease | undefined, row: EdgeReportRow | undefined, now: number, head: number): EdgeEntry | undefined {
    const status = row ? storedStatus(row.report) : undefined;
    const lastSeen = Math.max(lease?.heard_at ?? 0, row?.received_at ?? 0);
    if (lastSeen === 0) return undefined;
    const applied = Math.max(lease?.acked_seq ?? 0, status?.seq ?? 0);
    const state = this.state(lease, row, now);
    const answered = status ? status.hits + status.misses : 0;
    return {
      id,
      name: status?.name ?? id,
      parents: status?.parents ?? [],
      state,
      answering: state === 'live' || state === 'catching_up',
      last_seen_at: iso(lastSeen),
      lease_expires_at: lease && lease.live_until > 0 && lease.state !== 'lapsed' ? iso(lease.live_until) : null,
      applied_seq: applied,
      feed_lag_events: Math.max(0, head - applied),
      cache_used_bytes: status?.cache.used_bytes ?? null,
      cache_capacity_bytes: status?.cache.capacity_bytes ?? null,
      hit_ratio: status && answered > 0 ? status.hits / answered : null,
      requests: status?.requests ?? null,
      bytes_sent: status?.bytes_sent ?? null,
      fills: status?.fills ?? null,
      started_at: status ? iso(status.started_at) : null,
    };
  }

  /**
   * Answering: its lease runs (caught up, or applying the feed to earn one) and its reports,
   * if it sends any, keep coming. Not answering: `lapsed` when its lease ran out or a change
   * was answered without it; `unreachable` when its reports stopped while the lease row says
   * nothing worse, or the lease row is gone.
   */
  private state(lease: EdgeLease | undefined, row: EdgeReportRow | undefined, now: number): EdgeState {
    const reportsStopped = row !== undefined && now - row.received_at > this.reportEveryMs * MISSED_REPORTS;
    if (!lease) return reportsStopped || !row ? 'unreachable' : 'catching_up';
    if (lease.state === 'lapsed') return 'lapsed';
    const leaseRuns = lease.live_until > now;
    if (lease.state === 'caught_up' && !leaseRuns) return 'lapsed';
    if (reportsStopped) return 'unreachable';
    if (lease.state === 'behind') return now - lease.heard_at > this.reportEveryMs * MISSED_REPORTS ? 'unreachable' : 'catching_up';
    return 'live';
  }
}
