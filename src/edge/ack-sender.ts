/**
 * How an edge's acknowledgements reach the origin. By default as JSON lines on one long request
 * (`POST /_edge/acks`, src/feed/ack-stream.ts): a change costs one write, and only a renewal is
 * answered, on the feed (`event: lease`). When that does not work (an older origin, a load
 * balancer that put the feed on another origin, a proxy that gathers request bodies and so
 * never passes a line on, found by a renewal left unanswered), each acknowledgement is a
 * request of its own (`POST /_edge/ack`) answered in its response, and the stream is tried
 * again after STREAM_RETRY_LEASES leases. Either way a lease counts from the sending.
 */
import type http from 'node:http';
import type { Clock, TimerHandle } from '../core/clock.js';
import type { OriginClient } from './origin-client.js';

/** What the origin answers an acknowledgement with (either way). */
export interface LeaseAnswer {
  lease?: unknown;
  lease_ms?: unknown;
  head?: unknown;
}

export interface AckSenderOptions {
  origin: OriginClient;
  token: string;
  edgeId: string;
  leaseMs: number;
  clock: Clock;
  /** The follower's keep-alive agent, for acknowledgements sent one request each. */
  agent: http.Agent;
  /** The sequence applied now: what an acknowledgement carries. */
  seq(): number;
  /** The feed stream's number now: an answer counts only on the stream it was asked on. */
  epoch(): number;
  /** Whether a feed stream is open now: without one the origin has nowhere to answer a streamed renewal. */
  feedOpen(): boolean;
  /** An answer to an acknowledgement sent at `sentAt` (monotonic) while feed stream `epoch` was open. */
  answered(answer: LeaseAnswer, sentAt: number, epoch: number): void;
}

interface Pending {
  sentAt: number;
  epoch: number;
  timer: TimerHandle;
  /** Unanswered in time: acknowledgements went to requests, and an answer still brings them back. */
  late: boolean;
}

/** After falling back to one request each, the stream is tried again after this many leases. */
export const STREAM_RETRY_LEASES = 20;
/** A stream whose renewals keep going unanswered (a proxy gathering bodies) is tried at most this seldom. */
export const MAX_RETRY_LEASES = 720;
/** Bytes written to the stream and not yet taken by the socket at which it counts as stuck. */
const MAX_UNSENT = 16 * 1024;

export class AckSender {
  private stream: http.ClientRequest | null = null;
  /** Until when (monotonic) acknowledgements go one request each. */
  private requestsUntil = 0;
  /** Leases until the stream is tried again after an unanswered renewal: doubles each time one recurs. */
  private retryLeases = STREAM_RETRY_LEASES;
  /** False from a fall back until a renewal is answered on a stream tried again: till then acknowledgements also go by request. */
  private proven = true;
  /** Streamed renewals waiting for their answer on the feed, by number. */
  private readonly pending = new Map<number, Pending>();
  /** Acknowledgements sent so far; work waiting in `afterAck` runs once a later one is through. */
  private sent = 0;
  private afterAcks: Array<{ after: number; run(): void }> = [];
  private inFlight = false;
  private again = false;
  private stopped = false;
  /** The sequence the last acknowledgement sent carried. */
  ackedSeq = -1;

  constructor(private readonly o: AckSenderOptions) {}

  /** How long a renewal may wait for its answer: as long as a request may. */
  private get answerWithinMs(): number {
    return Math.max(100, Math.floor(this.o.leaseMs / 2));
  }

  /** Whether acknowledgements go on the stream now (else one request each). */
  private streaming(): boolean {
    return this.o.clock.monotonic() >= this.requestsUntil;
  }

  /** Acknowledges what is applied now; `renew` asks for a lease (a request is always answered). */
  send(renew: boolean): void {
    if (this.stopped) return;
    // Between two feed streams a renewal streamed would be refused (409) or answered on none.
    if (!this.streaming() || !this.o.feedOpen()) {
      this.requestAck();
      return;
    }
    if (this.proven) {
      this.streamAck(renew);
      return;
    }
    // A stream tried again may still be held by a proxy: one renewal tests it, and until it is
    // answered a change is acknowledged by request too, not left waiting for the test to fail.
    if (!this.probing()) this.streamAck(true);
    this.requestAck();
  }

  /** Whether a streamed renewal is waiting for its answer in time. */
  private probing(): boolean {
    for (const p of this.pending.values()) if (!p.late) return true;
    return false;
  }

  /** An `event: lease` line of the feed: the answer to streamed renewal `n`. */
  answer(data: unknown): void {
    if (data === null || typeof data !== 'object') return;
    const n = (data as { n?: unknown }).n;
    const p = typeof n === 'number' ? this.pending.get(n) : undefined;
    if (!p) return;
    // The origin takes a stream's lines in order: renewals before this one were answered or
    // dropped (it keeps so many waiting), and going unanswered they say nothing of the stream.
    for (const [m, q] of this.pending) {
      if (m > (n as number)) continue;
      this.pending.delete(m);
      this.o.clock.clearTimeout(q.timer);
    }
    this.proven = true;
    this.retryLeases = STREAM_RETRY_LEASES;
    // Answered late: the origin was slow, not a proxy holding the lines. Back to the stream.
    this.requestsUntil = 0;
    this.o.answered(data as LeaseAnswer, p.sentAt, p.epoch);
  }

