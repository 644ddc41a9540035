/**
 * tus 1.0 uploads (contract §9) on the service's one upload engine: a tus upload is an
 * ordinary upload (a file record `uploading`, a multipart upload of 5 MiB parts) with a row
 * of tus state beside it (core/tus.ts). It is created through Uploads.initiate, written by
 * TusWriter through the blob store's part calls, and made a ready file by
 * Uploads.completeAsService, exactly as after complete-upload.
 *
 * Concatenation: a partial upload is an upload of its own, never a file (ServiceContext
 * hides it); once all its bytes are in, its parts are joined into one object. A final upload
 * is made by copying its partial uploads' objects, in order, into a new upload's parts.
 */
import { errors } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { validateName } from '../core/names.js';
import { fileTypeFor, isSendableContentType } from '../core/file-types.js';
import { CHUNK_SIZE, missingParts, partCount } from '../core/upload.js';
import { ROOT_CALLER, type Caller } from '../core/access.js';
import type { InitiateUploadRequest } from '../core/api.js';
import type { MetadataTx, StoredFile } from '../core/ports.js';
import type { StoredTusUpload, TusKind } from '../core/tus.js';
import type { ServiceContext } from './context.js';
import type { Uploads } from './uploads.js';
import { authorize, authorizeFile, reachOf } from './policy.js';
import { removeFiles } from './trash.js';
import { StaleWrite, TusWriter, type TusBody } from './tus-writer.js';
import { concatenate } from './tus-concat.js';

/** Upload-Metadata, decoded: each key with its value, or null for a key given without one. */
export type TusMetadata = ReadonlyMap<string, string | null>;

export interface TusCreate {
  /** Upload-Length; null only for a final upload, whose length is its partial uploads'. */
  length: number | null;
  metadata: TusMetadata;
  /** Upload-Metadata as sent, answered back on HEAD. */
  rawMetadata: string | null;
  /** Upload-Concat: a partial upload, or a final one made of these uploads (file ids), in order. */
  concat: { kind: 'partial' } | { kind: 'final'; fileIds: string[] } | null;
}

/** What HEAD answers, and what every other call answers with. */
export interface TusState {
  fileId: string;
  kind: TusKind;
  length: number;
  offset: number;
  /** When an unfinished upload is removed (Unix ms); null once finished. */
  expiresAt: number | null;
  metadata: string | null;
  /** A final upload's partial uploads (file ids), in order. */
  concat: string[] | null;
  /** The ready file, once the upload is one. */
  readyFileId: string | null;
}

/** A tus upload as found for a caller. */
export interface Found {
  file: StoredFile;
  tus: StoredTusUpload;
}

const noUpload = () => errors.uploadNotFound('No tus upload is at this address: it never was, was terminated, or expired and was removed.');

/** Partial uploads have no name of their own; this one shows in an upload.expired event. */
const PARTIAL_NAME = 'tus partial upload';

export const newTusRow = (fileId: string, kind: TusKind, metadata: string | null, concat: string | null, now: number, madeBy: string): StoredTusUpload => ({
  file_id: fileId, kind, metadata, concat, tail_key: null, tail_size: 0, next_tail_key: null, version: 0, joined: 0, created_at: now, made_by: madeBy,
});

/** The caller as a tus row records its maker. */
function makerOf(caller: Caller): string {
  switch (caller.kind) {
    case 'key':
      return `key:${caller.keyId}`;
    case 'grant':
      return `grant:${caller.grant.id}`;
    default:
      return 'root';
  }
}

/** Whether the caller made this upload; the root key counts as the maker of every one. */
function madeBy(caller: Caller, { file, tus }: Found): boolean {
  if (caller.kind === 'root') return true;
  const maker = tus.made_by ?? (file.grant_id !== null ? `grant:${file.grant_id}` : 'root');
  return maker === makerOf(caller);
}

export class TusUploads {
  constructor(readonly c: ServiceContext, readonly uploads: Uploads) {}

