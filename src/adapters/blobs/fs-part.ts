/**
 * What the disk store (fs.ts) writes with: a part's writer, which hashes its bytes on their way
 * when the upload's hash takes them as they pass (pass-hash.ts), and the flushes it needs.
 */
import { createReadStream } from 'node:fs';
import { open, rm, type FileHandle } from 'node:fs/promises';
import type { Hash } from 'node:crypto';
import type { PartWriter } from '../../core/ports.js';
import type { PartHash } from './part-hash.js';

/** Feeds a file's bytes to `hash`; answers its size. */
export async function hashFile(hash: Hash, path: string): Promise<number> {
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return size;
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export class FsPartWriter implements PartWriter {
  bytesWritten = 0;
  private closed = false;
  /** Set once the file was renamed into an upload: nothing left to discard. */
  committed = false;
  /** The upload's hash the bytes pass through (pass-hash.ts), and whom to tell when the part is given up. */
  hash: PartHash | null = null;
  onRelease: (() => void) | null = null;

  constructor(readonly path: string, private handle: FileHandle) {}

  /** Feeds the upload's hash; a state that can no longer be known gives it up (read back at completion). */
  private feed(chunk: Buffer): void {
    if (this.hash && !this.hash.update(chunk)) {
      this.hash = null;
      this.onRelease?.();
    }
  }

  async write(chunk: Buffer): Promise<void> {
    this.feed(chunk);
    // Written at once: the caller reuses its buffer after this resolves.
    let offset = 0;
    while (offset < chunk.length) {
      const { bytesWritten } = await this.handle.write(chunk, offset, chunk.length - offset, null);
      offset += bytesWritten;
    }
    this.bytesWritten += chunk.length;
  }

  async writev(chunks: readonly Buffer[]): Promise<void> {
    let pending = chunks.filter((c) => c.length > 0);
    for (const chunk of pending) this.feed(chunk);
    while (pending.length > 0) {
      let { bytesWritten } = await this.handle.writev(pending);
      this.bytesWritten += bytesWritten;
      // A short write: go on from the first byte not written.
      while (pending.length > 0 && bytesWritten >= pending[0]!.length) bytesWritten -= pending.shift()!.length;
      if (bytesWritten > 0) pending = [pending[0]!.subarray(bytesWritten), ...pending.slice(1)];
    }
  }

  /** Makes the written bytes durable and closes the file; it may have been renamed meanwhile. */
  async seal(): Promise<void> {
    try {
      await this.handle.datasync();
    } finally {
      this.closed = true;
      await this.handle.close();
    }
  }

  async discard(): Promise<void> {
    if (this.committed) return;
    this.hash = null;
    this.onRelease?.();
    if (!this.closed) {
      this.closed = true;
      await this.handle.close().catch(() => {});
    }
    await rm(this.path, { force: true });
  }
}
