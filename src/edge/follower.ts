/**
 * Follows the origin's event log. The edge holds a lease while the origin answers its
 * acknowledgements with one: the lease runs for the `lease_ms` granted from when the
 * acknowledgement was sent, so the origin, which counts from when it received it, never
 * stops waiting for this edge before the edge has stopped serving from its cache. A
 * stream that goes silent (a partition drops packets without closing anything) is given
 * up after one lease and opened again.
 */
import type http from 'node:http';
import { randomBytes } from 'node:crypto';
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import { AckSender, type LeaseAnswer } from './ack-sender.js';
import type { OriginClient } from './origin-client.js';
import type { EdgeState, FeedEvent, Snapshot } from './state.js';

export interface FollowerOptions {
  origin: OriginClient;
  token: string;
  leaseMs: number;
  state: EdgeState;
  onError?: (what: string, err: unknown) => void;
  /** Leases, heartbeats, deadlines and retries run on it (default: the system's). */
  clock?: Clock;
}

export class FeedFollower {
  readonly edgeId = randomBytes(9).toString('base64url');
  private leaseUntil = 0;
  /** Counts feed streams; an answer to an acknowledgement sent on an earlier one grants nothing. */
  private epoch = 0;
  private head = 0;
  /** The newest sequence the origin has announced (metrics: lag = this − applied). */
  get announcedHead(): number {
    return this.head;
  }
  private request: http.ClientRequest | null = null;
  /** Whether the feed stream answered 200 and is still open. */
  private feedOpen = false;
  private lastData = 0;
  /** How acknowledgements travel: streamed, or one request each (ack-sender.ts). */
  private readonly acks: AckSender;
  /** Until when (monotonic) the edge renews at every beat: a change or a late answer came before it. */
  private busyUntil = -Infinity;
  /** The newest sequence the origin said every live edge has (its `settled` lines). */
  private settledSeq = 0;
  private afterSettles: Array<{ seq: number; run(): void }> = [];
  private stopped = false;
  private readonly agent: http.Agent;
  private timer: TimerHandle | null = null;
  private readonly tickListeners: Array<() => void> = [];
  /** Ticks since the last beat. */
  private ticks = 0;
  private readonly clock: Clock;
  private caughtUpResolve: (() => void) | null = null;
  readonly caughtUp: Promise<void>;

  constructor(private readonly opts: FollowerOptions) {
    this.clock = opts.clock ?? systemClock;
    this.agent = opts.origin.agent({ keepAlive: true, maxSockets: 4 });
    this.acks = new AckSender({
      origin: opts.origin, token: opts.token, edgeId: this.edgeId, leaseMs: opts.leaseMs, clock: this.clock, agent: this.agent,
      seq: () => this.opts.state.seq,
      epoch: () => this.epoch,
      feedOpen: () => this.feedOpen,
      answered: (answer, sentAt, epoch) => this.answered(answer, sentAt, epoch),
    });
    this.caughtUp = new Promise((resolve) => {
      this.caughtUpResolve = resolve;
    });
  }

  /** True while the edge may answer from its cache without asking the origin. */
  serving(): boolean {
    return this.clock.monotonic() < this.leaseUntil;
  }

  async start(): Promise<void> {
    const snapshot = await this.retry(() => this.getJson<Snapshot>('/_edge/snapshot'));
    this.opts.state.load(snapshot);
    this.connect();
    // One timer for all of an edge's periodic work (docs/edge.md, "The lease"): it ticks at the
    // beat, or each second when the beat is longer; the lease's own work runs once a beat.
    const ticksPerBeat = Math.round(this.beatMs / this.tickMs);
    this.timer = this.clock.setInterval(() => this.tick(ticksPerBeat), this.tickMs);
    this.timer.unref?.();
    await this.caughtUp;
  }

  /** The interval of the edge's beat: a fifth of the lease. */
  get beatMs(): number {
    return Math.max(20, Math.floor(this.opts.leaseMs / 5));
  }

  /** The interval of the edge's timer: the beat, at most a second. */
  get tickMs(): number {
    return Math.min(this.beatMs, MAX_TICK_MS);
  }

  /** Runs `fn` at every tick (the beat, at most a second apart), after the lease's own work, until the follower stops. */
  onTick(fn: () => void): void {
    this.tickListeners.push(fn);
  }

