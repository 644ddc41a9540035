/**
 * The origin's side of the delivery network. Edges follow the event log over a stream,
 * acknowledge what they applied, and hold a lease while they keep acknowledging it (see
 * "Bounded waits" for how long a lease an edge that lags behind is granted). A change
 * is answered only once every live edge has acknowledged it, or once an edge that went
 * quiet has certainly stopped serving from its cache (its lease, measured from what it
 * last sent, has run out).
 *
 * Several origins may share one database, and an edge may talk to any of them. What every
 * origin must agree on lives in the database's `edge_leases` table, one row per edge,
 * written by whichever origin hears the edge:
 *
 * - `acked_seq`: what the edge has applied; `live_until`: when the origin that heard it
 *   last stops counting it as live (receipt time + the lease granted, on that origin's wall
 *   clock; an acknowledgement granted nothing leaves it as it was).
 *   Another origin allows `skewMs` more, for clocks that disagree a little.
 * - `state`: `caught_up` while every change answered since the edge last caught up with
 *   the head has waited for it; `lapsed` once an origin answered a change without it;
 *   `behind` for a new edge, and for a lapsed one heard from again. Only a `caught_up` row
 *   earns a lease; a `behind` edge gets there by acknowledging the head as read after its
 *   row was written.
 * - `version`, bumped by every write. An origin answers a change without a quiet edge only
 *   after marking its row `lapsed` by compare-and-set on the version it read (or finding it
 *   `lapsed` already): a renewal that raced with it either came first (the set fails, the
 *   edge is live again) or finds the mark (no lease until caught up). That is why a lease
 *   granted from a row is safe whatever the clocks of the deciding origins said.
 *
 * Edges acknowledging this origin are also kept in memory: their acknowledgements settle
 * waiting changes the moment they arrive, before anything is written, so one origin is as
 * fast as when it kept everything in memory. New events appended by other origins are found
 * by polling (and LISTEN/NOTIFY on PostgreSQL, see event-wake.ts).
 *
 * Bounded waits. Hearing from an edge is not enough to hold changes up: an edge that keeps
 * acknowledging an old sequence would otherwise stall every change for as long as it likes.
 * The origin remembers when it learned of each head it saw within the last lease (lease-grant.ts):
 * a local change when it is published, another origin's when a read of the log finds it,
 * dated back to the start of the previous read that did not (it was committed after that).
 * An acknowledgement of `s` received at `t` is granted a lease ending at
 * `min(t, L) + lease`, where L is when the origin learned of the first event after `s`;
 * none if that is not after `t`. The answer carries the duration (`lease_ms`), the edge
 * counts it from when it sent the acknowledgement, and both `live_until` and the in-memory
 * record hold the granted end. So a change published at T0 is held by an edge that does not
 * apply it until T0 + lease at most on this origin; on another origin until
 * T0 + lease + the freshness of its head (`freshMs`: an acknowledgement is answered only
 * from a head read that began at most that long before it; the head is polled while edges
 * acknowledge here) + `skewMs`. Then the quiet edge
 * is marked `lapsed` as before and must catch up. An edge that lags by milliseconds gets a
 * lease shorter by as much.
 *
 * The streams themselves, and their back-pressure, are in edge-feed.ts.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { EdgeLease, MetadataStore } from '../core/ports.js';
import { AckBatch } from './ack-batch.js';
import { EdgeFeed } from './edge-feed.js';
import { pollingOnly, type EventWake, type WakeReason } from './event-wake.js';
import { LeaseGrants } from './lease-grant.js';

/** An edge heard by this origin. */
interface LocalEdge {
  id: string;
  /** Monotonic time of the last acknowledgement received. */
  lastHeard: number;
  /** Monotonic time at which the longest lease granted to it ends. */
  leaseEnd: number;
  acked: number;
}

/** The answer to an acknowledgement: whether a lease is granted, for how long from receipt. */
export interface AckAnswer {
  lease: boolean;
  /** Milliseconds of lease granted, counted by the edge from when it sent the acknowledgement; 0 without a lease. */
  lease_ms: number;
  head: number;
}

interface Waiter {
  seq: number;
  /** The lease table as read by a read numbered at least this (begun after the change committed) may settle it. */
  minRead: number;
  resolve(): void;
}

