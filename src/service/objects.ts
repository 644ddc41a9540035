/**
 * Objects written and read whole, for the S3 interface (contract §12). A write is an upload on
 * the one upload engine (uploads.ts): initiated with the body's length, its bytes streamed into
 * 5 MiB parts as they arrive, completed (SHA-256, the file.ready event, prewarm at every edge),
 * then older files of its name removed from every edge before it answers.
 */
import { errors } from '../core/errors.js';
import { fileTypeFor } from '../core/file-types.js';
import { expectedPartSize, partCount } from '../core/upload.js';
import type { ByteRange, StoredFile } from '../core/ports.js';
import type { Visibility } from '../core/records.js';
import type { Caller } from '../core/access.js';
import type { ServiceContext } from './context.js';
import type { Uploads } from './uploads.js';
import type { Located, Paths } from './paths.js';
import { authorize } from './policy.js';

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
}

export class Objects {
  constructor(private readonly c: ServiceContext, private readonly uploads: Uploads, private readonly paths: Paths) {}

  /** Stores the body as a new file and makes it the only one of its name in its folder. */
  async put(caller: Caller, w: ObjectWrite): Promise<StoredFile> {
    if (w.at.place !== 'inside') throw errors.outOfReach();
    const session = await this.uploads.initiate(caller, {
      name: w.name, visibility: w.visibility, size: w.size, file_type: fileTypeFor(w.name, w.contentType),
      folder_id: w.at.folder?.id ?? null, content_type: w.contentType,
    });
    const fileId = session.fileId;
    try {
      const count = partCount(w.size);
      const body = w.body[Symbol.asyncIterator]();
      let held: Buffer | null = null;
      for (let n = 1; n <= count; n++) {
        const target = { bucket: session.bucket, key: session.key, uploadId: session.uploadId, fileId, partNumber: n };
        const writer = await this.uploads.openPartWriter(caller, target);
        let left = expectedPartSize(w.size, n);
        try {
          while (left > 0) {
            if (!held) {
              const next = await body.next();
              // The body's own reader says what is wrong with a short body.
              if (next.done) throw errors.invalidRequest('The body ended before its length.');
              held = next.value;
            }
            const piece: Buffer = held.length <= left ? held : held.subarray(0, left);
            held = held.length <= left ? null : held.subarray(left);
            await writer.write(piece);
            left -= piece.length;
          }
        } catch (err) {
          await writer.discard().catch(() => {});
          throw err;
        }
        await this.uploads.receivePart({ ...target, caller, writer, invalidBase64: false });
      }
      // Read to the end: the checks that cover the body end with it.
      for (let next = await body.next(); !next.done; next = await body.next()) {
        if (next.value.length > 0) throw errors.invalidRequest('The body is longer than its length.');
      }
      const etag = w.etag();
      await this.c.meta.transaction((tx) => tx.updateFile(fileId, { s3_etag: etag, s3_meta: w.meta }));
      await this.uploads.completeAsService(fileId);
    } catch (err) {
      await this.uploads.abort(caller, fileId).catch(() => {});
      throw err;
    }
    const file = await this.c.requireFile(this.c.meta.read, fileId);
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
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw errors.fileNotFound(file.id);
      throw err;
    }
  }
}
