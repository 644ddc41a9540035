/**
 * Uploads (contract §4): initiate, parts, complete, status, abort and expiry. A part is
 * answered once it will survive a crash and recorded once its bytes are durable.
 */
import mime from 'mime';
import { errors, isCofferError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { nameKey, validateName } from '../core/names.js';
import { isoTime, parseFileType, parseVisibility } from '../core/records.js';
import { isSendableContentType } from '../core/file-types.js';
import { CHUNK_SIZE, checkDeclaredSize, checkPartNumber, expectedPartSize, missingParts, partCount } from '../core/upload.js';
import type { CommittedPart, MetadataTx, PartWriter, StoredFile } from '../core/ports.js';
import { UploadGoneError } from '../core/ports.js';
import type { FileRecord, InitiateUploadRequest, UploadPartResponse, UploadSession, UploadStatusResponse } from '../core/api.js';
import { fileEventData, fileRecord } from './records.js';
import { BufferedPartWriter, DiscardingPartWriter } from './part-writers.js';
import type { ServiceContext } from './context.js';
import type { Caller } from '../core/access.js';
import { checkGrantLimits, defaultUploadFolder, fileInReach, requireFolderInReach, requireUploader, takeGrantFile } from './access.js';
import { removeFiles } from './trash.js';

export interface PartInput {
  caller: Caller;
  bucket: string;
  key: string;
  uploadId: string;
  fileId: string;
  partNumber: number;
  /** The decoded chunk as written so far, from `openPartWriter`. */
  writer: PartWriter;
  /** Set when the body was not valid base64. */
  invalidBase64: boolean;
}

/** The five values that name the part a chunk is for. */
type PartTarget = Pick<PartInput, 'bucket' | 'key' | 'uploadId' | 'fileId' | 'partNumber'>;

/** The part the fields name, when all five are there with the right types. */
function partTargetOf(fields: Record<string, unknown> | null): PartTarget | null {
  if (!fields) return null;
  const { bucket, key, uploadId, fileId, partNumber } = fields;
  if (typeof bucket !== 'string' || typeof key !== 'string' || typeof uploadId !== 'string' || typeof fileId !== 'string' || typeof partNumber !== 'number') return null;
  return { bucket, key, uploadId, fileId, partNumber };
}

const sameTarget = (a: PartTarget, b: PartTarget): boolean =>
  a.bucket === b.bucket && a.key === b.key && a.uploadId === b.uploadId && a.fileId === b.fileId && a.partNumber === b.partNumber;

const COMPLETE_ATTEMPTS = 3;

export class Uploads {
  constructor(private readonly c: ServiceContext) {}

  /** `within` runs in the transaction that records the upload (tus adds its row there). */
  async initiate(caller: Caller, req: InitiateUploadRequest, within?: (tx: MetadataTx, file: StoredFile) => Promise<void>): Promise<UploadSession> {
    requireUploader(caller);
    const folderId = req.folder_id ?? defaultUploadFolder(caller);
    if (folderId !== null) await this.c.requireFolder(this.c.meta.read, folderId);
    await requireFolderInReach(this.c.meta.read, caller, folderId);
    const name = validateName(req.name);
    const visibility = parseVisibility(req.visibility);
    checkDeclaredSize(req.size, this.c.opts.maxFileSize);
    const fileType = parseFileType(req.file_type);
    let contentType: string;
    if (req.content_type !== undefined) {
      // Stored as given and sent back as a header at every delivery: it must be one that can be.
      if (!isSendableContentType(req.content_type)) {
        throw errors.invalidField('invalid_content_type', 'content_type', '"content_type" must be a media type such as "image/png" or "text/plain; charset=utf-8": ASCII token characters, no control characters.');
      }
      contentType = req.content_type;
    } else {
      contentType = mime.getType(name) ?? 'application/octet-stream';
    }
    checkGrantLimits(caller, { folderId, visibility, size: req.size, contentType }, this.c.now());

    const id = newId();
    const key = `files/${id}`;
    const { uploadId } = await this.c.blobs.createMultipart(key);
    const now = this.c.now();
    const file: StoredFile = {
      id, name, name_key: nameKey(name), visibility, size: req.size, file_type: fileType, content_type: contentType,
      folder_id: folderId, status: 'uploading', sha256: null, created_at: now, updated_at: now, completed_at: null,
      bucket: this.c.blobs.bucket, blob_key: key, upload_id: uploadId, upload_expires_at: now + this.c.opts.uploadTtlSeconds * 1000,
      grant_id: caller.kind === 'grant' ? caller.grant.id : null, links_revoked_at: null,
    };
    try {
      const record = await this.c.meta.transaction(async (tx) => {
        // The folder may have gone while the blob upload was being opened; locked, it stays until the file is in.
        if (folderId !== null) await this.c.requireFolder(tx, folderId, 'folder_id', 'share');
        await takeGrantFile(tx, caller);
        await tx.insertFile(file);
        await within?.(tx, file);
        return this.c.toFileRecord(tx, file);
      });
      return {
        ...record, fileId: id, bucket: file.bucket, key, uploadId, chunk_size: CHUNK_SIZE, part_count: partCount(req.size),
        expires_at: isoTime(file.upload_expires_at!),
      };
    } catch (err) {
      await this.c.blobs.abortMultipart(key, uploadId).catch(() => {});
      throw err;
    }
  }

  /** Finds the open upload the four session values name, in the order contract §4 answers. */
  private async requireUploadFor(tx: MetadataTx, caller: Caller, input: Pick<PartInput, 'bucket' | 'key' | 'uploadId' | 'fileId'>): Promise<StoredFile> {
    const file = await tx.getFile(input.fileId);
    if (!file || file.bucket !== input.bucket || file.blob_key !== input.key || file.upload_id !== input.uploadId) throw errors.uploadNotFound();
    if (!(await fileInReach(tx, caller, file))) throw errors.uploadNotFound();
    if (file.status === 'ready') throw errors.uploadCompleted();
    if (this.c.isExpired(file)) throw errors.uploadNotFound('This upload expired and was aborted; start a new upload.');
    return file;
  }

  /** The part each writer of `openPartWriter` was opened for. */
  private readonly partTargets = new WeakMap<PartWriter, PartTarget>();

  /**
   * Where a chunk's decoded bytes go while its request is still being read. When the fields
   * before `body` name an open upload and a valid part, that is the blob store's writer for
   * the part, with the size the part must have, so the bytes stream on at once; when they
   * name none, a writer that only counts (the error is answered once the request is read);
   * when `body` came first, a buffer that `receivePart` hands to the store.
   */
  async openPartWriter(caller: Caller, fieldsBeforeBody: Record<string, unknown> | null): Promise<PartWriter> {
    const target = partTargetOf(fieldsBeforeBody);
    if (!target) return new BufferedPartWriter();
    let file: StoredFile;
    try {
      requireUploader(caller);
      file = await this.requireUploadFor(this.c.meta.read, caller, target);
      checkPartNumber(target.partNumber, partCount(file.size));
    } catch (err) {
      if (isCofferError(err)) return new DiscardingPartWriter();
      throw err;
    }
    const writer = await this.c.blobs.openPart(file.blob_key, target.uploadId, target.partNumber, expectedPartSize(file.size, target.partNumber));
    this.partTargets.set(writer, target);
    return writer;
  }

  /** Makes a received chunk a part of its upload. The writer is consumed either way. */
  async receivePart(input: PartInput): Promise<UploadPartResponse> {
    let handedOver = false;
    let writer = input.writer;
    try {
      requireUploader(input.caller);
      const file = await this.requireUploadFor(this.c.meta.read, input.caller, input);
      const count = partCount(file.size);
      checkPartNumber(input.partNumber, count);
      if (input.invalidBase64) throw errors.invalidField('invalid_base64', 'body', '"body" is not valid base64.');
      const expected = expectedPartSize(file.size, input.partNumber);
      if (input.writer.bytesWritten !== expected) {
        throw errors.invalidField('part_size_mismatch', 'body', `Part ${input.partNumber} must decode to ${expected} bytes, not ${input.writer.bytesWritten}.`,
          { expected, received: input.writer.bytesWritten });
      }
      if (input.writer instanceof BufferedPartWriter) {
        // "body" came before the fields that name the part: the part is known only now.
        writer = await this.c.blobs.openPart(file.blob_key, input.uploadId, input.partNumber, expected);
        await input.writer.replayInto(writer);
      } else {
        const target = this.partTargets.get(input.writer);
        if (input.writer instanceof DiscardingPartWriter || (target && !sameTarget(target, input))) {
          // Only a field named again after "body" can make the part differ from the one opened.
          throw errors.invalidRequest('The body names a field more than once; send each field once.');
        }
      }
      // A part sent again replaces one the client was told it has: that answer must not be
      // given until the new version is recorded for good, or a crash could bring the old one back.
      const replacing = this.pendingParts.get(file.id)?.has(input.partNumber) || (await this.c.meta.read.getPart(file.id, input.partNumber)) !== undefined;
      let part: CommittedPart;
      try {
        part = await this.c.blobs.commitPart(file.blob_key, input.uploadId, input.partNumber, writer);
      } catch (err) {
        if (!(err instanceof UploadGoneError)) throw err;
        // Completed or aborted meanwhile, perhaps by another origin: answer as the state now says.
        await this.requireUploadFor(this.c.meta.read, input.caller, input);
        throw errors.uploadNotFound();
      }
      handedOver = true;
      const recorded = this.recordWhenDurable(file, input.partNumber, part, replacing);
      // Several origins may share a PostgreSQL store, and the complete may reach another one,
      // which knows only recorded parts: there every part is answered once it is recorded.
      if ((replacing || this.c.meta.dialect === 'postgres') && !(await recorded)) {
        // Completed, aborted or deleted while it was stored: answered as the state now says, never 200 for a part not kept.
        await this.requireUploadFor(this.c.meta.read, input.caller, input);
        throw errors.unavailable('The part could not be stored; send it again.');
      }
      const received = new Set(await this.c.meta.read.partNumbers(file.id));
      for (const n of this.pendingParts.get(file.id)?.keys() ?? []) received.add(n);
      return { file_id: file.id, partNumber: input.partNumber, size: part.size, etag: part.etag, received_parts: received.size, part_count: count };
    } finally {
      if (!handedOver) {
        await input.writer.discard().catch(() => {});
        if (writer !== input.writer) await writer.discard().catch(() => {});
      }
    }
  }

  /**
   * Parts answered but not yet recorded, by file and part number. A part is recorded only
   * once its bytes are on disk for good, so the store never lists a part a power cut could
   * take back; the flush overlaps the next parts' transfer instead of delaying this answer.
   */
  private readonly pendingParts = new Map<string, Map<number, Promise<boolean>>>();

  /** Resolves true once the part is recorded, false when it was dropped instead (the upload moved on, or the flush failed). */
  private recordWhenDurable(file: StoredFile, partNumber: number, part: CommittedPart, durableRecord: boolean): Promise<boolean> {
    let byPart = this.pendingParts.get(file.id);
    if (!byPart) {
      byPart = new Map();
      this.pendingParts.set(file.id, byPart);
    }
    const parts = byPart;
    const drop = (etag: string) => this.c.blobs.dropPart(file.blob_key, file.upload_id!, partNumber, etag).catch(() => {});
    // Versions of one part are recorded in the order they arrived.
    const task: Promise<boolean> = (parts.get(partNumber) ?? Promise.resolve(true))
      .then(async () => {
        try {
          await part.durable;
        } catch (err) {
          this.c.opts.onBackgroundError?.(`flushing part ${partNumber} of ${file.id}`, err);
          await drop(part.etag);
          return false;
        }
        const outcome = await this.c.meta.transaction(async (tx) => {
          // Shared: parts of one file are recorded side by side, never while a complete or a delete decides.
          const current = await tx.getFile(file.id, 'share');
          if (!current || current.status !== 'uploading' || current.upload_id !== file.upload_id) return { stale: true as const };
          const previous = await tx.getPart(file.id, partNumber);
          await tx.upsertPart({ file_id: file.id, part_number: partNumber, size: part.size, etag: part.etag, updated_at: this.c.now() });
          return { stale: false as const, previous };
        }, { durable: durableRecord });
        if (outcome.stale) {
          await drop(part.etag);
          return false;
        }
        if (outcome.previous && outcome.previous.etag !== part.etag) await drop(outcome.previous.etag);
        return true;
      })
      .catch((err) => {
        this.c.opts.onBackgroundError?.(`recording part ${partNumber} of ${file.id}`, err);
        return false;
      })
      .finally(() => {
        if (parts.get(partNumber) === task) parts.delete(partNumber);
        if (parts.size === 0 && this.pendingParts.get(file.id) === parts) this.pendingParts.delete(file.id);
      });
    parts.set(partNumber, task);
    return task;
  }

  /** Waits for every answered part of every upload to be recorded: before a shutdown. */
  async drain(): Promise<void> {
    while (this.pendingParts.size > 0) await Promise.all([...this.pendingParts.keys()].map((id) => this.settleParts(id)));
  }

  /** Waits until every part answered so far is recorded (or dropped). */
  private async settleParts(fileId: string): Promise<void> {
    const byPart = this.pendingParts.get(fileId);
    if (byPart) await Promise.all(byPart.values());
  }

  /** One completion per file at a time in this process: two joins racing over one object help nobody. */
  private readonly completing = new Map<string, Promise<FileRecord>>();

  /** Completes an upload for a caller who may: see completeAsService. */
  async complete(caller: Caller, fileId: string): Promise<FileRecord> {
    requireUploader(caller);
    await this.c.requireFileFor(this.c.meta.read, caller, fileId);
    return this.completeAsService(fileId);
  }

  /** Completes an upload whoever asked; the caller was checked by whoever calls this. */
  completeAsService(fileId: string): Promise<FileRecord> {
    const running = this.completing.get(fileId);
    const next = (running ? running.catch(() => undefined) : Promise.resolve()).then(() => this.completeOnce(fileId));
    const tracked = next.finally(() => {
      if (this.completing.get(fileId) === tracked) this.completing.delete(fileId);
    });
    this.completing.set(fileId, tracked);
    return tracked;
  }

  private async completeOnce(fileId: string): Promise<FileRecord> {
    await this.settleParts(fileId);
    const file = await this.c.requireFile(this.c.meta.read, fileId);
    if (file.status === 'ready') return this.c.toFileRecord(this.c.meta.read, file);
    // One join per file among every origin sharing the store: another completion of the same
    // file waits here, then finds it ready and answers the same record.
    const outcome = await this.c.meta.exclusive(`complete:${fileId}`, () => this.completeExclusively(fileId));
    this.c.trash.empty();
    if (outcome.seq) await this.c.publish(outcome.seq);
    return outcome.record;
  }

  private async completeExclusively(fileId: string): Promise<{ record: FileRecord; seq: number }> {
    for (let attempt = 1; ; attempt++) {
      const file = await this.c.requireFile(this.c.meta.read, fileId);
      if (file.status === 'ready') {
        // Completed by another origin: answer once the edges have what it published.
        return { record: await this.c.toFileRecord(this.c.meta.read, file), seq: await this.c.meta.lastEventSeq() };
      }
      const parts = await this.c.meta.read.listParts(fileId);
      const missing = missingParts(partCount(file.size), parts.map((p) => p.part_number));
      if (missing.length > 0) {
        // Parts go only with their file: read after them, a file still there means they are missing.
        if ((await this.c.requireFile(this.c.meta.read, fileId)).status === 'ready') continue;
        throw errors.missingParts(missing);
      }
      let digest: { size: number; sha256: string };
      try {
        digest = await this.c.blobs.completeMultipart(file.blob_key, file.upload_id!, parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })));
      } catch (err) {
        // A part replaced while it was being joined: join again from the new list. An upload
        // that is gone (aborted, deleted) is answered from the state read again.
        if (attempt < COMPLETE_ATTEMPTS) continue;
        throw err;
      }
      const outcome = await this.c.meta.transaction(async (tx) => {
        // Locked: a delete, an abort or an update of this file waits for this decision, and sees it.
        const current = await tx.getFile(fileId, 'update');
        if (!current || this.c.isExpired(current)) {
          // Deleted, aborted or expired while its parts were joined: the object just made is nobody's.
          await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: null, object: 1 }], this.c.now());
          return 'gone' as const;
        }
        if (current.status === 'ready') return { record: await this.c.toFileRecord(tx, current), seq: 0 };
        const now = await tx.listParts(fileId);
        const same = now.length === parts.length && now.every((p, i) => p.etag === parts[i]!.etag);
        if (!same) return null;
        if (digest.size !== current.size) throw new Error(`joined ${digest.size} bytes for a declared size of ${current.size}`);
        const at = this.c.now();
        const ready: StoredFile = { ...current, status: 'ready', sha256: digest.sha256, completed_at: at, updated_at: at, upload_expires_at: null };
        await tx.updateFile(fileId, { status: 'ready', sha256: digest.sha256, completed_at: at, updated_at: at, upload_expires_at: null });
        await tx.deleteParts(fileId);
        await tx.queueBlobDeletion([{ bucket: current.bucket, blob_key: current.blob_key, upload_id: current.upload_id, object: 0 }], at);
        const context = await this.c.folderContext(tx, current.folder_id);
        const seq = await tx.appendEvent({ type: 'file.ready', file_id: fileId, folder_id: current.folder_id, data: fileEventData(ready, context) }, at);
        return { record: fileRecord(ready, context, this.c.opts.cdnUrl), seq };
      });
      if (outcome === 'gone') {
        this.c.trash.empty();
        throw errors.fileNotFound(fileId);
      }
      if (outcome === null) {
        if (attempt < COMPLETE_ATTEMPTS) continue;
        throw errors.unavailable('The upload kept changing while it was being completed; try again.');
      }
      return outcome;
    }
  }

  async status(caller: Caller, fileId: string): Promise<UploadStatusResponse> {
    requireUploader(caller);
    await this.settleParts(fileId);
    const file = await this.c.requireFileFor(this.c.meta.read, caller, fileId);
    const count = partCount(file.size);
    if (file.status === 'ready') {
      return { file_id: fileId, status: 'ready', part_count: count, received: Array.from({ length: count }, (_, i) => i + 1), missing: [], expires_at: null };
    }
    const received = (await this.c.meta.read.listParts(fileId)).map((p) => p.part_number);
    return {
      file_id: fileId, status: 'uploading', part_count: count, received, missing: missingParts(count, received),
      expires_at: file.upload_expires_at === null ? null : isoTime(file.upload_expires_at),
    };
  }

  async abort(caller: Caller, fileId: string): Promise<{ file_id: string; aborted: true }> {
    requireUploader(caller);
    await this.c.meta.transaction(async (tx) => {
      const file = await this.c.requireFileFor(tx, caller, fileId, 'update');
      if (file.status === 'ready') throw errors.uploadCompleted();
      await removeFiles(tx, [file], this.c.now());
    });
    this.c.trash.empty();
    return { file_id: fileId, aborted: true };
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
    if (total > 0) this.c.trash.empty();
    return total;
  }
}