export interface EdgeHubOptions {
  leaseMs: number;
  /** Wake-ups from other origins beyond polling (LISTEN on PostgreSQL). */
  wake?: EventWake;
  /** This origin's name in the lease table; random per process when not given. */
  originId?: string;
  /** How often the database is polled for other origins' events and acknowledgements (default 25 ms). */
  pollMs?: number;
  /**
   * How far origins' wall clocks may disagree: an edge recorded by another origin counts as
   * live this much longer (default a quarter of the lease, at most 250 ms).
   */
  skewMs?: number;
  /** How long a feed stream may stay full before it is dropped (default: the lease). */
  drainMs?: number;
  onError?: (what: string, err: unknown) => void;
}

const mono = (): number => performance.now();
export const DEFAULT_POLL_MS = 25;
/** How long the first acknowledgement of a burst waits for the others before they are written together. */
const ACK_BATCH_MS = 4;

export const defaultSkewMs = (leaseMs: number): number => Math.min(250, Math.floor(leaseMs / 4));

export class EdgeHub {
  readonly originId: string;
  private readonly leaseMs: number;
  private readonly skewMs: number;
  private readonly pollMs: number;
  /** An acknowledgement is granted a lease only from a head read begun at most this long before it. */
  private readonly freshMs: number;
  private readonly wake: EventWake;
  private readonly onError: (what: string, err: unknown) => void;

  private readonly edges = new Map<string, LocalEdge>();
  private readonly feed: EdgeFeed;
  private waiters: Waiter[] = [];
  /** The head, and when each recent part of it was learned. */
  private readonly grants: LeaseGrants;
  private get head(): number {
    return this.grants.head;
  }
  /** Start of the latest completed read of the head: any event above `head` was committed after it. */
  private checkedAt = -Infinity;
  private headRead: Promise<void> | null = null;
  private lastAck = -Infinity;

  /** The lease table as last read, patched by this origin's own writes since. */
  private rows = new Map<string, EdgeLease>();
  /** The number of the read `rows` came from. */
  private rowsRead = 0;
  private readsStarted = 0;
  private reading = false;
  private readAgain = false;
  /** Set by `settle` when a waiting change needs a newer read of the table. */
  private wantRead = false;
  private marking = false;

  private readonly acks: AckBatch;

  private readonly heartbeat: NodeJS.Timeout;
  private pollTimer: NodeJS.Timeout | null = null;
  private wakeTimer: NodeJS.Timeout | null = null;
  private polling = false;
  private lastPrune = 0;
  private closed = false;

  constructor(private readonly meta: MetadataStore, opts: EdgeHubOptions | number) {
    const o: EdgeHubOptions = typeof opts === 'number' ? { leaseMs: opts } : opts;
    this.leaseMs = o.leaseMs;
    this.skewMs = o.skewMs ?? defaultSkewMs(o.leaseMs);
    this.pollMs = o.pollMs ?? DEFAULT_POLL_MS;
    this.freshMs = Math.max(50, this.pollMs * 2);
    this.grants = new LeaseGrants(o.leaseMs, mono);
    this.feed = new EdgeFeed({
      eventsAfter: (seq, limit) => meta.eventsAfter(seq, limit),
      head: () => this.head,
      // Committed after the last head read began, since that read did not see them.
      learned: (seq) => this.grants.learn(seq, this.checkedAt),
      drainMs: o.drainMs ?? o.leaseMs,
    });
    this.acks = new AckBatch(async (acks) => {
      const rows = await meta.recordEdgeAcks(acks);
      for (const r of rows) this.rows.set(r.edge_id, r);
      return rows;
    }, ACK_BATCH_MS);
    this.wake = o.wake ?? pollingOnly;
    this.originId = o.originId ?? randomBytes(9).toString('base64url');
    this.onError = o.onError ?? (() => {});
    // Heartbeats keep edges' watchdogs quiet and carry the head.
    this.heartbeat = setInterval(() => void this.tick(), Math.max(50, Math.floor(this.leaseMs / 4)));
    this.heartbeat.unref();
  }

  async start(): Promise<void> {
    const started = mono();
    this.grants.reset(await this.meta.lastEventSeq());
    this.checkedAt = started;
    this.wake.start((reason) => this.onWake(reason));
  }

  get headSeq(): number {
    return this.head;
  }

  // ---- events: finding them and streaming them ------------------------------------

  private onWake(reason: WakeReason): void {
    if (this.closed) return;
    if (reason === 'events') {
      if (this.feed.size > 0) void this.pollEvents();
    } else if (this.waiters.length > 0) {
      this.readRows();
    }
  }

  /** Edges acknowledged here lately: their leases depend on a head kept fresh. */
  private hearing(): boolean {
    return mono() - this.lastAck < this.leaseMs * 2;
  }

