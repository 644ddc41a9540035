/**
 * Acknowledgements an edge streams on one long request (`POST /_edge/acks`), one JSON line
 * each: `{"n", "seq", "renew"}`. Each is taken as a `POST /_edge/ack` would be (leases.ts);
 * one that asks to renew is answered on the edge's feed stream (`event: lease` naming its
 * `n`, streams.ts). A change then costs the origin one read per edge instead of a request
 * and its answer, and the edge one wake-up instead of two (docs/edge.md, "The lease").
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface StreamedAck {
  /** The edge's number for this acknowledgement, named again in the answer. */
  n: number;
  seq: number;
  /** Whether the edge wants an answer (a lease); a plain acknowledgement gets none. */
  renew: boolean;
}

/** Renewals of one edge waiting behind the one being taken, at most (the oldest go unanswered). */
const MAX_WAITING_RENEWALS = 32;

interface EdgeTurn {
  /** The newest sequence waiting, or -1 for none. */
  seq: number;
  renewals: number[];
}

/**
 * Takes one edge's acknowledgements one at a time, as its requests were: one that arrives while
 * another is being taken waits, merged with any others waiting (the newest sequence; every
 * renewal answered, each counting its lease from its own sending). Taking two at once could
 * make one's answer miss a catch-up the other just recorded (leases.ts).
 */
export class AckTurns {
  private readonly turns = new Map<string, EdgeTurn>();

  constructor(private readonly take: (edgeId: string, seq: number) => Promise<object>, private readonly answer: (edgeId: string, n: number, answer: object) => void) {}

  push(edgeId: string, { n, seq, renew }: StreamedAck): void {
    const turn = this.turns.get(edgeId);
    if (turn) {
      turn.seq = Math.max(turn.seq, seq);
      if (renew) turn.renewals.push(n);
      if (turn.renewals.length > MAX_WAITING_RENEWALS) turn.renewals.shift();
      return;
    }
    this.turns.set(edgeId, { seq: -1, renewals: [] });
    void this.run(edgeId, seq, renew ? [n] : []);
  }

  private async run(edgeId: string, seq: number, renewals: number[]): Promise<void> {
    for (;;) {
      try {
        const answer = await this.take(edgeId, seq);
        for (const n of renewals) this.answer(edgeId, n, answer);
      } catch {
        // Nothing answered: the edge, hearing nothing, asks again by request.
      }
      const turn = this.turns.get(edgeId)!;
      if (turn.seq < 0 && turn.renewals.length === 0) {
        this.turns.delete(edgeId);
        return;
      }
      seq = Math.max(turn.seq, 0);
      renewals = turn.renewals;
      this.turns.set(edgeId, { seq: -1, renewals: [] });
    }
  }
}

/** The longest line taken: a longer one ends the stream. */
export const MAX_ACK_LINE = 256;

/** One line as an acknowledgement, or null when it is not one. */
export function parseAckLine(line: string): StreamedAck | null {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const { n, seq, renew } = v as Record<string, unknown>;
  const whole = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  if (!whole(n) || !whole(seq) || (renew !== undefined && typeof renew !== 'boolean')) return null;
  return { n, seq, renew: renew === true };
}

/** Splits text as it arrives into acknowledgements; throws on a malformed or overlong line. */
export class AckLines {
  private rest = '';

  push(text: string): StreamedAck[] {
    const out: StreamedAck[] = [];
    let from = 0;
    let end: number;
    let all = this.rest + text;
    while ((end = all.indexOf('\n', from)) >= 0) {
      const line = all.slice(from, end).trim();
      from = end + 1;
      if (line === '') continue;
      if (line.length > MAX_ACK_LINE) throw new Error('an acknowledgement line is too long');
      const ack = parseAckLine(line);
      if (!ack) throw new Error('an acknowledgement line is not {"n", "seq", "renew"}');
      out.push(ack);
    }
    all = all.slice(from);
    if (all.length > MAX_ACK_LINE) throw new Error('an acknowledgement line is too long');
    this.rest = all;
    return out;
  }
}

/**
 * Reads an edge's acknowledgements from `req` until it ends (then answers the end), sends a
 * malformed line or goes silent for `idleMs` (then drops the connection: the edge opens another
 * or falls back to one request each).
 */
export function readAckStream(req: IncomingMessage, res: ServerResponse, onAck: (ack: StreamedAck) => void, idleMs = 30_000): void {
  res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  // An edge renews at least every few beats: a stream silent for longer lost its edge.
  res.socket?.setTimeout(idleMs, () => res.destroy());
  req.setEncoding('utf8');
  const lines = new AckLines();
  req.on('data', (text: string) => {
    let acks: StreamedAck[];
    try {
      acks = lines.push(text);
    } catch {
      res.destroy();
      return;
    }
    for (const ack of acks) onAck(ack);
  });
  req.on('end', () => res.end());
  req.on('error', () => res.destroy());
}
