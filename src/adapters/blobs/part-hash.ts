/**
 * A part's share of its upload's running SHA-256 (pass-hash.ts) that hashes nothing a reader
 * already hashed: while the part's bytes are runs a body's relay hashed (core/sha256-relay.ts),
 * in order from where the upload's hash stands, it only follows the relay; from the first
 * byte that is not, it hashes for itself, starting from the relay's state.
 */
import type { Hash } from 'node:crypto';
import { relayOf, type Sha256Relay } from '../../core/sha256-relay.js';

/** A hash state as a relay's state at `offset`; relay null: a fresh hash, any relay at 0. */
export interface RelayPoint {
  relay: Sha256Relay | null;
  offset: number;
}

export class PartHash {
  /** Whether runs were followed since `own` was last exact. */
  private moved = false;

  constructor(private own: Hash, private point: RelayPoint | null) {}

  /** Feeds `chunk`; false when the state can no longer be known (the store reads back instead). */
  update(chunk: Buffer): boolean {
    if (this.point) {
      const from = relayOf(chunk);
      if (from && (this.point.relay ?? from.relay) === from.relay && from.start === this.point.offset) {
        this.point = { relay: from.relay, offset: from.start + chunk.length };
        this.moved = true;
        return true;
      }
      const state = this.exact();
      this.point = null;
      if (!state) return false;
      this.own = state;
    }
    this.own.update(chunk);
    return true;
  }

  /** The state over every byte fed so far, or null when the relay has gone past it. */
  private exact(): Hash | null {
    if (!this.moved || !this.point) return this.own;
    return this.point.relay!.stateAt(this.point.offset);
  }

  /** The part's final state, and the relay point it equals (the next part may follow on); null if unknown. */
  finish(): { hash: Hash; point: RelayPoint | null } | null {
    const hash = this.exact();
    return hash ? { hash, point: this.point } : null;
  }
}