  private tick(ticksPerBeat: number): void {
    if (++this.ticks >= ticksPerBeat) {
      this.ticks = 0;
      this.beat();
    }
    this.watch();
    for (const fn of this.tickListeners) {
      try {
        fn();
      } catch (err) {
        this.opts.onError?.('periodic work', err);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    this.clock.clearInterval(this.timer ?? undefined);
    this.acks.stop();
    this.request?.destroy();
    this.agent.destroy();
  }

  /** Runs `fn` once an acknowledgement sent after this call is through, or after `maxMs` (ack-sender.ts). */
  afterAck(fn: () => void, maxMs = 250): void {
    this.acks.afterAck(fn, maxMs);
  }

  /**
   * Runs `fn` once the origin says every live edge has applied `seq` (a `settled` line), or
   * after `maxMs`: a new file's fill then does not compete with the acknowledgements its
   * completion waits for. The bound covers an origin that sends no such line (the change came
   * through another origin, or this stream was full).
   */
  afterSettled(seq: number, fn: () => void, maxMs = SETTLE_WAIT_MS): void {
    if (seq <= this.settledSeq) {
      fn();
      return;
    }
    let ran = false;
    const run = () => {
      if (ran) return;
      ran = true;
      this.clock.clearTimeout(timer);
      this.afterSettles = this.afterSettles.filter((a) => a.run !== run);
      fn();
    };
    const timer = this.clock.setTimeout(run, maxMs);
    timer.unref?.();
    this.afterSettles.push({ seq, run });
  }

  private settle(seq: number): void {
    if (seq <= this.settledSeq) return;
    this.settledSeq = seq;
    for (const a of this.afterSettles.filter((w) => w.seq <= seq)) a.run();
  }

  private async retry<T>(fn: () => Promise<T>): Promise<T> {
    for (let delay = 100; ; delay = Math.min(2000, delay * 2)) {
      try {
        return await fn();
      } catch (err) {
        if (this.stopped) throw err;
        this.opts.onError?.('reaching the origin', err);
        await new Promise<void>((r) => this.clock.setTimeout(r, delay));
      }
    }
  }

  private headers(): http.OutgoingHttpHeaders {
    return { authorization: `Bearer ${this.opts.token}` };
  }

  getJson<T>(path: string, timeoutMs = 30_000, agent: http.Agent = this.agent): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // The deadline covers the whole exchange, including waiting for a socket.
      const deadline = this.clock.setTimeout(() => req.destroy(new Error('origin did not answer in time')), timeoutMs);
      const req = this.opts.origin.get(path, { headers: this.headers(), agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) reject(Object.assign(new Error(`origin answered ${res.statusCode}: ${text.slice(0, 200)}`), { status: res.statusCode }));
          else {
            try {
              resolve(JSON.parse(text) as T);
            } catch (err) {
              reject(err);
            }
          }
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.on('close', () => this.clock.clearTimeout(deadline));
    });
  }

