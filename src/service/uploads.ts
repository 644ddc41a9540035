/**
 * Uploads (contract §4): initiate, parts, complete, status, abort and expiry. A part is
 * answered once it will survive a crash and recorded once its bytes are durable.
 */
import mime from 'mime';
import { KeyedQueue } from '../core/coalesce.js';
import { errors, isCofferError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { nameKey, validateName } from '../core/names.js';
import { isoTime, parseFileType, parseVisibility } from '../core/records.js';
import { isSendableContentType } from '../core/file-types.js';
import { CHUNK_SIZE, checkDeclaredSize, checkPartNumber, expectedPartSize, missingParts, partCount } from '../core/upload.js';
import type { CommittedPart, MetadataTx, PartWriter, StoredFile } from '../core/ports.js';
import { UploadGoneError } from '../core/ports.js';
import type { FileRecord, InitiateUploadRequest, UploadPartResponse, UploadSession, UploadStatusResponse } from '../core/api.js';
import { BufferedPartWriter, DiscardingPartWriter } from './part-writers.js';
import type { ServiceContext } from './context.js';
import type { Caller } from '../core/access.js';
import { checkGrantLimits, defaultUploadFolder, fileInReach, takeGrantFile } from './access.js';
import { authorize, authorizeFolder } from './policy.js';
import { removeFiles } from './trash.js';
import { joinParts } from './completion.js';

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


export class Uploads {
  constructor(private readonly c: ServiceContext) {}

  /** `within` runs in the transaction that records the upload (tus adds its row there). */
  async initiate(caller: Caller, req: InitiateUploadRequest, within?: (tx: MetadataTx, file: StoredFile) => Promise<void>): Promise<UploadSession> {
    authorize(caller, 'upload');
    const folderId = req.folder_id ?? defaultUploadFolder(caller);
    if (folderId !== null) await this.c.requireFolder(this.c.meta.read, folderId);
    await authorizeFolder(this.c.meta.read, caller, 'upload', folderId);
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
   * when `body` came first, the store's writer for a part named later when the store has
   * one (the disk), else a buffer that `receivePart` hands to the store.
   */
  async openPartWriter(caller: Caller, fieldsBeforeBody: Record<string, unknown> | null): Promise<PartWriter> {
    const target = partTargetOf(fieldsBeforeBody);
    if (!target) return this.c.blobs.openUnnamedPart ? this.c.blobs.openUnnamedPart() : new BufferedPartWriter();
    let file: StoredFile;
    try {
      authorize(caller, 'upload');
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
      authorize(input.caller, 'upload');
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
      const replacing = this.c.parts.has(file.id, input.partNumber) || (await this.c.meta.read.getPart(file.id, input.partNumber)) !== undefined;
      let part: CommittedPart;
      try {
        part = await this.c.blobs.commitPart(file.blob_key, input.uploadId, input.partNumber, writer);
      } catch (err) {
        if (!(err instanceof UploadGoneError)) throw err;
        // Completed or aborted meanwhile, perhaps by another origin: answer as the state now says.
        await this.requireUploadFor(this.c.meta.read, input.caller, input);
        throw await this.recoverJoined(file);
      }
      handedOver = true;
      const recorded = this.c.parts.record(file, input.partNumber, part, replacing);
      // Several origins may share a PostgreSQL store, and the complete may reach another one,
      // which knows only recorded parts: there every part is answered once it is recorded.
      if ((replacing || this.c.meta.dialect === 'postgres') && !(await recorded)) {
        // Completed, aborted or deleted while it was stored: answered as the state now says, never 200 for a part not kept.
        await this.requireUploadFor(this.c.meta.read, input.caller, input);
        throw errors.unavailable('The part could not be stored; send it again.');
      }
      const received = new Set(await this.c.meta.read.partNumbers(file.id));
      for (const n of this.c.parts.numbers(file.id)) received.add(n);
      return { file_id: file.id, partNumber: input.partNumber, size: part.size, etag: part.etag, received_parts: received.size, part_count: count };
    } finally {
      if (!handedOver) {
        await input.writer.discard().catch(() => {});
        if (writer !== input.writer) await writer.discard().catch(() => {});
      }
    }
  }

  /**
   * The error for a part of an open upload whose multipart upload the store no longer has.
   * When the object stands at the upload's key, a completion joined the parts and stopped
   * before recording it (an origin killed inside complete-upload, on S3): that completion is
   * finished now, and the part is refused as for any completed upload.
   */
  private async recoverJoined(file: StoredFile): Promise<Error> {
    if ((await this.c.blobs.size(file.blob_key)) === null) return errors.uploadNotFound();
    try {
      await this.completeAsService(file.id);
    } catch {
      return errors.uploadNotFound();
    }
    return errors.uploadCompleted();
  }

  /** Waits for every answered part of every upload to be recorded: before a shutdown. */
  drain(): Promise<void> {
    return this.c.parts.drain();
  }

  /** One completion per file at a time in this process: two joins racing over one object help nobody. */
  private readonly completing = new KeyedQueue<string>();

  /** Completes an upload for a caller who may: see completeAsService. */
  async complete(caller: Caller, fileId: string): Promise<FileRecord> {
    authorize(caller, 'upload');
    await this.c.requireFileFor(this.c.meta.read, caller, fileId);
    return this.completeAsService(fileId);
  }

  /** Completes an upload whoever asked; the caller was checked by whoever calls this. */
  completeAsService(fileId: string): Promise<FileRecord> {
    return this.completing.run(fileId, () => this.completeOnce(fileId));
  }

  private async completeOnce(fileId: string): Promise<FileRecord> {
    await this.c.parts.settle(fileId);
    const file = await this.c.requireFile(this.c.meta.read, fileId);
    if (file.status === 'ready') return this.c.toFileRecord(this.c.meta.read, file);
    if (await this.c.meta.read.s3.getUpload(fileId)) throw errors.s3Upload();
    // One join per file among every origin sharing the store: another completion of the same
    // file waits here, then finds it ready and answers the same record.
    const outcome = await this.c.meta.exclusive(`complete:${fileId}`, () => this.completeExclusively(fileId));
    this.c.emptyTrash();
    if (outcome.seq) await this.c.publish(outcome.seq);
    return outcome.record;
  }

  /** Joins every part, all of them required, into a file of the declared size. */
  private completeExclusively(fileId: string): Promise<{ record: FileRecord; seq: number }> {
    return joinParts(this.c, fileId, {
      declaredSize: true,
      choose: (file, parts) => {
        const missing = missingParts(partCount(file.size), parts.map((p) => p.part_number));
        if (missing.length > 0) throw errors.missingParts(missing);
        return parts;
      },
    });
  }

  async status(caller: Caller, fileId: string): Promise<UploadStatusResponse> {
    authorize(caller, 'upload');
    await this.c.parts.settle(fileId);
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
    authorize(caller, 'upload');
    await this.c.meta.transaction(async (tx) => {
      const file = await this.c.requireFileFor(tx, caller, fileId, 'update');
      if (file.status === 'ready') throw errors.uploadCompleted();
      await removeFiles(tx, [file], this.c.now());
    });
    this.c.emptyTrash();
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
    if (total > 0) this.c.emptyTrash();
    return total;
  }
}