  /** Polls while anything depends on what other origins write: streams to feed, changes waiting, leases to grant. */
  private schedulePoll(): void {
    if (this.closed || this.pollTimer || (this.feed.size === 0 && this.waiters.length === 0 && !this.hearing())) return;
    this.pollTimer = setTimeout(() => {
      this.pollTimer = null;
      void this.poll();
    }, this.pollMs);
    this.pollTimer.unref();
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      if (this.feed.size > 0 || this.hearing()) await this.pollEvents();
      if (this.wantRead) this.readRows();
    } finally {
      this.polling = false;
      this.schedulePoll();
    }
  }

  /** Picks up events other origins appended. */
  private async pollEvents(): Promise<void> {
    try {
      await this.readHead();
    } catch (err) {
      this.onError('reading the event log', err);
    }
  }

  /** Reads the head, one read at a time; new events are dated back to the start of the previous read. */
  private readHead(): Promise<void> {
    this.headRead ??= (async () => {
      try {
        const started = mono();
        const last = await this.meta.lastEventSeq();
        this.grants.learn(last, this.checkedAt);
        this.checkedAt = Math.max(this.checkedAt, started);
      } finally {
        this.headRead = null;
      }
      this.feed.wake(true);
    })();
    return this.headRead;
  }

  private async tick(): Promise<void> {
    await this.pollEvents();
    this.feed.ping();
    const at = mono();
    const horizon = at - this.leaseMs * 20;
    for (const [id, e] of this.edges) if (e.lastHeard < horizon && !this.feed.has(id)) this.edges.delete(id);
    // Rows of edges gone for long; one that comes back starts again as a new edge.
    const wall = Date.now();
    const keep = Math.max(this.leaseMs * 20, 60_000);
    if (wall - this.lastPrune > keep / 2) {
      this.lastPrune = wall;
      this.meta.pruneEdgeLeases(wall - keep).catch((err) => this.onError('pruning the edge lease table', err));
    }
    this.settle();
  }

  /** Streams events after `after` to an edge, then every new one, as Server-Sent Events. */
  attach(edgeId: string, after: number, res: ServerResponse): void {
    this.feed.attach(edgeId, after, res);
    this.schedulePoll();
  }

  /** The open feed streams and the bytes each holds unsent (for operators and tests). */
  feedStreams(): Array<{ edge: string; sent: number; buffered: number }> {
    return this.feed.list();
  }

  // ---- changes waiting for edges -------------------------------------------------

  /** Resolves once every live edge, whichever origin it follows, has applied `seq`. */
  publish(seq: number): Promise<void> {
    this.grants.learn(seq, mono());
    this.feed.wake();
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      // Only a read begun now sees every edge that might not have had this change.
      this.waiters.push({ seq, minRead: this.readsStarted + 1, resolve });
      this.readRows();
      this.schedulePoll();
    });
  }

  /** Reads the lease table, one read at a time; a read asked for meanwhile runs next. */
  private readRows(): void {
    if (this.closed) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    this.wantRead = false;
    void (async () => {
      try {
        do {
          this.readAgain = false;
          const number = ++this.readsStarted;
          try {
            const rows = await this.meta.edgeLeases();
            this.rows = new Map(rows.map((r) => [r.edge_id, r]));
            this.rowsRead = number;
          } catch (err) {
            // Nothing is answered on a failed read; the poll tries again.
            this.onError('reading the edge lease table', err);
            this.wantRead = true;
            break;
          }
          this.settle();
        } while (this.readAgain && !this.closed);
      } finally {
        this.reading = false;
      }
    })();
  }

  private rowLive(row: EdgeLease, wall: number): boolean {
    return wall < row.live_until + (row.origin_id === this.originId ? 0 : this.skewMs);
  }

  /**
   * Answers the waiters nothing holds back any more. An edge holds a change back while it
   * has not acknowledged it and is live: a lease granted by this origin is running (memory),
   * or it is live in the table. An edge whose lease ran out and whose row is not yet
   * `lapsed` is marked first.
   */
  private settle(): void {
    if (this.closed) return;
    const at = mono();
    const wall = Date.now();
    let next = Infinity; // monotonic time at which a live edge runs out
    let remoteWait = false;
    const marks = new Map<string, number>();
    this.waiters = this.waiters.filter((w) => {
      if (this.rowsRead < w.minRead) {
        this.wantRead = true;
        return true;
      }
      let blocked = false;
      for (const e of this.edges.values()) {
        const row = this.rows.get(e.id);
        if (e.acked >= w.seq || (row && row.acked_seq >= w.seq)) continue;
        if (at < e.leaseEnd) {
          blocked = true;
          next = Math.min(next, e.leaseEnd);
        } else if (row && this.rowLive(row, wall)) {
          blocked = remoteWait = true;
        } else if (row && row.state !== 'lapsed') {
          blocked = true;
          marks.set(row.edge_id, row.version);
        }
        // No row: the edge never held a lease that a row did not record, and will have to catch up.
      }
      for (const row of this.rows.values()) {
        if (row.acked_seq >= w.seq || this.edges.has(row.edge_id)) continue;
        if (this.rowLive(row, wall)) {
          blocked = remoteWait = true;
        } else if (row.state !== 'lapsed') {
          blocked = true;
          marks.set(row.edge_id, row.version);
        }
      }
      if (!blocked) w.resolve();
      return blocked;
    });
    // Rows of other origins change only in the database: read again while one holds a change back.
    if (remoteWait) this.wantRead = true;
    if (this.wantRead) this.schedulePoll();
    if (marks.size > 0) void this.mark(marks);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    if (next < Infinity) {
      this.wakeTimer = setTimeout(() => this.settle(), Math.max(1, Math.ceil(next - at) + 1));
      this.wakeTimer.unref();
    }
  }

  /** Marks quiet edges' rows lapsed (compare-and-set); a row that changed meanwhile is read again. */
  private async mark(marks: Map<string, number>): Promise<void> {
    if (this.marking) return;
    this.marking = true;
    let all = false;
    try {
      const wanted = [...marks].map(([edge_id, version]) => ({ edge_id, version }));
      const done = new Set(await this.meta.markEdgesLapsed(wanted));
      for (const m of wanted) {
        const row = this.rows.get(m.edge_id);
        if (done.has(m.edge_id) && row && row.version === m.version) this.rows.set(m.edge_id, { ...row, state: 'lapsed', version: m.version + 1 });
      }
      all = done.size === wanted.length;
    } catch (err) {
      this.onError('marking quiet edges', err);
    } finally {
      this.marking = false;
    }
    if (all) this.settle();
    else {
      this.wantRead = true;
      this.schedulePoll();
    }
  }

  // ---- acknowledgements ---------------------------------------------------------------

  /**
   * Records an acknowledgement and answers whether the edge holds a lease, and for how long.
   * It settles waiting changes at once. The length is bounded by how long this origin has
   * known of events the edge has not applied (lease-grant.ts); the lease is granted only from the
   * row as written: `caught_up`, or `behind` with everything up to the head read after the
   * write applied.
   */
  async ack(edgeId: string, seq: number): Promise<AckAnswer> {
    const at = mono();
    const wall = Date.now();
    let e = this.edges.get(edgeId);
    if (!e) {
      e = { id: edgeId, lastHeard: at, leaseEnd: 0, acked: seq };
      this.edges.set(edgeId, e);
    }
    e.lastHeard = at;
    if (seq > e.acked) e.acked = seq;
    this.lastAck = at;
    this.schedulePoll();
    this.settle();
    const none = (): AckAnswer => ({ lease: false, lease_ms: 0, head: this.head });
    if (this.closed) return none();
    try {
      // A head this origin has not looked at lately could hide events the edge lacks.
      while (this.checkedAt < at - this.freshMs) await this.readHead();
    } catch (err) {
      this.onError('reading the event log', err);
      return none();
    }
    const grant = this.grants.grant(seq, at);
    e.leaseEnd = Math.max(e.leaseEnd, at + grant);
    let row: EdgeLease;
    try {
      // No lease granted leaves `live_until` where it was (the store keeps the larger).
      row = await this.acks.record({ edge_id: edgeId, origin_id: this.originId, acked_seq: seq, heard_at: wall, live_until: grant > 0 ? wall + grant : 0 });
    } catch (err) {
      this.onError('recording an acknowledgement', err);
      return none();
    }
    const granted = (): AckAnswer => (grant > 0 ? { lease: true, lease_ms: grant, head: this.head } : none());
    if (row.state === 'caught_up') return granted();
    try {
      // Read after the row was written: a change answered without this edge is at or below it.
      const written = mono();
      while (this.checkedAt < written) await this.readHead();
      if (row.acked_seq >= this.head && (await this.meta.markEdgeCaughtUp(edgeId, row.version))) {
        this.rows.set(edgeId, { ...row, state: 'caught_up', version: row.version + 1 });
        return granted();
      }
      return none();
    } catch (err) {
      this.onError('catching an edge up', err);
      return none();
    }
  }

  // ---- shutdown ----------------------------------------------------------------------

  /** Ends the edges' streams, so a shutdown is not held open by them; waiters still wait. */
  endStreams(): void {
    this.feed.end();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.acks.close();
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
    this.feed.end();
    await this.wake.close();
  }
}