  private connect(): void {
    if (this.stopped) return;
    const path = `/_edge/feed?after=${this.opts.state.seq}&edge=${this.edgeId}`;
    this.lastData = this.clock.monotonic();
    const req = this.opts.origin.get(path, { headers: { ...this.headers(), accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        req.destroy(new Error(`feed answered ${res.statusCode}`));
        return;
      }
      this.feedOpen = true;
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (text: string) => {
        this.lastData = this.clock.monotonic();
        buffer += text;
        let end: number;
        let applied = false;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          applied = this.handle(block) || applied;
        }
        if (applied) this.acks.send(this.leaseLow());
      });
    });
    req.on('error', () => {});
    req.on('close', () => {
      if (this.request === req) this.request = null;
      this.feedOpen = false;
      // Whatever ended the stream (an origin restart among others), trust nothing cached until caught up again.
      this.leaseUntil = 0;
      this.epoch++;
      this.acks.reset();
      if (!this.stopped) this.clock.setTimeout(() => this.connect(), 100).unref?.();
    });
    this.request = req;
  }

  /** Applies one server-sent block; true when it asks for an acknowledgement. */
  private handle(block: string): boolean {
    let event = 'message';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data += line.slice(5).trim();
    }
    try {
      if (event === 'change') {
        this.opts.state.apply(JSON.parse(data) as FeedEvent);
        this.stayBusy();
        return true;
      }
      if (event === 'lease') {
        // Unreadable, it answers nothing: the renewal goes unanswered and is asked again by request.
        this.acks.answer(parseOrNull(data));
        return false;
      }
      if (event === 'settled') {
        this.settle(settledSeqOf(data, this.opts.state.seq));
        return false;
      }
      if (event === 'ping') {
        const head = (JSON.parse(data) as { head: number }).head;
        if (head > this.head) this.head = head;
        return this.opts.state.seq >= this.head && !this.serving();
      }
    } catch (err) {
      this.opts.onError?.('reading the feed', err);
      this.request?.destroy();
    }
    return false;
  }

  /** A silent stream is as good as none: drop it and stop serving from cache until renewed. */
  private watch(): void {
    if (this.request && this.clock.monotonic() - this.lastData > this.opts.leaseMs) this.request.destroy();
  }

  /**
   * A beat (a fifth of the lease) renews the lease once less than RENEW_AT of it is left, or
   * none is held, or something applied went unacknowledged: every second beat, with 3/5 still
   * to run. For BUSY_LEASES leases after a change (its fills and first requests load the
   * machine) or after an answer that came late (something else does), it renews at every beat,
   * with 4/5 to spare. The lease is what the origin granted, counted from the sending, as before.
   */
  private beat(): void {
    const now = this.clock.monotonic();
    if (now < this.busyUntil || needsRenewal(now, this.leaseUntil, this.opts.leaseMs, this.acks.ackedSeq, this.opts.state.seq)) this.acks.send(true);
  }

  /** Renews at every beat for BUSY_LEASES leases from now. */
  private stayBusy(): void {
    this.busyUntil = Math.max(this.busyUntil, this.clock.monotonic() + this.opts.leaseMs * BUSY_LEASES);
  }

  /** Whether less than RENEW_AT of a lease is left: an acknowledgement then asks for a renewal. */
  private leaseLow(): boolean {
    return this.leaseUntil - this.clock.monotonic() <= this.opts.leaseMs * RENEW_AT;
  }

  /** The origin's answer to an acknowledgement sent at `sentAt` while feed stream `epoch` was open. */
  private answered(answer: LeaseAnswer, sentAt: number, epoch: number): void {
    if (this.clock.monotonic() - sentAt > this.opts.leaseMs * LATE_ANSWER) this.stayBusy();
    if (typeof answer.head === 'number' && answer.head > this.head) this.head = answer.head;
    // The origin bounds the lease by how long it has known of events this edge lacks.
    const granted = typeof answer.lease_ms === 'number' ? Math.min(answer.lease_ms, this.opts.leaseMs) : this.opts.leaseMs;
    if (answer.lease === true && granted > 0 && epoch === this.epoch) {
      this.leaseUntil = Math.max(this.leaseUntil, sentAt + granted);
      this.caughtUpResolve?.();
      this.caughtUpResolve = null;
    }
  }
}

/**
 * The sequence a `settled` line names, as far as this edge has applied it (the origin writes one
 * only after the changes it covers): 0, which settles nothing, for a line that names no whole
 * sequence. A line is advice on when to fetch, so a garbled one is ignored, never a reason to
 * drop the stream and its lease, and a forged large number cannot settle changes still to come.
 */
export function settledSeqOf(data: string, applied: number): number {
  let seq: unknown;
  try {
    seq = (JSON.parse(data) as { seq?: unknown } | null)?.seq;
  } catch {
    return 0;
  }
  return typeof seq === 'number' && Number.isSafeInteger(seq) && seq > 0 ? Math.min(seq, applied) : 0;
}

function parseOrNull(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return null;
  }
}

/** The longest a new file's fill waits for the origin's `settled` line (the origin holds new bytes as long). */
export const SETTLE_WAIT_MS = 1000;

/** The longest between two ticks of an edge's timer: its state file and compiler check want a second, whatever the lease. */
export const MAX_TICK_MS = 1000;

/** For this many leases after a change, or an answer that came late, an edge renews at every beat. */
export const BUSY_LEASES = 4;

/**
 * An answer later than this share of the lease after its renewal was sent came late. Renewing
 * every second beat leaves an answer 3/5 of the lease; at 200 edges on 2 cores, filling, the
 * slowest took under a tenth (bench/README.md, "2026-11-28 08:00–09:00 UTC: renewals").
 */
export const LATE_ANSWER = 0.1;

/** The share of a lease left at which a beat renews it (between 3/5 and 4/5: every second beat). */
export const RENEW_AT = 0.65;

/** Whether a beat should acknowledge: little or no lease left, or an applied sequence not yet acknowledged. */
export function needsRenewal(now: number, leaseUntil: number, leaseMs: number, ackedSeq: number, seq: number): boolean {
  return leaseUntil - now <= leaseMs * RENEW_AT || ackedSeq !== seq;
}
