/**
 * S3's multipart uploads (contract §12) on Coffer's upload engine: the same files in `uploading`
 * state, the same blob store multipart upload with parts streamed in as they arrive and
 * recorded once durable (part-records.ts), the same join (completion.ts: SHA-256, file.ready,
 * prewarm at every edge). What differs is S3's part rules: a part is any size up to 5 GiB and
 * numbered 1–10,000, the size of the file is known only at the end, and the client says which
 * parts make the object; each but the last must be at least 5 MiB. An upload's S3 UploadId is
 * its file id.
 */
import { createHash } from 'node:crypto';
import { errors, fail } from '../core/errors.js';
import type { FieldErrorCode } from '../core/error-codes.js';
import { newId } from '../core/ids.js';
import { nameKey, validateName } from '../core/names.js';
import { fileTypeFor } from '../core/file-types.js';
import { CHUNK_SIZE } from '../core/upload.js';
import { UploadGoneError, type MetadataTx, type S3Upload, type StoredFile, type StoredPart } from '../core/ports.js';
import type { Visibility } from '../core/records.js';
import type { Caller } from '../core/access.js';
import type { ServiceContext } from './context.js';
import type { Located, Paths } from './paths.js';
import { fileInReach } from './access.js';
import { authorize } from './policy.js';
import { joinParts } from './completion.js';
import { removeFiles } from './trash.js';

export const MAX_PARTS = 10_000;
export const MAX_PART_SIZE = 5 * 1024 * 1024 * 1024;

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
  constructor(private readonly c: ServiceContext, private readonly paths: Paths) {}

  async create(caller: Caller, u: NewUpload): Promise<StoredFile> {
    authorize(caller, 'upload');
    if (u.at.place !== 'inside') throw errors.outOfReach();
    const name = validateName(u.name);
    const id = newId();
    const blobKey = `files/${id}`;
    const { uploadId } = await this.c.blobs.createMultipart(blobKey);
    const now = this.c.now();
    const folderId = u.at.folder?.id ?? null;
    const file: StoredFile = {
      id, name, name_key: nameKey(name), visibility: u.visibility, size: 0, file_type: fileTypeFor(name, u.contentType), content_type: u.contentType,
      folder_id: folderId, status: 'uploading', sha256: null, created_at: now, updated_at: now, completed_at: null,
      bucket: this.c.blobs.bucket, blob_key: blobKey, upload_id: uploadId, upload_expires_at: now + this.c.opts.uploadTtlSeconds * 1000,
      grant_id: null, links_revoked_at: null, s3_etag: null, s3_meta: u.meta,
    };
    try {
      await this.c.meta.transaction(async (tx) => {
        if (folderId !== null) await this.c.requireFolder(tx, folderId, 'folder_id', 'share');
        await tx.insertFile(file);
        await tx.s3.insertUpload({ file_id: id, bucket_id: u.bucketId, object_key: u.key, created_at: now });
      });
    } catch (err) {
      await this.c.blobs.abortMultipart(blobKey, uploadId).catch(() => {});
      throw err;
    }
    return file;
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
    const writer = await this.c.blobs.openPart(file.blob_key, file.upload_id!, partNumber, size);
    let etag: string;
    try {
      for await (const piece of body) await writer.write(piece);
      etag = md5();
    } catch (err) {
      await writer.discard().catch(() => {});
      throw err;
    }
    const replacing = this.c.parts.has(file.id, partNumber) || (await this.c.meta.read.getPart(file.id, partNumber)) !== undefined;
    let part;
    try {
      part = await this.c.blobs.commitPart(file.blob_key, file.upload_id!, partNumber, writer);
    } catch (err) {
      if (err instanceof UploadGoneError) throw errors.uploadNotFound();
      throw err;
    }
    const recorded = this.c.parts.record(file, partNumber, part, replacing, etag);
    // Another origin sharing a PostgreSQL store knows only recorded parts.
    if ((replacing || this.c.meta.dialect === 'postgres') && !(await recorded)) {
      // Completed or aborted while it was stored: never 200 for a part not kept.
      await this.requireUpload(this.c.meta.read, caller, u);
      throw errors.unavailable('The part could not be stored; send it again.');
    }
    return etag;
  }

  /** The parts recorded so far, by number, with their MD5s. */
  async parts(caller: Caller, u: UploadKey): Promise<{ file: StoredFile; upload: S3Upload; parts: StoredPart[] }> {
    authorize(caller, 'upload.list');
    await this.c.parts.settle(u.uploadId);
    const found = await this.requireUpload(this.c.meta.read, caller, u);
    return { ...found, parts: await this.c.meta.read.listParts(u.uploadId) };
  }

  /**
   * Joins the parts the client lists (ascending, each with its ETag, every one but the last at
   * least 5 MiB) into the object, whose ETag is S3's multipart form; then older files of its
   * name go from every edge. A repeat of a completion that succeeded answers the same file.
   */
  async complete(caller: Caller, u: UploadKey, listed: Array<{ partNumber: number; etag: string }>): Promise<StoredFile> {
    authorize(caller, 'upload');
    const done = await this.c.meta.read.getFile(u.uploadId);
    if (done && done.status === 'ready' && !(await this.c.meta.read.s3.getUpload(u.uploadId)) && done.s3_etag?.includes('-') && (await fileInReach(this.c.meta.read, caller, done))) {
      return done;
    }
    await this.c.parts.settle(u.uploadId);
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
    const outcome = await this.c.meta.exclusive(`complete:${u.uploadId}`, () => joinParts(this.c, u.uploadId, {
      declaredSize: false, choose, extra: { s3_etag: etag }, onReady: (tx) => tx.s3.deleteUpload(u.uploadId),
    }));
    this.c.emptyTrash();
    if (outcome.seq) await this.c.publish(outcome.seq);
    const file = await this.c.requireFile(this.c.meta.read, u.uploadId);
    await this.paths.replaceOlder(file);
    return file;
  }

  async abort(caller: Caller, u: UploadKey): Promise<void> {
    authorize(caller, 'upload');
    await this.c.meta.transaction(async (tx) => {
      const { file } = await this.requireUpload(tx, caller, u, 'update');
      await removeFiles(tx, [file], this.c.now());
    });
    this.c.emptyTrash();
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
