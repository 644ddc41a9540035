/**
 * The one upload engine under every dialect (contract §4's JSON and raw parts, §9's tus, §12's
 * S3 multipart and PutObject). An upload is a file record `uploading` beside a blob-store
 * multipart upload; parts stream into the store as they arrive, are answered once they would
 * survive a crash and recorded once durable (part-records.ts); completion joins them once per
 * file among every origin sharing the store (join.ts: SHA-256, file.ready, prewarm at every
 * edge) and empties the trash. The dialects (json.ts, raw.ts, tus.ts, s3.ts) find uploads by
 * their own names, check their own rules and make their own errors: this speaks none of them.
 */
import { KeyedQueue } from '../../core/coalesce.js';
import { newId } from '../../core/ids.js';
import { nameKey } from '../../core/names.js';
import type { FileType, Visibility } from '../../core/records.js';
import { UploadGoneError, type CommittedPart, type MetadataTx, type PartWriter, type StoredFile } from '../../core/ports.js';
import type { FileRecord } from '../../core/api.js';
import type { ServiceContext } from '../context.js';
import { removeFiles } from '../trash.js';
import { ALL_PARTS, assembleParts, joinParts, type PartsPolicy } from './join.js';

export interface UploadSpec {
  /** Validated. */
  name: string;
  /** How the name is found; nameKey(name) unless given. */
  nameKey?: string;
  visibility: Visibility;
  /** The declared size; 0 when the parts decide it (S3 multipart). */
  size: number;
  fileType: FileType;
  contentType: string;
  folderId: string | null;
  grantId: string | null;
  /** More fields of the file record (S3's). */
  extra?: Partial<StoredFile>;
  /** In the transaction that records the upload, before its file row: the limits a dialect counts. */
  prepare?(tx: MetadataTx): Promise<void>;
  /** In that transaction once the file row is in: a dialect's own row beside it. */
  within?(tx: MetadataTx, file: StoredFile): Promise<void>;
}

/** What became of a part: kept (it may be answered), or not, as the upload is gone or moved on. */
export type PartOutcome = { kept: true; part: CommittedPart; md5: string | null } | { kept: false; why: 'gone' | 'dropped' };

export class UploadEngine {
  /** One completion per file at a time in this process: two joins racing over one object help nobody. */
  private readonly completing = new KeyedQueue<string>();

  constructor(private readonly c: ServiceContext) {}

  /** Opens the store's multipart upload and records the file `uploading`; a failure leaves nothing behind. */
  async begin(spec: UploadSpec): Promise<StoredFile> {
    const id = newId();
    const key = `files/${id}`;
    const { uploadId } = await this.c.blobs.createMultipart(key);
    const now = this.c.now();
    const file: StoredFile = {
      id, name: spec.name, name_key: spec.nameKey ?? nameKey(spec.name), visibility: spec.visibility, size: spec.size, file_type: spec.fileType,
      content_type: spec.contentType, folder_id: spec.folderId, status: 'uploading', sha256: null, created_at: now, updated_at: now, completed_at: null,
      bucket: this.c.blobs.bucket, blob_key: key, upload_id: uploadId, upload_expires_at: now + this.c.opts.uploadTtlSeconds * 1000,
      grant_id: spec.grantId, links_revoked_at: null, ...spec.extra,
    };
    try {
      await this.c.meta.transaction(async (tx) => {
        // The folder may have gone while the blob upload was being opened; locked, it stays until the file is in.
        if (spec.folderId !== null) await this.c.requireFolder(tx, spec.folderId, 'folder_id', 'share');
        await spec.prepare?.(tx);
        await tx.insertFile(file);
        await spec.within?.(tx, file);
      });
      return file;
    } catch (err) {
      await this.c.blobs.abortMultipart(key, uploadId).catch(() => {});
      throw err;
    }
  }

  /** A writer for part `n`, which must receive exactly `expectedSize` bytes; they go on to the store as they arrive. */
  openPart(file: StoredFile, n: number, expectedSize: number): Promise<PartWriter> {
    return this.c.blobs.openPart(file.blob_key, file.upload_id!, n, expectedSize);
  }

  /**
   * Makes what `writer` received part `n` of the upload, durable once `durable` resolves, and
   * leaves recording it to the caller: for a dialect that records parts together with state
   * of its own (tus's offset). Throws UploadGoneError when the upload is gone.
   */
  commitUnrecorded(file: StoredFile, n: number, writer: PartWriter): Promise<CommittedPart> {
    return this.c.blobs.commitPart(file.blob_key, file.upload_id!, n, writer);
  }

  /** Lets go of a committed part version that will not be recorded. */
  dropPart(file: StoredFile, n: number, etag: string): Promise<void> {
    return this.c.blobs.dropPart(file.blob_key, file.upload_id!, n, etag).catch(() => {});
  }

  /**
   * Makes what `writer` received part `n` of the upload, recorded once durable. A part sent
   * again replaces one a client was told it has: it is kept only once the new version is
   * recorded for good, or a crash could bring the old one back. So is every part when another
   * origin may be asked to complete, which knows only recorded parts. `md5`: kept with it (S3).
   */
  async commitPart(file: StoredFile, n: number, writer: PartWriter, md5: string | null = null): Promise<PartOutcome> {
    const replacing = this.c.parts.has(file.id, n) || (await this.c.meta.read.getPart(file.id, n)) !== undefined;
    let part: CommittedPart;
    try {
      part = await this.commitUnrecorded(file, n, writer);
    } catch (err) {
      if (err instanceof UploadGoneError) return { kept: false, why: 'gone' };
      throw err;
    }
    const recorded = this.c.parts.record(file, n, part, replacing, md5);
    if ((replacing || this.c.meta.sharedByOrigins) && !(await recorded)) return { kept: false, why: 'dropped' };
    return { kept: true, part, md5 };
  }

