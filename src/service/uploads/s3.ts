/**
 * S3's multipart uploads (contract §12) on the upload engine (engine.ts): the same files in
 * `uploading` state, the same blob store multipart upload with parts streamed in as they arrive
 * and recorded once durable (part-records.ts), the same join (join.ts: SHA-256, file.ready,
 * prewarm at every edge). What differs is S3's part rules: a part is any size up to 5 GiB and
 * numbered 1–10,000, the size of the file is known only at the end, and the client says which
 * parts make the object; each but the last must be at least 5 MiB. An upload's S3 UploadId is
 * its file id.
 */
import { createHash } from 'node:crypto';
import { errors, fail } from '../../core/errors.js';
import type { FieldErrorCode } from '../../core/error-codes.js';
import { validateFileName } from '../../core/names.js';
import { fileTypeFor } from '../../core/file-types.js';
import { CHUNK_SIZE } from '../../core/upload.js';
import type { MetadataTx, S3Upload, StoredFile, StoredPart } from '../../core/ports.js';
import type { Visibility } from '../../core/records.js';
import type { Caller } from '../../core/access.js';
import type { ServiceContext } from '../context.js';
import type { Located, Paths } from '../paths.js';
import { fileInReach } from '../access.js';
import { authorize } from '../policy.js';
import { removeFiles } from '../trash.js';
import type { UploadEngine } from './engine.js';
import type { PartsPolicy } from './join.js';
import { conditional, oneWriterOfKey, type WriteCondition } from './s3-conditions.js';

export const MAX_PARTS = 10_000;
export const MAX_PART_SIZE = 5 * 1024 * 1024 * 1024;
/** DeleteBucket looks at no more files than this for open uploads to abort. */
const MAX_FILES_SCANNED = 10_000;

/** Where an upload is, as the S3 client names it: its bucket (a top-level folder) and key. */
export interface UploadKey {
  uploadId: string;
  bucketId: string;
  key: string;
}

export interface NewUpload {
  at: Located;
  bucketId: string;
  key: string;
  name: string;
  contentType: string;
  visibility: Visibility;
  meta: string | null;
}

const partError = (code: FieldErrorCode, message: string, partNumber?: number) =>
  fail(code, message, partNumber === undefined ? {} : { part_number: partNumber });

export class Multipart {
  constructor(private readonly c: ServiceContext, private readonly engine: UploadEngine, private readonly paths: Paths) {}

  async create(caller: Caller, u: NewUpload): Promise<StoredFile> {
    authorize(caller, 'upload');
    if (u.at.place !== 'inside') throw errors.outOfReach();
    const name = validateFileName(u.name, true);
    return this.engine.begin({
      name, visibility: u.visibility, size: 0, fileType: fileTypeFor(name, u.contentType), contentType: u.contentType,
      folderId: u.at.folder?.id ?? null, grantId: null, extra: { s3_etag: null, s3_meta: u.meta },
      within: (tx, file) => tx.s3.insertUpload({ file_id: file.id, bucket_id: u.bucketId, object_key: u.key, created_at: file.created_at }),
    });
  }

  /** The open upload these values name, or 404 upload_not_found. */
  private async requireUpload(tx: MetadataTx, caller: Caller, u: UploadKey, lock?: 'update'): Promise<{ file: StoredFile; upload: S3Upload }> {
    const upload = await tx.s3.getUpload(u.uploadId);
    const file = upload ? await tx.getFile(u.uploadId, lock) : undefined;
    if (!upload || !file || upload.bucket_id !== u.bucketId || upload.object_key !== u.key || file.status !== 'uploading' || this.c.isExpired(file)
      || !(await fileInReach(tx, caller, file))) {
      throw errors.uploadNotFound();
    }
    return { file, upload };
  }

