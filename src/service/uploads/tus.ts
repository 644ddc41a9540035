/**
 * tus 1.0 uploads (contract §9) on the upload engine: a tus upload is an ordinary upload (a
 * file record `uploading`, a multipart upload of 5 MiB parts) with a row of tus state beside
 * it (core/tus.ts, tus-meta.ts). TusWriter fills its parts; once every byte is in, the engine
 * completes it as any other upload.
 *
 * Concatenation: a partial upload is an upload of its own, never a file (ServiceContext
 * hides it); once all its bytes are in, its parts are joined into one object. A final upload
 * is made by copying its partial uploads' objects, in order, into a new upload's parts.
 */
import { errors } from '../../core/errors.js';
import { CHUNK_SIZE } from '../../core/upload.js';
import { ROOT_CALLER, type Caller } from '../../core/access.js';
import type { InitiateUploadRequest } from '../../core/api.js';
import type { MetadataTx, StoredFile } from '../../core/ports.js';
import type { TusKind } from '../../core/tus.js';
import type { ServiceContext } from '../context.js';
import { authorize, authorizeFile, reachOf } from '../policy.js';
import type { UploadEngine } from './engine.js';
import { initiateSpec } from './spec.js';
import { StaleWrite, TusWriter, type TusBody } from './tus-writer.js';
import { concatenate } from './tus-concat.js';
import { PARTIAL_NAME, askOf, madeBy, makerOf, newTusRow, noUpload, type Found, type TusCreate, type TusState } from './tus-meta.js';

export type { Found, TusCreate, TusMetadata, TusState } from './tus-meta.js';

async function* nothing(): AsyncGenerator<Buffer> {}

export class TusUploads {
  constructor(readonly c: ServiceContext, readonly engine: UploadEngine) {}

  /** POST: a new upload (and, with a body, its first bytes: see write). */
  async create(caller: Caller, req: TusCreate): Promise<TusState> {
    authorize(caller, 'upload');
    if (req.concat?.kind === 'final') return concatenate(this, caller, req, req.concat.fileIds);
    if (req.length === null) throw errors.invalidRequest('Send Upload-Length: the upload\'s size in bytes (Upload-Defer-Length is not supported).', 'Upload-Length');
    if (req.length > this.c.opts.maxFileSize) throw errors.fileTooLarge(this.c.opts.maxFileSize);
    const file = req.concat?.kind === 'partial'
      ? await this.createPartial(caller, req.length)
      : await this.createFile(caller, askOf(caller, req.metadata, req.length), 'single', req.rawMetadata, null);
    if (file.size === 0) await this.writeEmptyPart(file);
    return this.state(caller, file.id);
  }

  /** A file's upload as initiate would start it, with its tus row in the same transaction. */
  async createFile(caller: Caller, ask: InitiateUploadRequest, kind: TusKind, metadata: string | null, concat: string | null): Promise<StoredFile> {
    const spec = await initiateSpec(this.c, caller, ask);
    return this.engine.begin({ ...spec, within: (tx, file) => tx.tus.insert(newTusRow(file.id, kind, metadata, concat, this.c.now(), makerOf(caller))) });
  }

  /**
   * A partial upload: in the caller's reach, counted against no grant's files, but a grant's
   * open partial uploads together may hold no more than the files it has left could.
   */
  private async createPartial(caller: Caller, length: number): Promise<StoredFile> {
    const grant = caller.kind === 'grant' ? caller.grant : null;
    if (grant) {
      if (grant.expires_at <= this.c.now()) throw errors.unauthorized('The upload grant has expired; ask the application for a new one.');
      if (length > grant.max_size) throw errors.fileTooLarge(grant.max_size);
    }
    return this.engine.begin({
      name: PARTIAL_NAME, nameKey: PARTIAL_NAME, visibility: 'Private', size: length, fileType: 'other', contentType: 'application/octet-stream',
      folderId: reachOf(caller), grantId: grant?.id ?? null,
      prepare: async (tx) => {
        if (grant) await this.checkPartialBudget(tx, grant.id, length);
      },
      within: (tx, file) => tx.tus.insert(newTusRow(file.id, 'partial', null, null, file.created_at, makerOf(caller))),
    });
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
    if (input.length !== null && input.length > 0 && before.offset + input.length > file.size) throw errors.uploadLengthExceeded(file.size);
    if (before.offset === file.size || file.status === 'ready') {
      // Nothing more fits: an empty body is answered with the offset, any byte is too many.
      for await (const chunk of input.body) if (chunk.length > 0) throw errors.uploadLengthExceeded(file.size);
      return;
    }
    const firstPart = Math.floor((before.offset - tus.tail_size) / CHUNK_SIZE) + 1;
    // Under a checksum, parts are recorded only once the body ended and was found good: none of
    // a refused body is kept. Without one, whole parts are recorded as they fill, so a cut-off
    // body or a crash keeps them; the part that finishes the upload waits for the body's end.
    const writer = new TusWriter(this.c, this.engine, file, tus, before.offset, firstPart, input.checksum !== null);
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
    if ((await this.engine.received(file.id)).has(1)) return;
    const outcome = await this.engine.writePart(file, 1, nothing(), 0);
    if (!outcome.kept) throw noUpload();
    await this.engine.settle(file.id);
  }

  /** Every byte is in: a partial upload's parts become one object, any other upload a ready file. */
  async finish(caller: Caller, found: Found, state: TusState): Promise<TusState> {
    if (state.readyFileId !== null || found.tus.joined) return state;
    if (found.file.size === 0) await this.writeEmptyPart(found.file);
    if (found.tus.kind === 'partial') {
      await this.join(found.file);
      return state;
    }
    const record = await this.engine.complete(found.file.id);
    return this.stateOf(await this.find(this.c.meta.read, caller, record.file_id));
  }

  /** Joins a partial upload's parts into the object at its blob key, once. */
  join(file: StoredFile): Promise<void> {
    const joined = async () => {
      const row = await this.c.meta.read.tus.get(file.id);
      return !row || Boolean(row.joined);
    };
    return this.engine.assemble(file, joined, async (tx) => {
      const row = await tx.tus.get(file.id);
      if (!row) return 'gone';
      if (!(await tx.tus.update(file.id, row.version, { joined: 1 }))) throw new StaleWrite();
      return 'marked';
    });
  }

  /** DELETE (termination): an unfinished upload and everything it holds; a finished one is a file, deleted as one. */
  async terminate(caller: Caller, fileId: string): Promise<void> {
    authorize(caller, 'upload');
    await this.engine.abort(async (tx) => {
      const { file } = await this.find(tx, caller, fileId);
      const locked = await tx.getFile(file.id, 'update');
      if (!locked) throw errors.uploadNotFound();
      if (locked.status === 'ready') throw errors.uploadCompleted();
      return locked;
    });
  }

  /** Removes partial uploads a final upload was made of: a partial upload serves one final upload. */
  removePartials(fileIds: string[]): Promise<void> {
    return this.engine.abortOpen(fileIds);
  }
}
