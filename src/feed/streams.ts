/**
 * The event streams the origin feeds its edges: Server-Sent Events of every change after the
 * sequence an edge asked from, then every new one, with pings that carry the head.
 *
 * Back-pressure. A stream is written to only after it drained, and one that does not drain
 * within `drainMs` is destroyed: the edge drops its lease, reconnects and catches up.
 * Heartbeats are not written to a stream that is full.
 *
 * A change wakes every stream at once, all at the same sequence: they share one read of the
 * log and one text, so a fan-out to N edges costs one query, not N.
 *
 * Settled lines. Once a completion has been acknowledged by every live edge, each stream that
 * sent it gets one `settled` line: the edges fetch the new bytes only then, so their fills do
 * not compete with the acknowledgements that completion waits for.
 */
import type { ServerResponse } from 'node:http';
import type { Clock } from '../core/clock.js';
import type { StoredEvent } from '../core/ports.js';

const BATCH = 500;
/** Completions remembered for a settled line at most (the oldest is forgotten first). */
const MAX_UNANNOUNCED = 4096;

interface Stream {
  edgeId: string;
  res: ServerResponse;
  sent: number;
  pumping: boolean;
  again: boolean;
  /** When anything was last written to it (clock.monotonic). */
  wroteAt: number;
}

export interface FeedStreamsOptions {
  eventsAfter(seq: number, limit: number): Promise<StoredEvent[]>;
  /** The latest sequence the origin knows of. */
  head(): number;
  /** Told of every sequence read from the log for a stream (it may be news to the origin). */
  learned(seq: number): void;
  drainMs: number;
  /** A stream is pinged only once nothing was written to it for this long (default: always). */
  quietMs?: number;
  clock: Clock;
}

interface Batch {
  events: StoredEvent[];
  text: string;
}

export class FeedStreams {
  private readonly streams = new Set<Stream>();
  /** The same streams by edge (an edge reconnecting may briefly have two). */
  private readonly byEdge = new Map<string, Set<Stream>>();
  /** Reads under way, by the sequence they read after and the head when they began. */
  private readonly reads = new Map<string, Promise<Batch>>();
  /**
   * Completions (`file.ready`) read from the log and not yet announced, and the newest sequence
   * announced settled. Each is kept, not only the newest: one read before an older completion
   * settles must not cost that older one its line.
   */
  private readonly unannounced = new Set<number>();
  private settledSeq = 0;

  constructor(private readonly o: FeedStreamsOptions) {}

  get size(): number {
    return this.streams.size;
  }

  /** Whether an edge has a stream open here. */
  has(edgeId: string): boolean {
    return this.byEdge.has(edgeId);
  }

