/**
 * Writes bytes that continue a tus upload at its offset (contract §9) into the upload's 5 MiB
 * parts, through the upload engine (engine.ts) as every dialect: a part is streamed to the
 * store's part writer as it arrives, committed once full, and recorded once durable.
 *
 * The offset is (contiguous recorded parts) × 5 MiB + the tail: the bytes of the next part
 * that are in but do not fill it, kept as a small object (core/tus.ts). A write starts by
 * putting the tail back in front of its bytes; whatever is left when the body ends, or is cut
 * off, becomes the new tail. Only the part being filled is held in memory (at most 5 MiB, by
 * reference: the bytes are copied by no one between the socket and the file), so a body of
 * any length passes through.
 *
 * Every change of the offset is a compare-and-set on the upload's version: a writer that
 * finds it moved (another origin wrote, the upload was removed) stops and records nothing more.
 */
import { createHash, randomBytes, timingSafeEqual, type Hash } from 'node:crypto';
import { errors } from '../../core/errors.js';
import { expectedPartSize, partCount } from '../../core/upload.js';
import { UploadGoneError, type CommittedPart, type MetadataTx, type PartWriter, type StoredFile } from '../../core/ports.js';
import { tailKey, type StoredTusUpload } from '../../core/tus.js';
import type { ServiceContext } from '../context.js';
import type { UploadEngine } from './engine.js';
import { Gather } from './gather.js';

export type ChecksumAlgorithm = 'sha256' | 'sha1' | 'md5';
export const CHECKSUM_ALGORITHMS: readonly ChecksumAlgorithm[] = ['sha256', 'sha1', 'md5'];

export interface TusBody {
  /** The bytes, from the upload's current offset. */
  body: AsyncIterable<Buffer>;
  /** Upload-Checksum: the whole body must match it, or none of it is kept. */
  checksum: { algorithm: ChecksumAlgorithm; digest: Buffer } | null;
  /**
   * How many bytes the body announced (Content-Length); null when it did not (chunked). One
   * announced past the upload's length is refused before its first byte; one of unknown length
   * keeps the whole parts it filled before running past, never the part that finishes the upload.
   */
  length: number | null;
}

/** Another writer changed the upload first, or it is gone: this one records nothing more. */
export class StaleWrite extends Error {
  constructor() {
    super('the tus upload changed under this write');
    this.name = 'StaleWrite';
  }
}

/**
 * Fills parts from `firstPart` on; calls `onCommitted` for each full part committed to the
 * store. The part's bytes go to the store's writer as they arrive, a few large writes at a
 * time (gather.ts), and are held by reference until the part is committed, as they become the
 * tail if the body ends first.
 */
class PartFiller {
  private writer: PartWriter | null = null;
  private gather: Gather | null = null;
  private held: Buffer[] = [];
  private heldBytes = 0;

  constructor(
    private readonly engine: UploadEngine,
    private readonly file: StoredFile,
    private partNumber: number,
    private readonly onCommitted: (partNumber: number, part: CommittedPart) => void,
  ) {}

  private get expected(): number {
    return expectedPartSize(this.file.size, this.partNumber);
  }

  /** Takes `chunk` to keep: its owner must not reuse it (a socket's or a file's reads). */
  async write(chunk: Buffer): Promise<void> {
    let pos = 0;
    while (pos < chunk.length) {
      if (!this.writer) {
        // Opened at the part's first byte: S3 starts an UploadPart of the part's length then.
        this.writer = await this.engine.openPart(this.file, this.partNumber, this.expected);
        this.gather = new Gather(this.writer);
      }
      const n = Math.min(chunk.length - pos, this.expected - this.heldBytes);
      const piece = n === chunk.length ? chunk : chunk.subarray(pos, pos + n);
      pos += n;
      this.held.push(piece);
      this.heldBytes += n;
      await this.gather!.write(piece);
      if (this.heldBytes === this.expected) {
        await this.gather!.flush();
        await this.commit();
      }
    }
  }