  /**
   * Streams one part into the upload. `md5` is asked once the body was read to its end (its
   * checks passed); it is the part's ETag. A part sent again replaces the one before.
   */
  async writePart(caller: Caller, u: UploadKey, partNumber: number, size: number, body: AsyncIterable<Buffer>, md5: () => string): Promise<string> {
    authorize(caller, 'upload');
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PARTS) {
      throw errors.invalidField('invalid_part_number', 'partNumber', `Part numbers are whole numbers from 1 to ${MAX_PARTS}.`);
    }
    if (size > MAX_PART_SIZE) throw errors.payloadTooLarge(MAX_PART_SIZE);
    const { file } = await this.requireUpload(this.c.meta.read, caller, u);
    const outcome = await this.engine.writePart(file, partNumber, body, size, md5);
    if (!outcome.kept) {
      // Completed or aborted while it was stored: never 200 for a part not kept.
      if (outcome.why === 'gone') throw errors.uploadNotFound();
      await this.requireUpload(this.c.meta.read, caller, u);
      throw errors.unavailable('The part could not be stored; send it again.');
    }
    return outcome.md5!;
  }

  /** The parts recorded so far, by number, with their MD5s. */
  async parts(caller: Caller, u: UploadKey): Promise<{ file: StoredFile; upload: S3Upload; parts: StoredPart[] }> {
    authorize(caller, 'upload.list');
    await this.engine.settle(u.uploadId);
    const found = await this.requireUpload(this.c.meta.read, caller, u);
    return { ...found, parts: await this.c.meta.read.listParts(u.uploadId) };
  }

  /**
   * Joins the parts the client lists (ascending, each with its ETag, every one but the last at
   * least 5 MiB) into the object, whose ETag is S3's multipart form; then older files of its
   * name go from every edge. A repeat of a completion that succeeded answers the same file.
   * With a `condition`, one refused before the join leaves the upload open; one refused at the
   * commit (another write of the key came in between) removes it, its parts already joined.
   */
  async complete(caller: Caller, u: UploadKey, listed: Array<{ partNumber: number; etag: string }>, condition?: WriteCondition): Promise<StoredFile> {
    authorize(caller, 'upload');
    const done = await this.c.meta.read.getFile(u.uploadId);
    if (done && done.status === 'ready' && !(await this.c.meta.read.s3.getUpload(u.uploadId)) && done.s3_etag?.includes('-') && (await fileInReach(this.c.meta.read, caller, done))) {
      return done;
    }
    await this.engine.settle(u.uploadId);
    await this.requireUpload(this.c.meta.read, caller, u);
    if (listed.length === 0 || listed.length > MAX_PARTS) throw partError('malformed_parts', 'List between 1 and 10,000 parts.');
    for (let i = 1; i < listed.length; i++) {
      if (listed[i]!.partNumber <= listed[i - 1]!.partNumber) throw partError('invalid_part_order', 'The parts must be listed in ascending order of part number.');
    }
    const choose = (_file: StoredFile, recorded: StoredPart[]): StoredPart[] => {
      const byNumber = new Map(recorded.map((p) => [p.part_number, p]));
      return listed.map((l, i) => {
        const p = byNumber.get(l.partNumber);
        if (!p || !p.md5 || p.md5 !== l.etag.replace(/^"|"$/g, '').toLowerCase()) throw partError('invalid_part', `Part ${l.partNumber} was not uploaded, or its ETag is not "${l.etag}".`, l.partNumber);
        if (i < listed.length - 1 && p.size < CHUNK_SIZE) throw partError('entity_too_small', `Part ${l.partNumber} is ${p.size} bytes: every part but the last must be at least 5 MiB.`, l.partNumber);
        return p;
      });
    };
    const preview = choose(await this.c.requireFile(this.c.meta.read, u.uploadId), await this.c.meta.read.listParts(u.uploadId));
    const total = preview.reduce((sum, p) => sum + p.size, 0);
    if (total > this.c.opts.maxFileSize) throw errors.fileTooLarge(this.c.opts.maxFileSize);
    const etag = `${createHash('md5').update(Buffer.concat(preview.map((p) => Buffer.from(p.md5!, 'hex')))).digest('hex')}-${preview.length}`;
    const policy: PartsPolicy = { declaredSize: false, choose, keepParts: true, extra: { s3_etag: etag }, onReady: (tx) => tx.s3.deleteUpload(u.uploadId) };
    if (condition) await this.completeIf(u.uploadId, policy, condition);
    else await this.engine.complete(u.uploadId, policy);
    const file = await this.c.requireFile(this.c.meta.read, u.uploadId);
    await this.paths.replaceOlder(file);
    return file;
  }

  private async completeIf(uploadId: string, policy: PartsPolicy, condition: WriteCondition): Promise<void> {
    const upload = await this.c.requireFile(this.c.meta.read, uploadId);
    const failed = { atCommit: false };
    try {
      await oneWriterOfKey(this.c, upload.folder_id, upload.name, () => this.engine.complete(uploadId, conditional(this.c, policy, condition, failed)));
    } catch (err) {
      if (!failed.atCommit) throw err;
      await this.engine.abort(async (tx) => {
        const file = await tx.getFile(uploadId, 'update');
        if (!file || file.status !== 'uploading') throw err;
        await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: null, object: 1 }], this.c.now());
        return file;
      }).catch(() => {});
      throw err;
    }
  }

  /**
   * The parts a ready multipart object was joined from (number, size, MD5), in order; empty
   * for an object stored whole, or completed before parts were kept with their object.
   */
  async objectParts(caller: Caller, file: StoredFile): Promise<StoredPart[]> {
    authorize(caller, 'file.read');
    if (file.status !== 'ready' || !file.s3_etag?.includes('-')) return [];
    return this.c.meta.read.listParts(file.id);
  }

  async abort(caller: Caller, u: UploadKey): Promise<void> {
    authorize(caller, 'upload');
    await this.engine.abort(async (tx) => (await this.requireUpload(tx, caller, u, 'update')).file);
  }

  /**
   * DeleteBucket on a bucket whose only files are open uploads of its own (S3 deletes it and
   * aborts them): removes those uploads, their parts with them, and answers true. Anything else
   * in it (an object, an upload of another dialect, one out of reach) leaves everything as it
   * was and answers false; so does a bucket past `MAX_FILES_SCANNED` files.
   */
  async abortForBucketDelete(caller: Caller, bucketId: string): Promise<boolean> {
    authorize(caller, 'folder.write');
    const removed = await this.c.meta.transaction(async (tx) => {
      const ids = [bucketId, ...(await tx.descendantFolderIds(bucketId))];
      let count = 0;
      for (const id of ids) count += (await tx.countChildren(id)).files;
      if (count === 0 || count > MAX_FILES_SCANNED) return false;
      const files = await tx.filesInFolders(ids, 'update');
      for (const file of files) {
        const upload = file.status === 'uploading' ? await tx.s3.getUpload(file.id) : undefined;
        if (upload?.bucket_id !== bucketId || !(await fileInReach(tx, caller, file))) return false;
      }
      await removeFiles(tx, files, this.c.now());
      return true;
    });
    if (removed) this.c.emptyTrash();
    return removed;
  }

  /** A bucket's open uploads the caller reaches, by key, after a key and upload id. */
  async list(caller: Caller, bucketId: string, prefix: string, after: { key: string; fileId: string } | null, limit: number): Promise<{ uploads: S3Upload[]; more: boolean }> {
    authorize(caller, 'upload.list');
    const out: S3Upload[] = [];
    let from = after;
    for (;;) {
      const rows = await this.c.meta.read.s3.listUploads(bucketId, prefix, from, limit + 1);
      for (const row of rows) {
        const file = await this.c.meta.read.getFile(row.file_id);
        if (file && !this.c.isExpired(file) && (await fileInReach(this.c.meta.read, caller, file))) out.push(row);
        if (out.length > limit) return { uploads: out.slice(0, limit), more: true };
      }
      if (rows.length <= limit) return { uploads: out, more: false };
      const last = rows[rows.length - 1]!;
      from = { key: last.object_key, fileId: last.file_id };
    }
  }
}