  /** Streams events after `after` to an edge, then every new one. */
  attach(edgeId: string, after: number, res: ServerResponse): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    const stream: Stream = { edgeId, res, sent: after, pumping: false, again: false, wroteAt: this.o.clock.monotonic() };
    this.streams.add(stream);
    let own = this.byEdge.get(edgeId);
    if (!own) this.byEdge.set(edgeId, (own = new Set()));
    own.add(stream);
    res.on('close', () => {
      this.streams.delete(stream);
      own.delete(stream);
      if (own.size === 0 && this.byEdge.get(edgeId) === own) this.byEdge.delete(edgeId);
    });
    void this.pump(stream);
  }

  /**
   * Answers an edge's streamed acknowledgement `n` on its feed (ack-stream.ts): it also keeps
   * the stream from going silent, so no ping is due after it. A full stream is skipped: the
   * edge, hearing nothing, asks again with a request of its own.
   */
  answer(edgeId: string, n: number, answer: object): void {
    const own = this.byEdge.get(edgeId);
    if (!own) return;
    const text = `event: lease\ndata: ${JSON.stringify({ n, ...answer })}\n\n`;
    const now = this.o.clock.monotonic();
    for (const s of own) {
      if (s.res.destroyed || s.res.writableNeedDrain) continue;
      s.res.write(text);
      s.wroteAt = now;
    }
  }

  /** Sends what is new to every stream (all of them, or only those behind the head). */
  wake(behindOnly = false): void {
    const head = this.o.head();
    for (const s of this.streams) if (!behindOnly || s.sent < head) void this.pump(s);
  }

  /**
   * Pings every stream that is idle, up to date, not full and quiet for `quietMs`: a ping only
   * keeps a silent stream's watchdog quiet, so one written to lately needs none. All of them
   * get the one text.
   */
  ping(): void {
    const head = this.o.head();
    const now = this.o.clock.monotonic();
    const quietSince = now - (this.o.quietMs ?? 0);
    let text: string | null = null;
    for (const s of this.streams) {
      if (s.sent < head || s.pumping || s.wroteAt > quietSince || s.res.writableNeedDrain) continue;
      text ??= `event: ping\ndata: {"head":${head}}\n\n`;
      s.res.write(text);
      s.wroteAt = now;
    }
  }

  /**
   * Tells every stream that sent `seq` that all changes up to it are acknowledged fleet-wide,
   * when a completion not yet announced is among them. A full stream is skipped: its edge
   * starts its fills on its own deadline instead.
   */
  settled(seq: number): void {
    if (seq <= this.settledSeq) return;
    let any = false;
    for (const s of this.unannounced) {
      if (s > seq) continue;
      any = true;
      this.unannounced.delete(s);
    }
    if (!any) return;
    this.settledSeq = seq;
    const text = `event: settled\ndata: {"seq":${seq}}\n\n`;
    const now = this.o.clock.monotonic();
    for (const s of this.streams) {
      if (s.sent < seq || s.res.destroyed || s.res.writableNeedDrain) continue;
      s.res.write(text);
      s.wroteAt = now;
    }
  }

  /**
   * Notes a completion to announce. Bounded: completions published through other origins are
   * never settled here, and one forgotten only leaves its edges to their own deadline.
   */
  private remember(seq: number): void {
    this.unannounced.add(seq);
    if (this.unannounced.size > MAX_UNANNOUNCED) this.unannounced.delete(this.unannounced.values().next().value!);
  }

  /** The open streams and the bytes each holds unsent (for operators and tests). */
  list(): Array<{ edge: string; sent: number; buffered: number }> {
    return [...this.streams].map((s) => ({ edge: s.edgeId, sent: s.sent, buffered: s.res.writableLength }));
  }

  /** Ends every stream, so a shutdown is not held open by them. */
  end(): void {
    for (const s of this.streams) s.res.end();
    this.streams.clear();
    this.byEdge.clear();
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
        let sent = false;
        for (;;) {
          const { events, text } = await this.read(s.sent);
          if (events.length === 0 || s.res.destroyed) break;
          s.sent = events[events.length - 1]!.seq;
          this.o.learned(s.sent);
          if (!(await this.send(s, text))) return;
          sent = true;
        }
        // Changes up to the head need no ping after them: the edge acknowledges them, and the
        // answer carries the head. Not waking every edge twice per change keeps a fan-out cheap.
        const head = this.o.head();
        if ((!sent || s.sent < head) && !(await this.send(s, `event: ping\ndata: {"head":${head}}\n\n`))) return;
      } while (s.again);
    } catch {
      s.res.destroy();
    } finally {
      s.pumping = false;
    }
  }

  /**
   * The events after `after` as sent, shared by every stream reading from there while the head
   * is the same: the head moves only after a commit, so a read begun at this head sees all it
   * announced, and a stream woken by a newer head reads again.
   */
  private read(after: number): Promise<Batch> {
    const key = `${after}:${this.o.head()}`;
    let batch = this.reads.get(key);
    if (batch === undefined) {
      batch = this.o.eventsAfter(after, BATCH).then((events) => {
        let text = '';
        for (const ev of events) {
          if (ev.type === 'file.ready' && ev.seq > this.settledSeq) this.remember(ev.seq);
          text += `id: ${ev.seq}\nevent: change\ndata: ${JSON.stringify({ seq: ev.seq, type: ev.type, data: ev.data })}\n\n`;
        }
        return { events, text };
      });
      this.reads.set(key, batch);
      const forget = () => this.reads.delete(key);
      batch.then(forget, forget);
    }
    return batch;
  }

  /** Writes to a stream, waiting for it to drain; false once the stream is gone (dropped if it stays full). */
  private send(s: Stream, text: string): Promise<boolean> {
    const res = s.res;
    // Ended (the origin shutting down) under a read: a write now would throw write-after-end.
    if (res.destroyed || res.writableEnded) return Promise.resolve(false);
    s.wroteAt = this.o.clock.monotonic();
    if (res.write(text)) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        this.o.clock.clearTimeout(timer);
        res.off('drain', onDrain);
        res.off('close', onClose);
        resolve(ok);
      };
      const onDrain = () => done(true);
      const onClose = () => done(false);
      const timer = this.o.clock.setTimeout(() => {
        res.destroy();
        done(false);
      }, this.o.drainMs);
      timer.unref?.();
      res.on('drain', onDrain);
      res.on('close', onClose);
    });
  }
}
