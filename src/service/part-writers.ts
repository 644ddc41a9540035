/**
 * Writers for a chunk whose part is not known yet, or not valid, when its bytes start
 * arriving. A blob store's part writer needs the part's identity and size up front (S3's
 * UploadPart starts with them), but a request may put `body` before the fields that say
 * which part it is.
 */
import type { PartWriter } from '../core/ports.js';

/**
 * Keeps the decoded bytes in memory (once: each chunk is copied, as the caller reuses its
 * buffer) until the part is known; `replayInto` then hands them to the store's writer. The
 * request's size limit bounds what it can hold.
 */
export class BufferedPartWriter implements PartWriter {
  bytesWritten = 0;
  private chunks: Buffer[] = [];

  async write(chunk: Buffer): Promise<void> {
    this.chunks.push(Buffer.from(chunk));
    this.bytesWritten += chunk.length;
  }

  /** Writes everything held to `target`, letting go of each chunk once it is written. */
  async replayInto(target: PartWriter): Promise<void> {
    const chunks = this.chunks;
    this.chunks = [];
    for (let i = 0; i < chunks.length; i++) {
      await target.write(chunks[i]!);
      chunks[i] = EMPTY;
    }
  }

  async discard(): Promise<void> {
    this.chunks = [];
  }
}

const EMPTY = Buffer.alloc(0);

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