  /** POST: a new upload (and, with a body, its first bytes: see write). */
  async create(caller: Caller, req: TusCreate): Promise<TusState> {
    authorize(caller, 'upload');
    if (req.concat?.kind === 'final') return concatenate(this, caller, req, req.concat.fileIds);
    if (req.length === null) throw errors.invalidRequest('Send Upload-Length: the upload\'s size in bytes (Upload-Defer-Length is not supported).', 'Upload-Length');
    if (req.length > this.c.opts.maxFileSize) throw errors.fileTooLarge(this.c.opts.maxFileSize);
    const file = req.concat?.kind === 'partial'
      ? await this.createPartial(caller, req.length)
      : await this.createFile(caller, this.askOf(caller, req.metadata, req.length), 'single', req.rawMetadata, null);
    if (file.size === 0) await this.writeEmptyPart(file);
    return this.state(caller, file.id);
  }

  /**
   * The upload as initiate would start it, from Upload-Metadata (contract §9's keys). Without
   * `folder_id` it goes to the top of the caller's reach: a confined key's folder, a grant's.
   */
  askOf(caller: Caller, metadata: TusMetadata, length: number): InitiateUploadRequest {
    const value = (key: string): string | undefined => {
      const v = metadata.get(key);
      if (v === null) throw errors.invalidField('invalid_metadata', key, `Upload-Metadata gives "${key}" without a value.`);
      return v;
    };
    const filename = value('filename');
    if (filename === undefined) throw errors.invalidField('missing_filename', 'filename', 'Upload-Metadata must give "filename": the file\'s name.');
    const name = validateName(filename, 'filename');
    const contentType = value('filetype');
    if (contentType !== undefined && !isSendableContentType(contentType)) {
      throw errors.invalidField('invalid_content_type', 'filetype', '"filetype" must be a media type such as "image/png" or "text/plain; charset=utf-8".');
    }
    const folderId = value('folder_id') || (reachOf(caller) ?? undefined);
    return {
      name, size: length, visibility: value('visibility') ?? 'Private',
      file_type: value('file_type') ?? fileTypeFor(name, contentType),
      ...(contentType !== undefined ? { content_type: contentType } : {}),
      ...(folderId !== undefined ? { folder_id: folderId } : {}),
    };
  }

  /** A file's upload through initiate, with its tus row in the same transaction. */
  async createFile(caller: Caller, ask: InitiateUploadRequest, kind: TusKind, metadata: string | null, concat: string | null): Promise<StoredFile> {
    const session = await this.uploads.initiate(caller, ask, (tx, file) => tx.tus.insert(newTusRow(file.id, kind, metadata, concat, this.c.now(), makerOf(caller))));
    return (await this.c.meta.read.getFile(session.fileId))!;
  }

  /**
   * A partial upload: in the caller's reach, counted against no grant's files, but a grant's
   * open partial uploads together may hold no more than the files it has left could.
   */
  private async createPartial(caller: Caller, length: number): Promise<StoredFile> {
    const folderId = reachOf(caller);
    if (caller.kind === 'grant') {
      if (caller.grant.expires_at <= this.c.now()) throw errors.unauthorized('The upload grant has expired; ask the application for a new one.');
      if (length > caller.grant.max_size) throw errors.fileTooLarge(caller.grant.max_size);
    }
    const id = newId();
    const key = `files/${id}`;
    const { uploadId } = await this.c.blobs.createMultipart(key);
    const now = this.c.now();
    const file: StoredFile = {
      id, name: PARTIAL_NAME, name_key: PARTIAL_NAME, visibility: 'Private', size: length, file_type: 'other', content_type: 'application/octet-stream',
      folder_id: folderId, status: 'uploading', sha256: null, created_at: now, updated_at: now, completed_at: null,
      bucket: this.c.blobs.bucket, blob_key: key, upload_id: uploadId, upload_expires_at: now + this.c.opts.uploadTtlSeconds * 1000,
      grant_id: caller.kind === 'grant' ? caller.grant.id : null, links_revoked_at: null,
    };
    try {
      await this.c.meta.transaction(async (tx) => {
        if (folderId !== null) await this.c.requireFolder(tx, folderId, 'folder_id', 'share');
        if (caller.kind === 'grant') await this.checkPartialBudget(tx, caller.grant.id, length);
        await tx.insertFile(file);
        await tx.tus.insert(newTusRow(id, 'partial', null, null, now, makerOf(caller)));
      });
      return file;
    } catch (err) {
      await this.c.blobs.abortMultipart(key, uploadId).catch(() => {});
      throw err;
    }
  }

