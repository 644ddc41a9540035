/**
 * Uploads (contract §4): initiate, parts, complete, status, abort and expiry, on the upload
 * engine. Parts come in two forms: raw (raw.ts) and JSON, whose chunk carries its bytes
 * base64 in `body` with the fields that name the part in any order; here is what that adds.
 */
import { errors } from '../../core/errors.js';
import { isoTime } from '../../core/records.js';
import { CHUNK_SIZE, missingParts, partCount } from '../../core/upload.js';
import type { MetadataTx, PartWriter, StoredFile } from '../../core/ports.js';
import type { FileRecord, InitiateUploadRequest, UploadPartResponse, UploadSession, UploadStatusResponse } from '../../core/api.js';
import type { Caller } from '../../core/access.js';
import type { ServiceContext } from '../context.js';
import { authorize } from '../policy.js';
import { BufferedPartWriter, DiscardingPartWriter } from './json-writers.js';
import { ALL_PARTS, type PartsPolicy } from './join.js';
import type { UploadEngine } from './engine.js';
import { initiateSpec } from './spec.js';
import { RawParts, checkSize, partTargetOf, sameTarget, type PartTarget } from './raw.js';

export interface PartInput extends PartTarget {
  caller: Caller;
  /** The decoded chunk as written so far, from `openPartWriter`. */
  writer: PartWriter;
  /** Set when the body was not valid base64. */
  invalidBase64: boolean;
}

export class Uploads {
  /** Parts whose fields come before their bytes. */
  readonly raw: RawParts;
  /** The part each writer of `openPartWriter` was opened for. */
  private readonly partTargets = new WeakMap<PartWriter, PartTarget>();
  /** contract §4's completion: every part; an upload S3 started is S3's to complete. */
  private readonly policy: PartsPolicy;

  constructor(private readonly c: ServiceContext, private readonly engine: UploadEngine) {
    this.raw = new RawParts(c, engine);
    this.policy = {
      ...ALL_PARTS,
      check: async (file) => {
        if (await c.meta.read.s3.getUpload(file.id)) throw errors.s3Upload();
      },
    };
  }

  /** `within` runs in the transaction that records the upload (tus adds its row there). */
  async initiate(caller: Caller, req: InitiateUploadRequest, within?: (tx: MetadataTx, file: StoredFile) => Promise<void>): Promise<UploadSession> {
    const spec = await initiateSpec(this.c, caller, req);
    let record: FileRecord | undefined;
    const file = await this.engine.begin({
      ...spec,
      within: async (tx, file) => {
        await within?.(tx, file);
        record = await this.c.toFileRecord(tx, file);
      },
    });
    return {
      ...record!, fileId: file.id, bucket: file.bucket, key: file.blob_key, uploadId: file.upload_id!, chunk_size: CHUNK_SIZE, part_count: partCount(file.size),
      expires_at: isoTime(file.upload_expires_at!),
    };
  }

  /**
   * Where a chunk's decoded bytes go while its request is still being read. When the fields
   * before `body` name an open upload and a valid part, the store's writer for it (raw.ts);
   * when they name none, a writer that only counts (the error is answered once the request is
   * read); when `body` came first, the store's writer for a part named later when the store
   * has one (the disk), else a buffer that `receivePart` hands to the store.
   */
  async openPartWriter(caller: Caller, fieldsBeforeBody: Record<string, unknown> | null): Promise<PartWriter> {
    const target = partTargetOf(fieldsBeforeBody);
    if (!target) return this.c.blobs.openUnnamedPart ? this.c.blobs.openUnnamedPart() : new BufferedPartWriter();
    const writer = await this.raw.open(caller, target);
    if (!writer) return new DiscardingPartWriter();
    this.partTargets.set(writer, target);
    return writer;
  }

  /** Makes a received chunk a part of its upload. The writer is consumed either way. */
  async receivePart(input: PartInput): Promise<UploadPartResponse> {
    let writer: PartWriter | null = null;
    try {
      const at = await this.raw.place(input.caller, input);
      if (input.invalidBase64) throw errors.invalidField('invalid_base64', 'body', '"body" is not valid base64.');
      checkSize(at, input.partNumber, input.writer.bytesWritten);
      if (input.writer instanceof BufferedPartWriter) {
        // "body" came before the fields that name the part: the part is known only now.
        writer = await this.engine.openPart(at.file, input.partNumber, at.expected);
        await input.writer.replayInto(writer);
      } else {
        const target = this.partTargets.get(input.writer);
        if (input.writer instanceof DiscardingPartWriter || (target && !sameTarget(target, input))) {
          // Only a field named again after "body" can make the part differ from the one opened.
          throw errors.invalidRequest('The body names a field more than once; send each field once.');
        }
      }
      if (writer) await input.writer.discard();
      return await this.raw.commit(input.caller, input, at, writer ?? input.writer);
    } catch (err) {
      // A committed writer has nothing left to discard.
      await input.writer.discard().catch(() => {});
      await writer?.discard().catch(() => {});
      throw err;
    }
  }

  /** Waits for every answered part of every upload to be recorded: before a shutdown. */
  drain(): Promise<void> {
    return this.engine.drain();
  }

  /** Completes an upload for a caller who may: see completeAsService. */
  async complete(caller: Caller, fileId: string): Promise<FileRecord> {
    authorize(caller, 'upload');
    await this.c.requireFileFor(this.c.meta.read, caller, fileId);
    return this.completeAsService(fileId);
  }

  /** Completes an upload whoever asked; the caller was checked by whoever calls this. */
  completeAsService(fileId: string): Promise<FileRecord> {
    return this.engine.complete(fileId, this.policy);
  }

  async status(caller: Caller, fileId: string): Promise<UploadStatusResponse> {
    authorize(caller, 'upload');
    await this.engine.settle(fileId);
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
    await this.engine.abort(async (tx) => {
      const file = await this.c.requireFileFor(tx, caller, fileId, 'update');
      if (file.status === 'ready') throw errors.uploadCompleted();
      return file;
    });
    return { file_id: fileId, aborted: true };
  }

  /** Aborts uploads left open past their time; returns how many. */
  expire(): Promise<number> {
    return this.engine.expire();
  }
}
