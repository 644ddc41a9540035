/**
 * One SHA-256 over a body, for the two that need it: a reader that must check the body's
 * digest (S3's signed payload) and a store that keeps the digest of what it writes. The reader
 * hashes each run it hands on through `pass`; a store that receives those same runs, in order
 * from the body's first byte, takes the relay's state (`stateAt`) instead of hashing them
 * again. Runs are known by identity: a copy or a slice of one is not vouched for.
 */
import { createHash, type Hash } from 'node:crypto';

export class Sha256Relay {
  private readonly hash: Hash = createHash('sha256');
  /** Bytes hashed so far, from the body's first. */
  private hashed = 0;

  /** Hashes `run` and answers it, marked as hashed from this relay's current offset. */
  pass(run: Buffer): Buffer {
    this.hash.update(run);
    passed.set(run, { relay: this, start: this.hashed });
    this.hashed += run.length;
    return run;
  }

  /** The hash of the body's first `offset` bytes, while the relay stands there; else null. */
  stateAt(offset: number): Hash | null {
    return offset === this.hashed ? this.hash.copy() : null;
  }

  /** The hex digest of every byte passed so far; the relay goes on. */
  hex(): string {
    return this.hash.copy().digest('hex');
  }
}

const passed = new WeakMap<Buffer, { relay: Sha256Relay; start: number }>();

/** Which relay hashed `run`, and at which offset of its body the run starts; null if none. */
export function relayOf(run: Buffer): { relay: Sha256Relay; start: number } | null {
  return passed.get(run) ?? null;
}