  private async checkPartialBudget(tx: MetadataTx, grantId: string, length: number): Promise<void> {
    const grant = await tx.grants.get(grantId);
    const budget = grant ? grant.max_size * Math.max(0, grant.max_files - grant.used_files) : 0;
    if ((await tx.tus.partialBytesOfGrant(grantId)) + length > budget) {
      throw errors.forbidden('This grant\'s partial uploads would hold more than the files it has left may.', { max_size: grant?.max_size ?? 0 });
    }
  }

  /** The upload at /tus/{fileId} as this caller may see it: 404 when unknown or gone, 410 once expired. */
  async find(tx: MetadataTx, caller: Caller, fileId: string): Promise<Found> {
    const file = await tx.getFile(fileId);
    const tus = file ? await tx.tus.get(fileId) : undefined;
    if (!file || !tus || !(await authorizeFile(tx, caller, 'upload', file))) throw noUpload();
    if (this.c.isExpired(file)) throw errors.uploadExpired();
    return { file, tus };
  }

  /**
   * An upload whose bytes this caller may build on (a final upload's partial uploads): only its
   * own. Another caller's is as unknown as one that never was, even within the same folder.
   */
  async findOwn(tx: MetadataTx, caller: Caller, fileId: string): Promise<Found> {
    const found = await this.find(tx, caller, fileId);
    if (!madeBy(caller, found)) throw noUpload();
    return found;
  }

  /** Where the upload stands, from what is recorded. */
  async stateOf({ file, tus }: Found): Promise<TusState> {
    let offset: number;
    if (file.status === 'ready' || tus.joined) offset = file.size;
    else {
      const recorded = new Set(await this.c.meta.read.partNumbers(file.id));
      let whole = 0;
      while (recorded.has(whole + 1)) whole++;
      offset = Math.min(file.size, whole * CHUNK_SIZE) + tus.tail_size;
    }
    return {
      fileId: file.id, kind: tus.kind, length: file.size, offset, expiresAt: file.status === 'ready' ? null : file.upload_expires_at,
      metadata: tus.metadata, concat: tus.concat === null ? null : tus.concat.split(' '), readyFileId: file.status === 'ready' ? file.id : null,
    };
  }

  /** HEAD. An upload whose bytes are all in is finished first (after a crash, or a failed completion). */
  async state(caller: Caller, fileId: string): Promise<TusState> {
    authorize(caller, 'upload');
    const found = await this.find(this.c.meta.read, caller, fileId);
    const state = await this.stateOf(found);
    return state.offset === state.length ? this.finish(caller, found, state) : state;
  }

  /** PATCH: the body's bytes at `offset`. One write per upload at a time, among every origin. */
  async write(caller: Caller, fileId: string, offset: number, input: TusBody): Promise<TusState> {
    authorize(caller, 'upload');
    const held = await this.c.meta.tryExclusive(`tus:${fileId}`, async () => {
      const found = await this.find(this.c.meta.read, caller, fileId);
      if (found.tus.kind === 'final') throw errors.forbidden('A final upload is made of its partial uploads; it takes no PATCH.');
      const before = await this.stateOf(found);
      if (offset !== before.offset) throw errors.offsetMismatch(before.offset);
      await this.writeFrom(found, before, input);
      return this.stateOf(await this.find(this.c.meta.read, caller, fileId));
    });
    if (!held.ran) throw errors.uploadBusy();
    const state = held.value;
    return state.offset === state.length ? this.finish(caller, await this.find(this.c.meta.read, caller, fileId), state) : state;
  }

