/**
 * Objects written and read whole, for the S3 interface (contract §12). A write is an upload on
 * the upload engine (engine.ts): begun with the body's length, its bytes streamed into
 * 5 MiB parts as they arrive, completed (SHA-256, the file.ready event, prewarm at every edge),
 * then older files of its name removed from every edge before it answers.
 */
import { errors } from '../../core/errors.js';
import { fileTypeFor } from '../../core/file-types.js';
import { expectedPartSize, partCount } from '../../core/upload.js';
import { isBlobNotFound, type ByteRange, type StoredFile } from '../../core/ports.js';
import type { Visibility } from '../../core/records.js';
import type { Caller } from '../../core/access.js';
import type { ServiceContext } from '../context.js';
import type { Located, Paths } from '../paths.js';
import { authorize } from '../policy.js';
import type { UploadEngine } from './engine.js';
import { ALL_PARTS } from './join.js';
import { initiateSpec } from './spec.js';
import { conditional, currentObject, oneWriterOfKey, type WriteCondition } from './s3-conditions.js';

export interface ObjectWrite {
  /** The folder it goes in; the caller must reach it. */
  at: Located;
  name: string;
  contentType: string;
  visibility: Visibility;
  /** Kept with the file for S3 (s3_meta); null for none. */
  meta: string | null;
  /** The body's length; it must hold exactly this many bytes. */
  size: number;
  body: AsyncIterable<Buffer>;
  /** The S3 ETag, asked once the body was read to its end; throwing refuses the object. */
  etag(): string;
  /** The metadata to keep once the body was read to its end (with what its reading verified); `meta` when absent. */
  finalMeta?(): string | null;
  /** S3's If-None-Match / If-Match on the object it replaces (s3-conditions.ts). */
  condition?: WriteCondition;
}

/** Cuts a body into consecutive pieces of given lengths, without copying. */
class BodyCutter {
  private held: Buffer | null = null;
  constructor(private readonly body: AsyncIterator<Buffer>) {}

  async *take(length: number): AsyncGenerator<Buffer> {
    let left = length;
    while (left > 0) {
      if (!this.held) {
        const next = await this.body.next();
        // The body's own reader says what is wrong with a short body.
        if (next.done) throw errors.invalidRequest('The body ended before its length.');
        this.held = next.value;
      }
      const piece: Buffer = this.held.length <= left ? this.held : this.held.subarray(0, left);
      this.held = this.held.length <= left ? null : this.held.subarray(left);
      left -= piece.length;
      yield piece;
    }
  }

  /** Reads to the end: the checks that cover the body end with it. */
  async end(): Promise<void> {
    if (this.held && this.held.length > 0) throw errors.invalidRequest('The body is longer than its length.');
    for (let next = await this.body.next(); !next.done; next = await this.body.next()) {
      if (next.value.length > 0) throw errors.invalidRequest('The body is longer than its length.');
    }
  }
}

export class Objects {
  constructor(private readonly c: ServiceContext, private readonly engine: UploadEngine, private readonly paths: Paths) {}

  /** Stores the body as a new file and makes it the only one of its name in its folder. */
  async put(caller: Caller, w: ObjectWrite): Promise<StoredFile> {
    if (w.at.place !== 'inside') throw errors.outOfReach();
    const folderId = w.at.folder?.id ?? null;
    // Before any byte is stored: a condition that fails now answers at once.
    w.condition?.judge(await currentObject(this.c.meta.read, folderId, w.name), 'check');
    const spec = await initiateSpec(this.c, caller, {
      name: w.name, visibility: w.visibility, size: w.size, file_type: fileTypeFor(w.name, w.contentType),
      folder_id: w.at.folder?.id ?? null, content_type: w.contentType,
    }, true);
    const upload = await this.engine.begin({ ...spec, extra: { s3_meta: w.meta } });
    try {
      const body = new BodyCutter(w.body[Symbol.asyncIterator]());
      for (let n = 1; n <= partCount(w.size); n++) {
        const size = expectedPartSize(w.size, n);
        const outcome = await this.engine.writePart(upload, n, body.take(size), size);
        if (!outcome.kept) throw errors.unavailable('The object could not be stored; send it again.');
      }
      await body.end();
      const policy = { ...ALL_PARTS, extra: { s3_etag: w.etag(), ...(w.finalMeta ? { s3_meta: w.finalMeta() } : {}) } };
      const condition = w.condition;
      if (condition) await oneWriterOfKey(this.c, folderId, w.name, () => this.engine.complete(upload.id, conditional(this.c, policy, condition, { atCommit: false })));
      else await this.engine.complete(upload.id, policy);
    } catch (err) {
      await this.engine.abort(async (tx) => {
        const file = await tx.getFile(upload.id, 'update');
        if (!file || file.status !== 'uploading') throw err;
        // Its parts may have been joined before a condition refused the commit: that object goes too.
        await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: null, object: 1 }], this.c.now());
        return file;
      }).catch(() => {});
      throw err;
    }
    const file = await this.c.requireFile(this.c.meta.read, upload.id);
    await this.paths.replaceOlder(file);
    return file;
  }

  /** The bytes of a ready file the caller found by path (paths.newest). */
  async read(caller: Caller, file: StoredFile, range?: ByteRange): Promise<NodeJS.ReadableStream> {
    authorize(caller, 'file.read');
    try {
      return await this.c.blobs.read(file.blob_key, range);
    } catch (err) {
      // Deleted since it was looked up.
      if (isBlobNotFound(err)) throw errors.fileNotFound(file.id);
      throw err;
    }
  }
}
