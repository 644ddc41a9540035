/**
 * The SHA-256 of an upload taken while its parts' bytes pass on their way to the disk, for as
 * long as each part is opened in order (tus, S3's PutObject, a client sending one part after
 * the other): complete then reads nothing back. It vouches for a part only by the version
 * (etag) it hashed. A part that cannot be hashed so (opened ahead of order, beside another,
 * or written before its number was known) ends it, and the store reads parts back instead.
 */
import { createHash, type Hash } from 'node:crypto';

export class PassHash {
  /** states[k]: the hash of parts 1..k, whose etags and sizes these are. */
  private readonly states: Hash[] = [createHash('sha256')];
  readonly etags: string[] = [];
  readonly sizes: number[] = [];
  /** The writer hashing the next part, while one is under way. */
  private claimant: object | null = null;

  /**
   * A hash to feed part `n`'s bytes to, from the state after the parts before it; null when
   * it cannot be hashed as it passes. A part sent again starts the prefix over from it.
   */
  claim(n: number, writer: object): Hash | null {
    if (this.claimant !== null || n > this.etags.length + 1) return null;
    this.states.length = n;
    this.etags.length = n - 1;
    this.sizes.length = n - 1;
    this.claimant = writer;
    return this.states[n - 1]!.copy();
  }

  /** The claimed part was committed as `etag`; whether its hash joined the prefix. */
  committed(writer: object, hash: Hash, n: number, etag: string, size: number): boolean {
    if (this.claimant !== writer || this.etags.length !== n - 1) return false;
    this.claimant = null;
    this.states.push(hash);
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
