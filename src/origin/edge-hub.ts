/**
 * The origin's side of the delivery network. Edges follow the event log over a stream,
 * acknowledge what they applied, and hold a lease while they keep acknowledging. A change
 * is answered only once every live edge has acknowledged it, or once an edge that went
 * quiet has certainly stopped serving from its cache (its lease, measured from what it
 * last sent, has run out).
 */
import type { ServerResponse } from 'node:http';
import type { MetadataStore, StoredEvent } from '../core/ports.js';

interface EdgeSession {
  id: string;
  /** Monotonic time of the last acknowledgement received. */
  lastHeard: number;
  acked: number;
  /**
   * Set for a new edge and for one that went quiet for a lease: changes may have been
   * answered without it, so it gets a lease only once it has caught up with the head.
   */
  mustCatchUp: boolean;
}

interface Stream {
  edgeId: string;
  res: ServerResponse;
  sent: number;
  pumping: boolean;
  again: boolean;
}

interface Waiter {
  seq: number;
  resolve(): void;
}

const now = (): number => performance.now();
const BATCH = 500;

export class EdgeHub {
  private readonly edges = new Map<string, EdgeSession>();
  private readonly streams = new Set<Stream>();
  private waiters: Waiter[] = [];
  private head = 0;
  private readonly heartbeat: NodeJS.Timeout;
  private wakeTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly meta: MetadataStore, private readonly leaseMs: number) {
    // Heartbeats keep edges' watchdogs quiet and carry the head; polling also picks up
    // events that another process appended.
    this.heartbeat = setInterval(() => void this.tick(), Math.max(50, Math.floor(leaseMs / 4)));
    this.heartbeat.unref();
  }

  async start(): Promise<void> {
    this.head = await this.meta.lastEventSeq();
  }

  get headSeq(): number {
    return this.head;
  }

  private async tick(): Promise<void> {
    try {
      const last = await this.meta.lastEventSeq();
      if (last > this.head) this.head = last;
    } catch {
      return;
    }
    for (const s of this.streams) {
      if (s.sent < this.head) void this.pump(s);
      else s.res.write(`event: ping\ndata: {"head":${this.head}}\n\n`);
    }
    const horizon = now() - this.leaseMs * 20;
    for (const [id, e] of this.edges) if (e.lastHeard < horizon && ![...this.streams].some((s) => s.edgeId === id)) this.edges.delete(id);
    this.settle();
  }

  private live(e: EdgeSession, at: number): boolean {
    return at - e.lastHeard < this.leaseMs;
  }

  /** Resolves once every live edge has applied `seq`. */
  publish(seq: number): Promise<void> {
    if (seq > this.head) this.head = seq;
    for (const s of this.streams) void this.pump(s);
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.waiters.push({ seq, resolve });
      this.settle();
    });
  }

  /** Answers the waiters no live edge holds back; arms a timer for the first lease to run out. */
  private settle(): void {
    const at = now();
    let nextExpiry = Infinity;
    this.waiters = this.waiters.filter((w) => {
      let blocked = false;
      for (const e of this.edges.values()) {
        if (e.acked >= w.seq || !this.live(e, at)) continue;
        blocked = true;
        nextExpiry = Math.min(nextExpiry, e.lastHeard + this.leaseMs);
      }
      if (!blocked) w.resolve();
      return blocked;
    });
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    if (nextExpiry < Infinity) {
      this.wakeTimer = setTimeout(() => this.settle(), Math.max(1, Math.ceil(nextExpiry - at) + 1));
      this.wakeTimer.unref();
    }
  }

  /**
   * Records an acknowledgement. An edge that has been heard from within every lease since
   * it caught up is waited for by every change, so it keeps its lease even while a burst
   * of changes keeps it a little behind.
   */
  ack(edgeId: string, seq: number): { lease: boolean; head: number } {
    const at = now();
    let e = this.edges.get(edgeId);
    if (!e) {
      e = { id: edgeId, lastHeard: at, acked: seq, mustCatchUp: true };
      this.edges.set(edgeId, e);
    }
    if (!this.live(e, at)) e.mustCatchUp = true;
    e.lastHeard = at;
    if (seq > e.acked) e.acked = seq;
    if (e.mustCatchUp && e.acked >= this.head) e.mustCatchUp = false;
    this.settle();
    return { lease: !e.mustCatchUp, head: this.head };
  }

  /** Streams events after `after` to an edge, then every new one, as Server-Sent Events. */
  attach(edgeId: string, after: number, res: ServerResponse): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    const stream: Stream = { edgeId, res, sent: after, pumping: false, again: false };
    this.streams.add(stream);
    res.on('close', () => this.streams.delete(stream));
    void this.pump(stream);
  }

  private async pump(s: Stream): Promise<void> {
    if (s.pumping) {
      s.again = true;
      return;
    }
    s.pumping = true;
    try {
      do {
        s.again = false;
        for (;;) {
          const events: StoredEvent[] = await this.meta.eventsAfter(s.sent, BATCH);
          if (events.length === 0 || s.res.destroyed) break;
          let text = '';
          for (const ev of events) {
            text += `id: ${ev.seq}\nevent: change\ndata: ${JSON.stringify({ seq: ev.seq, type: ev.type, data: ev.data })}\n\n`;
            if (ev.seq > this.head) this.head = ev.seq;
          }
          s.sent = events[events.length - 1]!.seq;
          s.res.write(text);
        }
        if (!s.res.destroyed) s.res.write(`event: ping\ndata: {"head":${this.head}}\n\n`);
      } while (s.again);
    } catch {
      s.res.destroy();
    } finally {
      s.pumping = false;
    }
  }

  /** Ends the edges' streams, so a shutdown is not held open by them; waiters still wait. */
  endStreams(): void {
    for (const s of this.streams) s.res.end();
    this.streams.clear();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
    for (const s of this.streams) s.res.end();
    this.streams.clear();
  }
}
