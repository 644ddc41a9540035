/**
 * Writers for a chunk whose part is not known yet, or not valid, when its bytes start
 * arriving. A blob store's part writer needs the part's identity and size up front (S3's
 * UploadPart starts with them), but a request may put `body` before the fields that say
 * which part it is.
 */
import type { PartWriter } from '../../core/ports.js';
import { POOL_BUFFER_BYTES, giveBack, takeBuffer } from '../../core/buffer-pool.js';

/** The held bytes are copied into pooled slabs, not fresh allocations. */
const SLAB_BYTES = POOL_BUFFER_BYTES;

/**
 * Keeps the decoded bytes in memory (once: each chunk is copied, as the caller reuses its
 * buffer) until the part is known; `replayInto` then hands them to the store's writer. The
 * request's size limit bounds what it can hold.
 */
export class BufferedPartWriter implements PartWriter {
  bytesWritten = 0;
  private slabs: Buffer[] = [];
  /** Bytes used in the last slab. */
  private used = SLAB_BYTES;

  async write(chunk: Buffer): Promise<void> {
    let pos = 0;
    while (pos < chunk.length) {
      if (this.used === SLAB_BYTES) {
        this.slabs.push(takeBuffer());
        this.used = 0;
      }
      const n = chunk.copy(this.slabs[this.slabs.length - 1]!, this.used, pos);
      this.used += n;
      pos += n;
    }
    this.bytesWritten += chunk.length;
  }

  /** Writes everything held to `target`; the slabs go back to the pool once written. */
  async replayInto(target: PartWriter): Promise<void> {
    const slabs = this.slabs;
    const lastUsed = this.used;
    this.slabs = [];
    this.used = SLAB_BYTES;
    try {
      for (let i = 0; i < slabs.length; i++) await target.write(i === slabs.length - 1 ? slabs[i]!.subarray(0, lastUsed) : slabs[i]!);
    } finally {
      giveBack(...slabs);
    }
  }

  async discard(): Promise<void> {
    giveBack(...this.slabs);
    this.slabs = [];
    this.used = SLAB_BYTES;
  }
}

/**
 * Counts the bytes of a chunk that names no open upload or no valid part, and keeps none:
 * the request is answered with its error once it has been read whole, in contract order.
 */
export class DiscardingPartWriter implements PartWriter {
  bytesWritten = 0;

  async write(chunk: Buffer): Promise<void> {
    this.bytesWritten += chunk.length;
  }

  async discard(): Promise<void> {}
}
