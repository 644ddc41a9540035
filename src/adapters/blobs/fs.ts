/**
 * Blobs on the local disk. Parts are separate files named by their etag, so a re-sent
 * part never overwrites the one the metadata points at; complete joins them into a
 * temporary file, fsyncs it and renames it into place.
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, stat, readdir, type FileHandle } from 'node:fs/promises';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { BlobStore, ByteRange, CommittedPart, PartWriter } from '../../core/ports.js';

const SAFE_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
// Large writes keep syscalls few; the buffer is small next to a 5 MiB part.
const WRITE_BATCH = 1 << 20;

function checkKey(key: string): string[] {
  const segments = key.split('/');
  if (segments.length === 0 || !segments.every((s) => SAFE_SEGMENT.test(s) && s !== '..')) {
    throw new Error(`unsafe blob key: ${JSON.stringify(key)}`);
  }
  return segments;
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

class FsPartWriter implements PartWriter {
  bytesWritten = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private closed = false;

  constructor(readonly path: string, private handle: FileHandle) {}

  async write(chunk: Buffer): Promise<void> {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    this.bytesWritten += chunk.length;
    if (this.pendingBytes >= WRITE_BATCH) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.pendingBytes === 0) return;
    const bufs = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    await this.handle.writev(bufs);
  }

  /** Flushes, makes the bytes durable and closes the file. */
  async seal(): Promise<void> {
    await this.flush();
    await this.handle.datasync();
    await this.handle.close();
    this.closed = true;
  }

  async discard(): Promise<void> {
    this.pending = [];
    if (!this.closed) {
      this.closed = true;
      await this.handle.close().catch(() => {});
    }
    await rm(this.path, { force: true });
  }
}

export class FsBlobStore implements BlobStore {
  readonly bucket: string;
  private readonly objects: string;
  private readonly multipart: string;
  private readonly tmp: string;

  private constructor(root: string, bucket: string) {
    this.bucket = bucket;
    this.objects = join(root, 'objects');
    this.multipart = join(root, 'multipart');
    this.tmp = join(root, 'tmp');
  }

  static async open(root: string, bucket = 'local'): Promise<FsBlobStore> {
    const store = new FsBlobStore(root, bucket);
    await Promise.all([store.objects, store.multipart, store.tmp].map((d) => mkdir(d, { recursive: true })));
    // Whatever was being written when the process stopped is garbage now.
    for (const name of await readdir(store.tmp)) await rm(join(store.tmp, name), { force: true, recursive: true });
    return store;
  }

  private objectPath(key: string): string {
    return join(this.objects, ...checkKey(key));
  }

  private uploadDir(uploadId: string): string {
    checkKey(uploadId);
    return join(this.multipart, uploadId);
  }

  private tmpPath(): string {
    return join(this.tmp, randomBytes(12).toString('hex'));
  }

  async createMultipart(_key: string): Promise<{ uploadId: string }> {
    const uploadId = randomBytes(16).toString('base64url');
    await mkdir(this.uploadDir(uploadId), { recursive: true });
    return { uploadId };
  }

  async openPart(): Promise<PartWriter> {
    const path = this.tmpPath();
    return new FsPartWriter(path, await open(path, 'wx', 0o600));
  }

  async commitPart(_key: string, uploadId: string, partNumber: number, writer: PartWriter): Promise<CommittedPart> {
    if (!(writer instanceof FsPartWriter)) throw new Error('part writer of another store');
    await writer.seal();
    const etag = randomBytes(8).toString('hex');
    const dir = this.uploadDir(uploadId);
    try {
      await rename(writer.path, join(dir, `${partNumber}.${etag}`));
    } catch (err) {
      await writer.discard();
      throw err;
    }
    return { etag, size: writer.bytesWritten };
  }

  async dropPart(_key: string, uploadId: string, partNumber: number, etag: string): Promise<void> {
    await rm(join(this.uploadDir(uploadId), `${partNumber}.${checkKey(etag)[0]}`), { force: true });
  }

  async completeMultipart(key: string, uploadId: string, parts: Array<{ partNumber: number; etag: string }>): Promise<{ size: number; sha256: string }> {
    const dir = this.uploadDir(uploadId);
    const target = this.objectPath(key);
    const tmp = this.tmpPath();
    const out = await open(tmp, 'wx', 0o600);
    const hash = createHash('sha256');
    let size = 0;
    try {
      const buf = Buffer.allocUnsafe(WRITE_BATCH * 4);
      for (const part of [...parts].sort((a, b) => a.partNumber - b.partNumber)) {
        const input = await open(join(dir, `${part.partNumber}.${checkKey(part.etag)[0]}`), 'r');
        try {
          for (;;) {
            const { bytesRead } = await input.read(buf, 0, buf.length, null);
            if (bytesRead === 0) break;
            const slice = buf.subarray(0, bytesRead);
            hash.update(slice);
            await out.write(slice, 0, bytesRead, null);
            size += bytesRead;
          }
        } finally {
          await input.close();
        }
      }
      await out.datasync();
      await out.close();
    } catch (err) {
      await out.close().catch(() => {});
      await rm(tmp, { force: true });
      throw err;
    }
    const targetDir = join(target, '..');
    await mkdir(targetDir, { recursive: true });
    await rename(tmp, target);
    await fsyncDir(targetDir);
    return { size, sha256: hash.digest('hex') };
  }

  async abortMultipart(_key: string, uploadId: string): Promise<void> {
    await rm(this.uploadDir(uploadId), { recursive: true, force: true });
  }

  async read(key: string, range?: ByteRange): Promise<NodeJS.ReadableStream> {
    const path = this.objectPath(key);
    await stat(path);
    return createReadStream(path, range ? { start: range.start, end: range.end, highWaterMark: 1 << 20 } : { highWaterMark: 1 << 20 });
  }

  async size(key: string): Promise<number | null> {
    try {
      return (await stat(this.objectPath(key))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.objectPath(key), { force: true });
  }

  async close(): Promise<void> {}
}