  /** The feed stream ended: renewals asked on it are answered on none, and the next acknowledgement opens a new stream. */
  reset(): void {
    this.closeStream();
  }

  /**
   * Runs `fn` once an acknowledgement sent after this call is through (written to the stream,
   * or answered), or after `maxMs`: what the edge does for an event (a prefetch) never delays
   * the acknowledgement a completion waits for.
   */
  afterAck(fn: () => void, maxMs = 250): void {
    let ran = false;
    const run = () => {
      if (ran) return;
      ran = true;
      this.o.clock.clearTimeout(timer);
      fn();
    };
    const timer = this.o.clock.setTimeout(run, maxMs);
    timer.unref?.();
    this.afterAcks.push({ after: this.sent, run });
  }

  stop(): void {
    this.stopped = true;
    this.closeStream();
  }

  private through(number: number): void {
    const due = this.afterAcks.filter((a) => a.after < number);
    if (due.length === 0) return;
    this.afterAcks = this.afterAcks.filter((a) => a.after >= number);
    for (const a of due) a.run();
  }

  private streamAck(renew: boolean): void {
    const req = this.stream ?? this.openStream();
    const n = ++this.sent;
    const seq = (this.ackedSeq = this.o.seq());
    if (renew) {
      // Left referenced: Node keeps the list of a cleared unreferenced timer until it would have
      // fired, a wakeup for nothing after every renewal (stop() clears it, so no exit waits on it).
      const timer = this.o.clock.setTimeout(() => this.unanswered(n), this.answerWithinMs);
      this.pending.set(n, { sentAt: this.o.clock.monotonic(), epoch: this.o.epoch(), timer, late: false });
    }
    req.write(`{"n":${n},"seq":${seq}${renew ? ',"renew":true' : ''}}\n`, () => this.through(n));
    if (req.writableLength > MAX_UNSENT) this.fallBack(STREAM_RETRY_LEASES);
  }

  private openStream(): http.ClientRequest {
    const req = this.o.origin.request(`/_edge/acks?edge=${this.o.edgeId}`, {
      method: 'POST',
      // A connection of its own: the stream holds it for as long as it lasts.
      agent: false,
      headers: { authorization: `Bearer ${this.o.token}`, 'content-type': 'application/x-ndjson', 'transfer-encoding': 'chunked' },
    }, (res) => {
      res.resume();
      if (res.statusCode !== 200 && this.stream === req) this.fallBack(STREAM_RETRY_LEASES);
    });
    req.setNoDelay(true);
    req.on('error', () => {});
    // Closed under a renewal, the stream may never carry one: that renewal goes by request.
    req.on('close', () => {
      if (this.stream !== req) return;
      if (this.probing()) this.fallBack(STREAM_RETRY_LEASES);
      else this.closeStream();
    });
    req.flushHeaders();
    this.stream = req;
    return req;
  }

  /**
   * A streamed renewal went unanswered in time: acknowledgements go one request each, for longer
   * each time. The stream stays open, so an origin that was only slow (busy, or starved of CPU)
   * and answers late brings them back to it at once; behind a proxy that holds the lines, no
   * answer comes.
   */
  private unanswered(n: number): void {
    if (this.pending.get(n)?.late !== false) return;
    for (const p of this.pending.values()) {
      this.o.clock.clearTimeout(p.timer);
      p.late = true;
    }
    this.toRequests(this.retryLeases);
    this.retryLeases = Math.min(MAX_RETRY_LEASES, this.retryLeases * 2);
  }

  private fallBack(leases: number): void {
    this.closeStream();
    this.toRequests(leases);
  }

  private toRequests(leases: number): void {
    this.proven = false;
    this.requestsUntil = Math.max(this.requestsUntil, this.o.clock.monotonic() + leases * this.o.leaseMs);
    // Lines the stream may have lost are carried by this one: it names the newest sequence.
    if (!this.stopped) this.requestAck();
  }

  private closeStream(): void {
    for (const p of this.pending.values()) this.o.clock.clearTimeout(p.timer);
    this.pending.clear();
    const req = this.stream;
    this.stream = null;
    req?.destroy();
  }

  /** One acknowledgement as a request, one at a time: one asked for meanwhile follows with the newest sequence. */
  private requestAck(): void {
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.inFlight = true;
    this.again = false;
    const number = ++this.sent;
    const sentAt = this.o.clock.monotonic();
    const epoch = this.o.epoch();
    const seq = (this.ackedSeq = this.o.seq());
    const body = JSON.stringify({ edge: this.o.edgeId, seq });
    let finished = false;
    const finish = (answer?: LeaseAnswer) => {
      if (finished) return;
      finished = true;
      this.inFlight = false;
      if (answer !== null && typeof answer === 'object') this.o.answered(answer, sentAt, epoch);
      if (this.again && !this.stopped) this.send(true);
      this.through(number);
    };
    const req = this.o.origin.request('/_edge/ack', {
      method: 'POST',
      agent: this.o.agent,
      timeout: this.answerWithinMs,
      headers: { authorization: `Bearer ${this.o.token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let answer: LeaseAnswer | undefined;
        try {
          if (res.statusCode === 200) answer = JSON.parse(Buffer.concat(chunks).toString('utf8')) as LeaseAnswer;
        } catch {
          // A garbled answer grants nothing.
        }
        finish(answer);
      });
      res.on('error', () => finish());
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => finish());
    req.end(body);
  }
}
