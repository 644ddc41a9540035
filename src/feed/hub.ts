/**
 * The feed: the origin's side of the delivery network. Edges follow the event log over a stream,
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
 * by polling (polling.ts, and LISTEN/NOTIFY on PostgreSQL, see event-wake.ts).
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
 * Here the parts are put together: the head and when it was learned (head.ts), the streams and
 * their back-pressure (streams.ts), acknowledgements and leases (leases.ts), changes waiting
 * for edges (publish-wait.ts) and polling (polling.ts). Every timer and reading of time goes
 * through the clock given, so tests can move it.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import type { MetadataStore } from '../core/ports.js';
import { AckTurns, readAckStream, type StreamedAck } from './ack-stream.js';
import { pollingOnly, type EventWake, type WakeReason } from './event-wake.js';
import { EdgeFleet } from './fleet.js';
import { EventHead } from './head.js';
import { EdgeLeases, type AckAnswer } from './leases.js';
import { Poller } from './polling.js';
import { PublishWait, type LocalEdge } from './publish-wait.js';
import { FeedStreams } from './streams.js';

export type { AckAnswer } from './leases.js';

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

/** The parts of the metadata store the feed uses. */
export type FeedStore = Pick<MetadataStore,
  'lastEventSeq' | 'eventsAfter' | 'edgeLeases' | 'recordEdgeAcks' | 'markEdgesLapsed' | 'markEdgeCaughtUp' | 'pruneEdgeLeases'
  | 'recordEdgeReport' | 'edgeReports' | 'pruneEdgeReports'>;

export const DEFAULT_POLL_MS = 25;

export const defaultSkewMs = (leaseMs: number): number => Math.min(250, Math.floor(leaseMs / 4));

export class EdgeHub {
  readonly originId: string;
  /** Every edge the store knows, with its last report, for operators (fleet.ts). */
  readonly fleet: EdgeFleet;
  private readonly leaseMs: number;
  private readonly wake: EventWake;
  private readonly onError: (what: string, err: unknown) => void;
  private readonly head: EventHead;
  private readonly streams: FeedStreams;
  private readonly wait: PublishWait;
  private readonly leases: EdgeLeases;
  private readonly poller: Poller;
  private readonly heartbeat: TimerHandle;
  /** Edges' acknowledgement streams open here, dropped at shutdown. */
  private readonly ackStreams = new Set<ServerResponse>();
  /** Streamed acknowledgements, taken one at a time per edge. */
  private readonly ackTurns: AckTurns;
  private closed = false;
  /**
   * Set once endStreams ran (the origin is shutting down): a stream whose request was under way
   * then is refused, or it would hold the server's close (a feed, pinged, for ever).
   */
  private ending = false;

  constructor(private readonly meta: FeedStore, opts: EdgeHubOptions, private readonly clock: Clock = systemClock) {
    this.leaseMs = opts.leaseMs;
    const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
    this.wake = opts.wake ?? pollingOnly;
    this.originId = opts.originId ?? randomBytes(9).toString('base64url');
    const onError = (this.onError = opts.onError ?? (() => {}));
    this.head = new EventHead(meta, opts.leaseMs, clock, () => this.streams.wake(true));
    this.streams = new FeedStreams({
      eventsAfter: (seq, limit) => meta.eventsAfter(seq, limit),
      head: () => this.head.seq,
      learned: (seq) => this.head.readFromLog(seq),
      drainMs: opts.drainMs ?? opts.leaseMs,
      // An edge drops a stream silent for a lease: a ping after 2/5 of one leaves it 3/5 to spare.
      quietMs: Math.floor((opts.leaseMs * 2) / 5),
      clock,
    });
    const schedulePoll = () => this.poller.schedule();
    const edges = new Map<string, LocalEdge>();
    this.wait = new PublishWait({ meta, clock, originId: this.originId, skewMs: opts.skewMs ?? defaultSkewMs(opts.leaseMs), edges, schedulePoll, onError });
    this.leases = new EdgeLeases({
      meta, clock, leaseMs: opts.leaseMs, originId: this.originId, freshMs: Math.max(50, pollMs * 2),
      head: this.head, wait: this.wait, edges, schedulePoll, onError,
    });
    this.poller = new Poller({
      clock, pollMs,
      wanted: () => this.streams.size > 0 || this.wait.waiting > 0 || this.leases.hearing(),
      poll: () => this.poll(),
    });
    this.ackTurns = new AckTurns((edgeId, seq) => this.leases.ack(edgeId, seq), (edgeId, n, answer) => this.streams.answer(edgeId, n, answer));
    this.fleet = new EdgeFleet({ meta, clock, originId: this.originId, head: () => this.head.seq, onError });
    // Heartbeats keep edges' watchdogs quiet and carry the head.
    this.heartbeat = clock.setInterval(() => void this.tick(), Math.max(50, Math.floor(this.leaseMs / 4)));
    this.heartbeat.unref?.();
  }

