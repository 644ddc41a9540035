/**
 * contract §4's parts, named by the five session values: the raw form, whose values come
 * before its bytes (the query string), on the upload engine. The JSON form (json.ts) adds
 * base64 and values in any order on top of this.
 */
import { errors, isCofferError } from '../../core/errors.js';
import { checkPartNumber, expectedPartSize, partCount } from '../../core/upload.js';
import type { MetadataTx, PartWriter, StoredFile } from '../../core/ports.js';
import type { UploadPartResponse } from '../../core/api.js';
import type { Caller } from '../../core/access.js';
import type { ServiceContext } from '../context.js';
import { fileInReach } from '../access.js';
import { authorize } from '../policy.js';
import type { UploadEngine } from './engine.js';

/** The five values that name the part a request is for. */
export interface PartTarget {
  bucket: string;
  key: string;
  uploadId: string;
  fileId: string;
  partNumber: number;
}

/** The part the fields name, when all five are there with the right types. */
export function partTargetOf(fields: Record<string, unknown> | null): PartTarget | null {
  if (!fields) return null;
  const { bucket, key, uploadId, fileId, partNumber } = fields;
  if (typeof bucket !== 'string' || typeof key !== 'string' || typeof uploadId !== 'string' || typeof fileId !== 'string' || typeof partNumber !== 'number') return null;
  return { bucket, key, uploadId, fileId, partNumber };
}

export const sameTarget = (a: PartTarget, b: PartTarget): boolean =>
  a.bucket === b.bucket && a.key === b.key && a.uploadId === b.uploadId && a.fileId === b.fileId && a.partNumber === b.partNumber;

/** A part's upload as found for a request: its file, how many parts it has, the size this one must have. */
export interface PartPlace {
  file: StoredFile;
  count: number;
  expected: number;
}

export class RawParts {
  constructor(private readonly c: ServiceContext, private readonly engine: UploadEngine) {}

  /** The open upload the session values name, in the order contract §4 answers. */
  async requireUpload(tx: MetadataTx, caller: Caller, target: Omit<PartTarget, 'partNumber'>): Promise<StoredFile> {
    const file = await tx.getFile(target.fileId);
    if (!file || file.bucket !== target.bucket || file.blob_key !== target.key || file.upload_id !== target.uploadId) throw errors.uploadNotFound();
    if (!(await fileInReach(tx, caller, file))) throw errors.uploadNotFound();
    if (file.status === 'ready') throw errors.uploadCompleted();
    if (this.c.isExpired(file)) throw errors.uploadNotFound('This upload expired and was aborted; start a new upload.');
    return file;
  }

  /** Where the part goes, checked: the caller may upload, the upload is open, the number is one of its parts. */
  async place(caller: Caller, target: PartTarget): Promise<PartPlace> {
    authorize(caller, 'upload');
    const file = await this.requireUpload(this.c.meta.read, caller, target);
    const count = partCount(file.size);
    checkPartNumber(target.partNumber, count);
    return { file, count, expected: expectedPartSize(file.size, target.partNumber) };
  }

  /**
   * The store's writer for the part, with the size it must have, so the bytes stream on at
   * once; null when the values name no open upload or valid part (the error is answered once
   * the request is read, in contract order).
   */
  async open(caller: Caller, target: PartTarget): Promise<PartWriter | null> {
    let at: PartPlace;
    try {
      at = await this.place(caller, target);
    } catch (err) {
      if (isCofferError(err)) return null;
      throw err;
    }
    return this.engine.openPart(at.file, target.partNumber, at.expected);
  }

  /** Makes the bytes `writer` received the part; the writer is consumed either way. */
  async receive(caller: Caller, target: PartTarget, writer: PartWriter | null): Promise<UploadPartResponse> {
    try {
      const at = await this.place(caller, target);
      // Opened for no valid part, yet the part is valid now: the upload changed while the bytes came.
      if (!writer) throw errors.invalidRequest('The part changed while its bytes were read; send it again.');
      checkSize(at, target.partNumber, writer.bytesWritten);
      return await this.commit(caller, target, at, writer);
    } catch (err) {
      // A committed writer has nothing left to discard.
      await writer?.discard().catch(() => {});
      throw err;
    }
  }

  /** Commits a part of the right size through the engine and answers as contract §4 says. */
  async commit(caller: Caller, target: PartTarget, at: PartPlace, writer: PartWriter): Promise<UploadPartResponse> {
    const outcome = await this.engine.commitPart(at.file, target.partNumber, writer);
    if (!outcome.kept) {
      // Completed, aborted or deleted meanwhile, perhaps by another origin: answered as the state now says.
      await this.requireUpload(this.c.meta.read, caller, target);
      if (outcome.why === 'gone') throw (await this.engine.recoverJoined(at.file)) ? errors.uploadCompleted() : errors.uploadNotFound();
      // Never 200 for a part not kept.
      throw errors.unavailable('The part could not be stored; send it again.');
    }
    const received = await this.engine.received(at.file.id);
    return { file_id: at.file.id, partNumber: target.partNumber, size: outcome.part.size, etag: outcome.part.etag, received_parts: received.size, part_count: at.count };
  }
}

/** Every part but the last is exactly chunk_size bytes, the last the rest. */
export function checkSize(at: PartPlace, partNumber: number, received: number): void {
  if (received !== at.expected) {
    throw errors.invalidField('part_size_mismatch', 'body', `Part ${partNumber} must decode to ${at.expected} bytes, not ${received}.`, { expected: at.expected, received });
  }
}