  /** Writes the body at the upload's offset `before`; the caller holds the upload. */
  async writeFrom(found: Found, before: TusState, input: TusBody): Promise<void> {
    const { file, tus } = found;
    if (before.offset === file.size || file.status === 'ready') {
      // Nothing more fits: an empty body is answered with the offset, any byte is too many.
      for await (const chunk of input.body) if (chunk.length > 0) throw errors.uploadLengthExceeded(file.size);
      return;
    }
    const firstPart = Math.floor((before.offset - tus.tail_size) / CHUNK_SIZE) + 1;
    const writer = new TusWriter(this.c, file, tus, before.offset, firstPart, input.checksum !== null);
    try {
      await writer.write(input);
    } catch (err) {
      if (!(err instanceof StaleWrite)) throw err;
      // Removed, finished or written by another origin meanwhile: answer as it stands now.
      await this.find(this.c.meta.read, ROOT_CALLER, file.id);
      throw errors.uploadBusy();
    }
  }

  /** An upload of 0 bytes has one empty part, written at creation (or here, if that was cut short). */
  private async writeEmptyPart(file: StoredFile): Promise<void> {
    if ((await this.c.meta.read.partNumbers(file.id)).includes(1)) return;
    const writer = await this.c.blobs.openPart(file.blob_key, file.upload_id!, 1, 0);
    const part = await this.c.blobs.commitPart(file.blob_key, file.upload_id!, 1, writer);
    await part.durable;
    await this.c.meta.transaction((tx) => tx.upsertPart({ file_id: file.id, part_number: 1, size: 0, etag: part.etag, updated_at: this.c.now() }));
  }

  /** Every byte is in: a partial upload's parts become one object, any other upload a ready file. */
  async finish(caller: Caller, found: Found, state: TusState): Promise<TusState> {
    if (state.readyFileId !== null || found.tus.joined) return state;
    if (found.file.size === 0) await this.writeEmptyPart(found.file);
    if (found.tus.kind === 'partial') {
      await this.join(found.file);
      return state;
    }
    const record = await this.uploads.completeAsService(found.file.id);
    const ready = await this.find(this.c.meta.read, caller, record.file_id);
    return this.stateOf(ready);
  }

  /** Joins a partial upload's parts into the object at its blob key, once. */
  async join(file: StoredFile): Promise<void> {
    await this.c.meta.exclusive(`complete:${file.id}`, async () => {
      const tus = await this.c.meta.read.tus.get(file.id);
      if (!tus || tus.joined) return;
      const parts = await this.c.meta.read.listParts(file.id);
      const missing = missingParts(partCount(file.size), parts.map((p) => p.part_number));
      if (missing.length > 0) throw errors.missingParts(missing);
      await this.c.blobs.completeMultipart(file.blob_key, file.upload_id!, parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })));
      const at = this.c.now();
      await this.c.meta.transaction(async (tx) => {
        const current = await tx.getFile(file.id, 'update');
        const row = await tx.tus.get(file.id);
        if (!current || !row) {
          // Terminated or expired while joined: the object just made is nobody's.
          await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: null, object: 1 }], at);
          return;
        }
        if (!(await tx.tus.update(file.id, row.version, { joined: 1 }))) throw new StaleWrite();
        await tx.deleteParts(file.id);
        // The multipart upload's leftovers (the parts themselves, on disk).
        await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: file.upload_id, object: 0 }], at);
      });
    });
    this.c.emptyTrash();
  }

  /** DELETE (termination): an unfinished upload and everything it holds; a finished one is a file, deleted as one. */
  async terminate(caller: Caller, fileId: string): Promise<void> {
    authorize(caller, 'upload');
    await this.c.meta.transaction(async (tx) => {
      const { file } = await this.find(tx, caller, fileId);
      const locked = await tx.getFile(file.id, 'update');
      if (!locked) throw errors.uploadNotFound();
      if (locked.status === 'ready') throw errors.uploadCompleted();
      await removeFiles(tx, [locked], this.c.now());
    });
    this.c.emptyTrash();
  }

  /** Removes partial uploads a final upload was made of: a partial upload serves one final upload. */
  async removePartials(fileIds: string[]): Promise<void> {
    await this.c.meta.transaction(async (tx) => {
      for (const id of [...new Set(fileIds)].sort()) {
        const file = await tx.getFile(id, 'update');
        if (file && file.status === 'uploading') await removeFiles(tx, [file], this.c.now());
      }
    });
    this.c.emptyTrash();
  }
}