  /**
   * Streams `bytes` into part `n` and commits it (commitPart). `md5` is asked once the bytes
   * were read to their end, so their own checks passed; throwing there keeps nothing.
   */
  async writePart(file: StoredFile, n: number, bytes: AsyncIterable<Buffer>, expectedSize: number, md5?: () => string): Promise<PartOutcome> {
    const writer = await this.openPart(file, n, expectedSize);
    let digest: string | null;
    try {
      for await (const piece of bytes) await writer.write(piece);
      if (writer.bytesWritten !== expectedSize) throw new Error(`part ${n} of ${file.id} received ${writer.bytesWritten} bytes, not ${expectedSize}`);
      digest = md5?.() ?? null;
    } catch (err) {
      await writer.discard().catch(() => {});
      throw err;
    }
    return this.commitPart(file, n, writer, digest);
  }

  /** The numbers of the parts received so far, recorded or about to be. */
  async received(fileId: string): Promise<Set<number>> {
    const numbers = new Set(await this.c.meta.read.partNumbers(fileId));
    for (const n of this.c.parts.numbers(fileId)) numbers.add(n);
    return numbers;
  }

  /** Waits until every part of this upload answered so far is recorded (or dropped). */
  settle(fileId: string): Promise<void> {
    return this.c.parts.settle(fileId);
  }

  /** Waits for every answered part of every upload to be recorded: before a shutdown. */
  drain(): Promise<void> {
    return this.c.parts.drain();
  }

  /**
   * Joins the parts the policy chooses into the file and makes it ready, once per file among
   * every origin sharing the store: another completion of the same file waits, then finds it
   * ready and answers the same record. Answers once the edges have the change.
   */
  complete(fileId: string, policy: PartsPolicy = ALL_PARTS): Promise<FileRecord> {
    return this.completing.run(fileId, async () => {
      await this.c.parts.settle(fileId);
      const file = await this.c.requireFile(this.c.meta.read, fileId);
      if (file.status === 'ready') return this.c.toFileRecord(this.c.meta.read, file);
      await policy.check?.(file);
      const outcome = await this.c.meta.exclusive(`complete:${fileId}`, () => joinParts(this.c, fileId, policy));
      this.c.emptyTrash();
      if (outcome.seq) await this.c.publish(outcome.seq);
      return outcome.record;
    });
  }

  /**
   * For an open upload whose multipart upload the store no longer has: when the object stands
   * at its key, a completion joined the parts and stopped before recording it (an origin killed
   * inside it, on S3), and is finished now. Whether the upload is a ready file now.
   */
  async recoverJoined(file: StoredFile): Promise<boolean> {
    if ((await this.c.blobs.size(file.blob_key)) === null) return false;
    return this.complete(file.id).then(() => true, () => false);
  }

  /**
   * Joins every part into the object at the upload's key, once, and leaves it an upload (a tus
   * partial upload): `joined` says whether that was done before, `mark` records it (join.ts).
   */
  async assemble(file: StoredFile, joined: () => Promise<boolean>, mark: (tx: MetadataTx) => Promise<'gone' | 'marked'>): Promise<void> {
    await this.c.meta.exclusive(`complete:${file.id}`, async () => {
      if (!(await joined())) await assembleParts(this.c, file, mark);
    });
    this.c.emptyTrash();
  }

  /** Removes an upload and all it holds; `find` finds it, locked, in the transaction, refusing as its dialect does. */
  async abort(find: (tx: MetadataTx) => Promise<StoredFile>): Promise<void> {
    await this.c.meta.transaction(async (tx) => removeFiles(tx, [await find(tx)], this.c.now()));
    this.c.emptyTrash();
  }

  /** Removes those of these uploads that are still open. */
  async abortOpen(fileIds: string[]): Promise<void> {
    await this.c.meta.transaction(async (tx) => {
      for (const id of [...new Set(fileIds)].sort()) {
        const file = await tx.getFile(id, 'update');
        if (file && file.status === 'uploading') await removeFiles(tx, [file], this.c.now());
      }
    });
    this.c.emptyTrash();
  }

  /** Aborts uploads left open past their time; returns how many. */
  async expire(): Promise<number> {
    let total = 0;
    for (;;) {
      const stale = await this.c.meta.expiredUploads(this.c.now(), 100);
      if (stale.length === 0) break;
      await this.c.meta.transaction(async (tx) => {
        for (const file of stale) {
          const current = await tx.getFile(file.id, 'update');
          if (!current || !this.c.isExpired(current)) continue;
          await removeFiles(tx, [current], this.c.now());
          // For webhooks; edges never held an upload.
          await tx.appendEvent({ type: 'upload.expired', file_id: current.id, folder_id: current.folder_id, data: { file_id: current.id, name: current.name, folder_id: current.folder_id } }, this.c.now());
        }
      });
      total += stale.length;
    }
    if (total > 0) this.c.emptyTrash();
    return total;
  }
}
