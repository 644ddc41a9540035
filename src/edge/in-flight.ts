/**
 * Responses under way and the rule that keeps them honest: before each chunk a response
 * asks whether its file may still be served to it. With a lease the edge's own state
 * answers at once; without one the origin is asked, so a response never runs on a
 * decision the origin has not confirmed since its last chunk. A change that narrows what
 * may be served also cuts the responses it forbids before the edge acknowledges it,
 * dropping whatever they still had queued.
 */
import type http from 'node:http';

export interface InFlight {
  res: http.ServerResponse;
  fileId: string;
  sha256: string;
  path: string;
  query: string;
  /** The request's own time: a link valid when the response began is not cut when it expires. */
  nowSeconds: number;
  /** Set while the decision that let the response begin is still the latest word. */
  fresh?: boolean;
}

export interface Verdicts {
  /** From the edge's state while it holds a lease; null without one. */
  local(entry: InFlight): boolean | null;
  /** From the origin, for an edge without a lease. */
  remote(entry: InFlight): Promise<boolean>;
}

export class InFlightResponses {
  private readonly live = new Set<InFlight>();

  constructor(private readonly verdicts: Verdicts) {}

  get size(): number {
    return this.live.size;
  }

  /** Registers a response about to get its first byte; returns the gate its chunks pass. */
  track(entry: InFlight): () => boolean | Promise<boolean> {
    this.live.add(entry);
    entry.fresh = true;
    entry.res.once('close', () => this.live.delete(entry));
    return () => this.allowed(entry);
  }

  allowed(entry: InFlight): boolean | Promise<boolean> {
    if (entry.res.destroyed) return false;
    const local = this.verdicts.local(entry);
    if (local !== null) {
      entry.fresh = false;
      return local;
    }
    // The origin was asked just before the first byte; every later chunk asks again.
    if (entry.fresh) {
      entry.fresh = false;
      return true;
    }
    return this.verdicts.remote(entry).catch(() => false);
  }

  /** After a change that may narrow what is served: stop every response it forbids. */
  narrowed(): void {
    for (const entry of this.live) {
      if (this.verdicts.local(entry) === false) {
        this.live.delete(entry);
        entry.res.destroy();
      }
    }
  }
}
