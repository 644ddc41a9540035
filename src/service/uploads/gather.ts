/**
 * Hands a part's bytes to its writer in a few large writes, not one per packet, without
 * copying them where the writer has a gathered write (the disk's writev): the chunks are held
 * by reference until about 1 MiB, then written together. They must be the caller's to keep
 * (a socket's reads, a file's), not a buffer it reuses. A writer without one (S3's request
 * body, which copies anyway) gets them copied into one pooled 1 MiB buffer.
 */
import { POOL_BUFFER_BYTES, giveBack, takeBuffer } from '../../core/buffer-pool.js';
import type { PartWriter } from '../../core/ports.js';

export class Gather {
  private held: Buffer[] = [];
  private heldBytes = 0;
  private batch: Buffer | null = null;
  private used = 0;

  constructor(private readonly writer: PartWriter) {}

  async write(chunk: Buffer): Promise<void> {
    if (chunk.length === 0) return;
    if (this.writer.writev) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      if (this.heldBytes >= POOL_BUFFER_BYTES) await this.flush();
      return;
    }
    this.batch ??= takeBuffer();
    let pos = 0;
    while (pos < chunk.length) {
      const n = chunk.copy(this.batch, this.used, pos);
      this.used += n;
      pos += n;
      if (this.used === POOL_BUFFER_BYTES) {
        await this.writer.write(this.batch);
        this.used = 0;
      }
    }
  }

  /** Writes everything held. */
  async flush(): Promise<void> {
    if (this.held.length > 0) {
      const chunks = this.held;
      this.held = [];
      this.heldBytes = 0;
      await this.writer.writev!(chunks);
    }
    if (this.batch && this.used > 0) {
      const n = this.used;
      this.used = 0;
      await this.writer.write(this.batch.subarray(0, n));
    }
  }

  /** Lets go of what is held, written or not; the pooled buffer goes back. */
  release(): void {
    this.held = [];
    this.heldBytes = 0;
    if (this.batch) giveBack(this.batch);
    this.batch = null;
    this.used = 0;
  }
}
