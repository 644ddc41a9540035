/**
 * Edges' acknowledgements and the leases they earn (the rules are in the header of hub.ts).
 * An acknowledgement settles waiting changes the moment it arrives, then is written to the
 * lease table in a batch with others (ack-batch.ts); the lease is granted only from the row
 * as written.
 */
import type { Clock } from '../core/clock.js';
import type { EdgeLease, MetadataStore } from '../core/ports.js';
import { AckBatch } from './ack-batch.js';
import type { EventHead } from './head.js';
import type { LocalEdge, PublishWait } from './publish-wait.js';

/** The answer to an acknowledgement: whether a lease is granted, for how long from receipt. */
export interface AckAnswer {
  lease: boolean;
  /** Milliseconds of lease granted, counted by the edge from when it sent the acknowledgement; 0 without a lease. */
  lease_ms: number;
  head: number;
}

/** How long the first acknowledgement of a burst waits for the others before they are written together. */
const ACK_BATCH_MS = 4;

export interface EdgeLeasesOptions {
  meta: Pick<MetadataStore, 'recordEdgeAcks' | 'markEdgeCaughtUp' | 'pruneEdgeLeases'>;
  clock: Clock;
  leaseMs: number;
  originId: string;
  /** An acknowledgement is granted a lease only from a head read begun at most this long before it. */
  freshMs: number;
  head: EventHead;
  wait: PublishWait;
  /** The edges heard here, shared with `wait`. */
  edges: Map<string, LocalEdge>;
  /** Keeps polling going while edges acknowledge here. */
  schedulePoll(): void;
  onError(what: string, err: unknown): void;
}

export class EdgeLeases {
  private readonly acks: AckBatch;
  private lastAck = -Infinity;
  private lastPrune = 0;
  private closed = false;

  constructor(private readonly o: EdgeLeasesOptions) {
    this.acks = new AckBatch(async (acks) => {
      const rows = await o.meta.recordEdgeAcks(acks);
      for (const r of rows) o.wait.written(r);
      return rows;
    }, ACK_BATCH_MS, o.clock);
  }

  /** Edges acknowledged here lately: their leases depend on a head kept fresh. */
  hearing(): boolean {
    return this.o.clock.monotonic() - this.lastAck < this.o.leaseMs * 2;
  }

  /**
   * Records an acknowledgement and answers whether the edge holds a lease, and for how long.
   * It settles waiting changes at once. The length is bounded by how long this origin has
   * known of events the edge has not applied (lease-grant.ts); the lease is granted only from the
   * row as written: `caught_up`, or `behind` with everything up to the head read after the
   * write applied.
   */
  async ack(edgeId: string, seq: number): Promise<AckAnswer> {
    const { clock, head } = this.o;
    const at = clock.monotonic();
    const wall = clock.now();
    const e = this.heard(edgeId, seq, at);
    this.o.schedulePoll();
    this.o.wait.settle();
    const none = (): AckAnswer => ({ lease: false, lease_ms: 0, head: head.seq });
    if (this.closed) return none();
    try {
      // A head this origin has not looked at lately could hide events the edge lacks.
      await head.readSince(at - this.o.freshMs);
    } catch (err) {
      this.o.onError('reading the event log', err);
      return none();
    }
    const grant = head.grant(seq, at);
    e.leaseEnd = Math.max(e.leaseEnd, at + grant);
    let row: EdgeLease;
    try {
      // No lease granted leaves `live_until` where it was (the store keeps the larger).
      row = await this.acks.record({ edge_id: edgeId, origin_id: this.o.originId, acked_seq: seq, heard_at: wall, live_until: grant > 0 ? wall + grant : 0 });
    } catch (err) {
      this.o.onError('recording an acknowledgement', err);
      return none();
    }
    const granted = (): AckAnswer => (grant > 0 ? { lease: true, lease_ms: grant, head: head.seq } : none());
    if (row.state === 'caught_up') return granted();
    try {
      return (await this.catchUp(row)) ? granted() : none();
    } catch (err) {
      this.o.onError('catching an edge up', err);
      return none();
    }
  }

  private heard(edgeId: string, seq: number, at: number): LocalEdge {
    let e = this.o.edges.get(edgeId);
    if (!e) {
      e = { id: edgeId, lastHeard: at, leaseEnd: 0, acked: seq };
      this.o.edges.set(edgeId, e);
    }
    e.lastHeard = at;
    if (seq > e.acked) e.acked = seq;
    this.lastAck = at;
    return e;
  }

  /** A `behind` row becomes `caught_up` when it has the head as read after the row was written. */
  private async catchUp(row: EdgeLease): Promise<boolean> {
    // Read after the row was written: a change answered without this edge is at or below it.
    await this.o.head.readSince(this.o.clock.monotonic());
    if (row.acked_seq < this.o.head.seq || !(await this.o.meta.markEdgeCaughtUp(row.edge_id, row.version))) return false;
    this.o.wait.written({ ...row, state: 'caught_up', version: row.version + 1 });
    return true;
  }

  /** Forgets edges not heard from for long (and without a stream here); prunes their rows now and then. */
  prune(streaming: (edgeId: string) => boolean): void {
    const horizon = this.o.clock.monotonic() - this.o.leaseMs * 20;
    for (const [id, e] of this.o.edges) if (e.lastHeard < horizon && !streaming(id)) this.o.edges.delete(id);
    // Rows of edges gone for long; one that comes back starts again as a new edge.
    const wall = this.o.clock.now();
    const keep = Math.max(this.o.leaseMs * 20, 60_000);
    if (wall - this.lastPrune > keep / 2) {
      this.lastPrune = wall;
      this.o.meta.pruneEdgeLeases(wall - keep).catch((err) => this.o.onError('pruning the edge lease table', err));
    }
  }

  close(): void {
    this.closed = true;
    this.acks.close();
  }
}