  async start(): Promise<void> {
    await this.head.start();
    this.wake.start((reason) => this.onWake(reason));
  }

  get headSeq(): number {
    return this.head.seq;
  }

  /** Streams events after `after` to an edge, then every new one, as Server-Sent Events. */
  attach(edgeId: string, after: number, res: ServerResponse): void {
    if (this.ending) {
      res.destroy();
      return;
    }
    this.streams.attach(edgeId, after, res);
    this.poller.schedule();
  }

  /** The open feed streams and the bytes each holds unsent (for operators and tests). */
  feedStreams(): Array<{ edge: string; sent: number; buffered: number }> {
    return this.streams.list();
  }

  /** How many events each edge in the lease table has yet to acknowledge (for metrics). */
  async lag(): Promise<Array<{ edge: string; events: number }>> {
    const head = this.head.seq;
    return (await this.meta.edgeLeases()).map((row) => ({ edge: row.edge_id, events: Math.max(0, head - row.acked_seq) }));
  }

  /** Resolves once every live edge, whichever origin it follows, has applied `seq`. */
  publish(seq: number): Promise<void> {
    this.head.published(seq);
    this.streams.wake();
    if (this.closed) return Promise.resolve();
    const waiting = this.wait.wait(seq);
    this.poller.schedule();
    // Edges fetch a new file's bytes once every live edge has it (streams.ts, settled lines).
    void waiting.then(() => this.streams.settled(seq));
    return waiting;
  }

  /** Resolves once the changes waiting now are acknowledged, or after `limitMs` (bytes of new files wait for it). */
  settled(limitMs: number): Promise<void> {
    return this.wait.settled(limitMs);
  }

  /** Records an acknowledgement; answers whether the edge holds a lease, and for how long (leases.ts). */
  ack(edgeId: string, seq: number): Promise<AckAnswer> {
    return this.leases.ack(edgeId, seq);
  }

  /** Whether an edge follows its feed on this origin (its streamed acknowledgements are answered there). */
  hasStream(edgeId: string): boolean {
    return this.streams.has(edgeId);
  }

  /**
   * Takes an edge's stream of acknowledgements (ack-stream.ts): each is recorded as `ack` records
   * one, and one that asks to renew is answered on the edge's feed stream.
   */
  takeAcks(edgeId: string, req: IncomingMessage, res: ServerResponse): void {
    if (this.closed || this.ending) {
      res.destroy();
      return;
    }
    this.ackStreams.add(res);
    res.on('close', () => this.ackStreams.delete(res));
    readAckStream(req, res, (ack) => this.takeAck(edgeId, ack), Math.max(30_000, 3 * this.leaseMs));
  }

  /** One streamed acknowledgement: recorded as `ack` records one; a renewal is answered on the feed. */
  takeAck(edgeId: string, ack: StreamedAck): void {
    this.ackTurns.push(edgeId, ack);
  }

  private onWake(reason: WakeReason): void {
    if (this.closed) return;
    if (reason === 'events') {
      if (this.streams.size > 0) void this.readHead();
    } else if (this.wait.waiting > 0) {
      this.wait.readRows();
    }
  }

  private async poll(): Promise<void> {
    if (this.streams.size > 0 || this.leases.hearing()) await this.readHead();
    if (this.wait.wantsRead) this.wait.readRows();
  }

  /** Picks up events other origins appended. */
  private async readHead(): Promise<void> {
    try {
      await this.head.read();
    } catch (err) {
      this.onError('reading the event log', err);
    }
  }

  private async tick(): Promise<void> {
    await this.readHead();
    this.streams.ping();
    this.leases.prune((id) => this.streams.has(id));
    this.wait.settle();
  }

  /** Ends the edges' streams, so a shutdown is not held open by them; waiters still wait. */
  endStreams(): void {
    this.ending = true;
    this.streams.end();
    for (const res of this.ackStreams) res.destroy();
    this.ackStreams.clear();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.clock.clearInterval(this.heartbeat);
    this.poller.close();
    this.leases.close();
    this.wait.close();
    this.endStreams();
    await this.wake.close();
  }
}
