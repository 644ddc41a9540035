/**
 * The SHA-256 of an upload taken while its parts' bytes pass on their way to the disk, for as
 * long as each part is opened in order (tus, S3's PutObject, a client sending one part after
 * the other): complete then reads nothing back. It vouches for a part only by the version
 * (etag) it hashed. A part that cannot be hashed so (opened ahead of order, beside another,
 * or written before its number was known) ends it, and the store reads parts back instead.
 * A state may also be known as a point of a body's relay (part-hash.ts): the next part's bytes,
 * if they are that body's next runs, are then not hashed again.
 */
import { createHash, type Hash } from 'node:crypto';
import { PartHash, type RelayPoint } from './part-hash.js';

export class PassHash {
  /** states[k]: the hash of parts 1..k, whose etags and sizes these are. */
  private readonly states: Hash[] = [createHash('sha256')];
  /** points[k]: the relay point states[k] equals, if one is known. */
  private readonly points: Array<RelayPoint | null> = [{ relay: null, offset: 0 }];
  readonly etags: string[] = [];
  readonly sizes: number[] = [];
  /** The writer hashing the next part, while one is under way. */
  private claimant: object | null = null;

  /**
   * A hash to feed part `n`'s bytes to, from the state after the parts before it; null when
   * it cannot be hashed as it passes. A part sent again starts the prefix over from it.
   */
  claim(n: number, writer: object): PartHash | null {
    if (this.claimant !== null || n > this.etags.length + 1) return null;
    this.states.length = n;
    this.points.length = n;
    this.etags.length = n - 1;
    this.sizes.length = n - 1;
    this.claimant = writer;
    return new PartHash(this.states[n - 1]!.copy(), this.points[n - 1]!);
  }

  /** The claimed part was committed as `etag`; whether its hash joined the prefix. */
  committed(writer: object, hash: PartHash, n: number, etag: string, size: number): boolean {
    if (this.claimant !== writer || this.etags.length !== n - 1) return false;
    this.claimant = null;
    const done = hash.finish();
    if (!done) return false;
    this.states.push(done.hash);
    this.points.push(done.point);
    this.etags.push(etag);
    this.sizes.push(size);
    return true;
  }

  /** The writer is done without a part. */
  release(writer: object): void {
    if (this.claimant === writer) this.claimant = null;
  }

  /** A copy of the state after the first parts of `ordered` it vouches for, with their sizes. */
  prefix(ordered: ReadonlyArray<{ partNumber: number; etag: string }>): { hash: Hash; sizes: number[] } {
    let k = 0;
    while (k < this.etags.length && k < ordered.length && ordered[k]!.partNumber === k + 1 && ordered[k]!.etag === this.etags[k]) k++;
    return { hash: this.states[k]!.copy(), sizes: this.sizes.slice(0, k) };
  }
}