  private async commit(): Promise<void> {
    const writer = this.writer!;
    this.writer = null;
    this.gather?.release();
    this.gather = null;
    const part = await this.engine.commitUnrecorded(this.file, this.partNumber, writer);
    this.held = [];
    this.heldBytes = 0;
    this.onCommitted(this.partNumber, part);
    this.partNumber++;
  }

  /** The bytes of the part not yet full, its writer discarded; they are the caller's now. */
  async take(): Promise<{ chunks: Buffer[]; size: number }> {
    await this.discard();
    const taken = { chunks: this.held, size: this.heldBytes };
    this.held = [];
    this.heldBytes = 0;
    return taken;
  }

  async discard(): Promise<void> {
    const writer = this.writer;
    this.writer = null;
    this.gather?.release();
    this.gather = null;
    await writer?.discard().catch(() => {});
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** One write (a PATCH, or the copy that makes a final upload) into one upload, from its offset. */
export class TusWriter {
  private version: number;
  /** Whether the tail the write started from is gone into a recorded part. */
  private tailUsed = false;
  private records: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  /** Parts committed but, under a checksum, not recorded until it matches. */
  private readonly deferred: Array<{ partNumber: number; part: CommittedPart }> = [];
  private readonly filler: PartFiller;

  constructor(
    private readonly c: ServiceContext,
    private readonly engine: UploadEngine,
    private readonly file: StoredFile,
    private readonly tus: StoredTusUpload,
    /** The offset the write starts at, as the store says; its whole parts are recorded. */
    private readonly offset: number,
    firstPart: number,
    private readonly deferRecords: boolean,
  ) {
    this.version = tus.version;
    this.filler = new PartFiller(engine, file, firstPart, (n, part) => this.committed(n, part));
  }

  private committed(partNumber: number, part: CommittedPart): void {
    // The part that finishes the upload waits for the body's end: a body running past
    // Upload-Length must not leave a whole upload behind its 413.
    if (this.deferRecords || partNumber === partCount(this.file.size)) {
      this.deferred.push({ partNumber, part });
      return;
    }
    // Recorded in order, each once durable, while the next part streams in.
    this.records = this.records.then(async () => {
      if (this.failure) return this.drop([{ partNumber, part }]);
      try {
        await this.record([{ partNumber, part }]);
      } catch (err) {
        this.failure = err;
        await this.drop([{ partNumber, part }]);
      }
    });
  }

  private async drop(parts: Array<{ partNumber: number; part: CommittedPart }>): Promise<void> {
    for (const p of parts) await this.engine.dropPart(this.file, p.partNumber, p.part.etag);
  }

  /** Runs `change` if the upload is still open and still at this writer's version, then moves the version on. */
  private async changeState(change: (tx: MetadataTx, current: StoredTusUpload) => Promise<Partial<StoredTusUpload>>): Promise<void> {
    const ok = await this.c.meta.transaction(async (tx) => {
      // Shared: a complete, an abort or a delete of the file decides before or after this, not during.
      const file = await tx.getFile(this.file.id, 'share');
      const current = await tx.tus.get(this.file.id);
      if (!file || file.status !== 'uploading' || file.upload_id !== this.file.upload_id || !current || current.version !== this.version) return false;
      const patch = await change(tx, current);
      if (!(await tx.tus.update(this.file.id, this.version, patch))) throw new StaleWrite();
      return true;
    });
    if (!ok) throw new StaleWrite();
    this.version++;
  }

  /** Records parts once durable; the first takes the tail it started from with it. */
  private async record(parts: Array<{ partNumber: number; part: CommittedPart }>): Promise<void> {
    for (const p of parts) await p.part.durable;
    const usesTail = !this.tailUsed;
    await this.changeState(async (tx, current) => {
      for (const p of parts) {
        await tx.upsertPart({ file_id: this.file.id, part_number: p.partNumber, size: p.part.size, etag: p.part.etag, updated_at: this.c.now() });
      }
      if (!usesTail) return {};
      if (current.tail_key) await tx.queueBlobDeletion([{ bucket: this.file.bucket, blob_key: current.tail_key, upload_id: null, object: 1 }], this.c.now());
      return { tail_key: null, tail_size: 0 };
    });
    this.tailUsed = true;
  }

  /** Makes `chunks` the tail: named first, written whole and durable, then recorded. */
  private async saveTail(chunks: Buffer[], size: number): Promise<void> {
    const key = tailKey(this.file.id, randomBytes(9).toString('base64url'));
    const now = this.c.now();
    await this.changeState(async (tx, current) => {
      // A tail named by a write that stopped before recording it is nobody's now.
      if (current.next_tail_key) await tx.queueBlobDeletion([{ bucket: this.file.bucket, blob_key: current.next_tail_key, upload_id: null, object: 1 }], now);
      return { next_tail_key: key };
    });
    await this.c.blobs.putObject(key, chunks);
    await this.changeState(async (tx, current) => {
      if (current.tail_key) await tx.queueBlobDeletion([{ bucket: this.file.bucket, blob_key: current.tail_key, upload_id: null, object: 1 }], now);
      return { tail_key: key, tail_size: size, next_tail_key: null };
    });
  }

  /**
   * Writes the body. Throws StaleWrite when another writer got there first, the checksum
   * and length errors of contract §9, or the body's own error when it was cut off under a
   * checksum; a body cut off without one keeps what arrived.
   */
  async write(input: TusBody): Promise<void> {
    try {
      await this.writeBody(input);
    } finally {
      await this.filler.discard();
      this.c.emptyTrash();
    }
  }

  private async writeBody(input: TusBody): Promise<void> {
    if (this.tus.tail_key && this.tus.tail_size > 0) {
      const tail = await readAll(await this.c.blobs.read(this.tus.tail_key));
      if (tail.length !== this.tus.tail_size) throw new Error(`the tail of ${this.file.id} holds ${tail.length} bytes, not ${this.tus.tail_size}`);
      await this.filler.write(tail);
    }
    const hash: Hash | null = input.checksum ? createHash(input.checksum.algorithm) : null;
    const room = this.file.size - this.offset;
    let received = 0;
    let cut: unknown = null;
    let overflow = false;
    const iterator = input.body[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await iterator.next();
      } catch (err) {
        cut = err;
        break;
      }
      if (next.done) break;
      const chunk = next.value;
      if (received + chunk.length > room) {
        overflow = true;
        await iterator.return?.().catch(() => {});
        break;
      }
      hash?.update(chunk);
      received += chunk.length;
      try {
        await this.filler.write(chunk);
      } catch (err) {
        await iterator.return?.().catch(() => {});
        throw err instanceof UploadGoneError ? new StaleWrite() : err;
      }
      if (this.failure) {
        await iterator.return?.().catch(() => {});
        break;
      }
    }
    await this.records;
    if (this.failure) throw this.failure instanceof UploadGoneError ? new StaleWrite() : this.failure;
    if (overflow || (hash && cut)) {
      await this.drop(this.deferred);
      if (overflow) throw errors.uploadLengthExceeded(this.file.size);
      throw cut;
    }
    if (hash && input.checksum) {
      const digest = hash.digest();
      if (digest.length !== input.checksum.digest.length || !timingSafeEqual(digest, input.checksum.digest)) {
        await this.drop(this.deferred);
        throw errors.checksumMismatch();
      }
    }
    if (this.deferred.length > 0) await this.record(this.deferred);
    // Unchanged when nothing arrived; otherwise what does not fill a part is the new tail.
    const left = await this.filler.take();
    if (received > 0 && left.size > 0) await this.saveTail(left.chunks, left.size);
  }
}
