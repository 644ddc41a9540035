/**
 * Every rule of contract §4–§6, over the ports. No HTTP here: routes hand in plain
 * values and get records back or a CofferError.
 */
import { createHash, randomBytes } from 'node:crypto';
import mime from 'mime';
import { errors, isCofferError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { nameKey, validateName } from '../core/names.js';
import { parseFileType, parseVisibility, isoTime, type FileType } from '../core/records.js';
import { isSendableContentType } from '../core/file-types.js';
import { CHUNK_SIZE, MAX_FOLDER_DEPTH, checkDeclaredSize, checkPartNumber, expectedPartSize, missingParts, partCount } from '../core/upload.js';
import { DEFAULT_EXPIRY_SECONDS, MAX_EXPIRY_SECONDS, deliveryPath, signPath } from '../core/signing.js';
import { nodeHmac } from '../core/hmac-node.js';
import type {
  BlobStore, BlobToDelete, CommittedPart, MetadataStore, MetadataTx, PageQuery, PartWriter, RowLock, SortField, SortOrder, StoredFile, StoredFolder,
} from '../core/ports.js';
import { UploadGoneError } from '../core/ports.js';
import type {
  CreateFolderRequest, CreateLinkRequest, CreateLinkResponse, DeleteFolderRequest, DeleteFolderResponse, DownloadRequest,
  DownloadResponse, FileRecord, FolderRecord, InitiateUploadRequest, ListRequest, ListResponse, SearchRequest, SearchResponse,
  UpdateFileRequest, UpdateFolderRequest, UploadPartResponse, UploadSession, UploadStatusResponse,
} from '../core/api.js';
import { ROOT_CONTEXT, chainIsComplete, childContext, contextOfChain, fileEventData, fileRecord, folderEventData, folderRecord, type FolderContext } from './records.js';
import { cursorScope, decodeCursor, encodeCursor } from './cursor.js';
import { BufferedPartWriter, DiscardingPartWriter } from './part-writers.js';

export interface ServiceOptions {
  cdnUrl: string;
  /** The first signs; all verify. */
  signingSecrets: string[];
  uploadTtlSeconds: number;
  /** How long a Playground session lasts; 12 hours when not given. */
  sessionTtlSeconds?: number;
  maxFileSize: number;
  now?: () => number;
  /** Told of background failures that no request will report. */
  onBackgroundError?: (what: string, err: unknown) => void;
}

/** Called after a change is committed with its last event's sequence; resolves once edges have it. */
export type EventPublisher = (seq: number) => Promise<void>;

export interface PartInput {
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

export const DEFAULT_SESSION_TTL_SECONDS = 43_200;

/** A live session as the origin needs it: what to compare the CSRF header with, and until when. */
export interface Session {
  csrfToken: string;
  expiresAt: number;
}

/** The key a session is stored under: its token's SHA-256, never the token. */
export const sessionTokenHash = (token: string): string => createHash('sha256').update(token).digest('hex');

const COMPLETE_ATTEMPTS = 3;

function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw errors.invalidField('invalid_limit', 'limit', '"limit" must be an integer from 1 to 1000.');
  return limit;
}

function checkExpiry(expiry: number | undefined): number {
  if (expiry === undefined) return DEFAULT_EXPIRY_SECONDS;
  if (!Number.isInteger(expiry) || expiry < 1 || expiry > MAX_EXPIRY_SECONDS) {
    throw errors.invalidField('invalid_expiry', 'expiry', `"expiry" must be a whole number of seconds from 1 to ${MAX_EXPIRY_SECONDS}.`);
  }
  return expiry;
}

export class CofferService {
  private readonly now: () => number;
  private publish: EventPublisher = async () => {};
  private trashRunning: Promise<void> | null = null;
  private trashAgain = false;

  constructor(readonly meta: MetadataStore, readonly blobs: BlobStore, readonly opts: ServiceOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** The edge feed registers here to hold answers until edges have acknowledged. */
  setPublisher(publisher: EventPublisher): void {
    this.publish = publisher;
  }

  // ---- context helpers -------------------------------------------------------

  private async folderContext(tx: MetadataTx, folderId: string | null): Promise<FolderContext> {
    return folderId === null ? ROOT_CONTEXT : contextOfChain(await tx.folderChain(folderId));
  }

  /** A folder placed under `parentChain` with `height` levels below it must not sit deeper than MAX_FOLDER_DEPTH. */
  private checkDepth(parentChain: StoredFolder[], height: number): void {
    if (!chainIsComplete(parentChain) || parentChain.length + 1 + height > MAX_FOLDER_DEPTH) throw errors.folderTooDeep(MAX_FOLDER_DEPTH);
  }

  private async requireFolder(tx: MetadataTx, folderId: string, field = 'folder_id', lock?: RowLock): Promise<StoredFolder> {
    const folder = await tx.getFolder(folderId, lock);
    if (!folder) throw errors.folderNotFound(folderId, field);
    return folder;
  }

  private isExpired(file: StoredFile): boolean {
    return file.status === 'uploading' && file.upload_expires_at !== null && file.upload_expires_at <= this.now();
  }

  /** A file as clients may see it: an expired upload no longer exists. */
  private async requireFile(tx: MetadataTx, fileId: string, lock?: RowLock): Promise<StoredFile> {
    const file = await tx.getFile(fileId, lock);
    if (!file || this.isExpired(file)) throw errors.fileNotFound(fileId);
    return file;
  }

  private async toFileRecord(tx: MetadataTx, file: StoredFile): Promise<FileRecord> {
    return fileRecord(file, await this.folderContext(tx, file.folder_id), this.opts.cdnUrl);
  }

  private async toFolderRecord(tx: MetadataTx, folder: StoredFolder): Promise<FolderRecord> {
    return folderRecord(folder, await this.folderContext(tx, folder.parent_id));
  }

  // ---- uploads (contract §4) -------------------------------------------------

  async initiateUpload(req: InitiateUploadRequest): Promise<UploadSession> {
    const folderId = req.folder_id ?? null;
    if (folderId !== null) await this.requireFolder(this.meta.read, folderId);
    const name = validateName(req.name);
    const visibility = parseVisibility(req.visibility);
    checkDeclaredSize(req.size, this.opts.maxFileSize);
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

    const id = newId();
    const key = `files/${id}`;
    const { uploadId } = await this.blobs.createMultipart(key);
    const now = this.now();
    const file: StoredFile = {
      id, name, name_key: nameKey(name), visibility, size: req.size, file_type: fileType, content_type: contentType,
      folder_id: folderId, status: 'uploading', sha256: null, created_at: now, updated_at: now, completed_at: null,
      bucket: this.blobs.bucket, blob_key: key, upload_id: uploadId, upload_expires_at: now + this.opts.uploadTtlSeconds * 1000,
    };
    try {
      const record = await this.meta.transaction(async (tx) => {
        // The folder may have gone while the blob upload was being opened; locked, it stays until the file is in.
        if (folderId !== null) await this.requireFolder(tx, folderId, 'folder_id', 'share');
        await tx.insertFile(file);
        return this.toFileRecord(tx, file);
      });
      return {
        ...record, fileId: id, bucket: file.bucket, key, uploadId, chunk_size: CHUNK_SIZE, part_count: partCount(req.size),
        expires_at: isoTime(file.upload_expires_at!),
      };
    } catch (err) {
      await this.blobs.abortMultipart(key, uploadId).catch(() => {});
      throw err;
    }
  }

  /** Finds the open upload the four session values name, in the order contract §4 answers. */
  private async requireUploadFor(tx: MetadataTx, input: Pick<PartInput, 'bucket' | 'key' | 'uploadId' | 'fileId'>): Promise<StoredFile> {
    const file = await tx.getFile(input.fileId);
    if (!file || file.bucket !== input.bucket || file.blob_key !== input.key || file.upload_id !== input.uploadId) throw errors.uploadNotFound();
    if (file.status === 'ready') throw errors.uploadCompleted();
    if (this.isExpired(file)) throw errors.uploadNotFound('This upload expired and was aborted; start a new upload.');
    return file;
  }

  /** The part each writer of `openPartWriter` was opened for. */
  private readonly partTargets = new WeakMap<PartWriter, PartTarget>();

  /**
   * Where a chunk's decoded bytes go while its request is still being read. When the fields
   * before `body` name an open upload and a valid part, that is the blob store's writer for
   * the part, with the size the part must have, so the bytes stream on at once; when they
   * name none, a writer that only counts (the error is answered once the request is read);
   * when `body` came first, a buffer that `uploadPart` hands to the store.
   */
  async openPartWriter(fieldsBeforeBody: Record<string, unknown> | null): Promise<PartWriter> {
    const target = partTargetOf(fieldsBeforeBody);
    if (!target) return new BufferedPartWriter();
    let file: StoredFile;
    try {
      file = await this.requireUploadFor(this.meta.read, target);
      checkPartNumber(target.partNumber, partCount(file.size));
    } catch (err) {
      if (isCofferError(err)) return new DiscardingPartWriter();
      throw err;
    }
    const writer = await this.blobs.openPart(file.blob_key, target.uploadId, target.partNumber, expectedPartSize(file.size, target.partNumber));
    this.partTargets.set(writer, target);
    return writer;
  }

  /** Makes a received chunk a part of its upload. The writer is consumed either way. */
  async uploadPart(input: PartInput): Promise<UploadPartResponse> {
    let handedOver = false;
    let writer = input.writer;
    try {
      const file = await this.requireUploadFor(this.meta.read, input);
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
        writer = await this.blobs.openPart(file.blob_key, input.uploadId, input.partNumber, expected);
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
      const replacing = this.pendingParts.get(file.id)?.has(input.partNumber) || (await this.meta.read.getPart(file.id, input.partNumber)) !== undefined;
      let part: CommittedPart;
      try {
        part = await this.blobs.commitPart(file.blob_key, input.uploadId, input.partNumber, writer);
      } catch (err) {
        if (!(err instanceof UploadGoneError)) throw err;
        // Completed or aborted meanwhile, perhaps by another origin: answer as the state now says.
        await this.requireUploadFor(this.meta.read, input);
        throw errors.uploadNotFound();
      }
      handedOver = true;
      const recorded = this.recordWhenDurable(file, input.partNumber, part, replacing);
      // Several origins may share a PostgreSQL store, and the complete may reach another one,
      // which knows only recorded parts: there every part is answered once it is recorded.
      if (replacing || this.meta.dialect === 'postgres') await recorded;
      const received = new Set(await this.meta.read.partNumbers(file.id));
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
  private readonly pendingParts = new Map<string, Map<number, Promise<void>>>();

  private recordWhenDurable(file: StoredFile, partNumber: number, part: CommittedPart, durableRecord: boolean): Promise<void> {
    let byPart = this.pendingParts.get(file.id);
    if (!byPart) {
      byPart = new Map();
      this.pendingParts.set(file.id, byPart);
    }
    const parts = byPart;
    const drop = (etag: string) => this.blobs.dropPart(file.blob_key, file.upload_id!, partNumber, etag).catch(() => {});
    // Versions of one part are recorded in the order they arrived.
    const task: Promise<void> = (parts.get(partNumber) ?? Promise.resolve())
      .then(async () => {
        try {
          await part.durable;
        } catch (err) {
          this.opts.onBackgroundError?.(`flushing part ${partNumber} of ${file.id}`, err);
          await drop(part.etag);
          return;
        }
        const outcome = await this.meta.transaction(async (tx) => {
          // Shared: parts of one file are recorded side by side, never while a complete or a delete decides.
          const current = await tx.getFile(file.id, 'share');
          if (!current || current.status !== 'uploading' || current.upload_id !== file.upload_id) return { stale: true as const };
          const previous = await tx.getPart(file.id, partNumber);
          await tx.upsertPart({ file_id: file.id, part_number: partNumber, size: part.size, etag: part.etag, updated_at: this.now() });
          return { stale: false as const, previous };
        }, { durable: durableRecord });
        if (outcome.stale) await drop(part.etag);
        else if (outcome.previous && outcome.previous.etag !== part.etag) await drop(outcome.previous.etag);
      })
      .catch((err) => this.opts.onBackgroundError?.(`recording part ${partNumber} of ${file.id}`, err))
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

  completeUpload(fileId: string): Promise<FileRecord> {
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
    const file = await this.requireFile(this.meta.read, fileId);
    if (file.status === 'ready') return this.toFileRecord(this.meta.read, file);
    // One join per file among every origin sharing the store: another completion of the same
    // file waits here, then finds it ready and answers the same record.
    const outcome = await this.meta.exclusive(`complete:${fileId}`, () => this.completeExclusively(fileId));
    this.emptyTrash();
    if (outcome.seq) await this.publish(outcome.seq);
    return outcome.record;
  }

  private async completeExclusively(fileId: string): Promise<{ record: FileRecord; seq: number }> {
    for (let attempt = 1; ; attempt++) {
      const file = await this.requireFile(this.meta.read, fileId);
      if (file.status === 'ready') {
        // Completed by another origin: answer once the edges have what it published.
        return { record: await this.toFileRecord(this.meta.read, file), seq: await this.meta.lastEventSeq() };
      }
      const parts = await this.meta.read.listParts(fileId);
      const missing = missingParts(partCount(file.size), parts.map((p) => p.part_number));
      if (missing.length > 0) {
        // Parts go only with their file: read after them, a file still there means they are missing.
        if ((await this.requireFile(this.meta.read, fileId)).status === 'ready') continue;
        throw errors.missingParts(missing);
      }
      let digest: { size: number; sha256: string };
      try {
        digest = await this.blobs.completeMultipart(file.blob_key, file.upload_id!, parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })));
      } catch (err) {
        // A part replaced while it was being joined: join again from the new list. An upload
        // that is gone (aborted, deleted) is answered from the state read again.
        if (attempt < COMPLETE_ATTEMPTS) continue;
        throw err;
      }
      const outcome = await this.meta.transaction(async (tx) => {
        // Locked: a delete, an abort or an update of this file waits for this decision, and sees it.
        const current = await tx.getFile(fileId, 'update');
        if (!current || this.isExpired(current)) {
          // Deleted, aborted or expired while its parts were joined: the object just made is nobody's.
          await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: null, object: 1 }], this.now());
          return 'gone' as const;
        }
        if (current.status === 'ready') return { record: await this.toFileRecord(tx, current), seq: 0 };
        const now = await tx.listParts(fileId);
        const same = now.length === parts.length && now.every((p, i) => p.etag === parts[i]!.etag);
        if (!same) return null;
        if (digest.size !== current.size) throw new Error(`joined ${digest.size} bytes for a declared size of ${current.size}`);
        const at = this.now();
        const ready: StoredFile = { ...current, status: 'ready', sha256: digest.sha256, completed_at: at, updated_at: at, upload_expires_at: null };
        await tx.updateFile(fileId, { status: 'ready', sha256: digest.sha256, completed_at: at, updated_at: at, upload_expires_at: null });
        await tx.deleteParts(fileId);
        await tx.queueBlobDeletion([{ bucket: current.bucket, blob_key: current.blob_key, upload_id: current.upload_id, object: 0 }], at);
        const context = await this.folderContext(tx, current.folder_id);
        const seq = await tx.appendEvent({ type: 'file.ready', file_id: fileId, folder_id: current.folder_id, data: fileEventData(ready, context) }, at);
        return { record: fileRecord(ready, context, this.opts.cdnUrl), seq };
      });
      if (outcome === 'gone') {
        this.emptyTrash();
        throw errors.fileNotFound(fileId);
      }
      if (outcome === null) {
        if (attempt < COMPLETE_ATTEMPTS) continue;
        throw errors.unavailable('The upload kept changing while it was being completed; try again.');
      }
      return outcome;
    }
  }

  async uploadStatus(fileId: string): Promise<UploadStatusResponse> {
    await this.settleParts(fileId);
    const file = await this.requireFile(this.meta.read, fileId);
    const count = partCount(file.size);
    if (file.status === 'ready') {
      return { file_id: fileId, status: 'ready', part_count: count, received: Array.from({ length: count }, (_, i) => i + 1), missing: [], expires_at: null };
    }
    const received = (await this.meta.read.listParts(fileId)).map((p) => p.part_number);
    return {
      file_id: fileId, status: 'uploading', part_count: count, received, missing: missingParts(count, received),
      expires_at: file.upload_expires_at === null ? null : isoTime(file.upload_expires_at),
    };
  }

  async abortUpload(fileId: string): Promise<{ file_id: string; aborted: true }> {
    await this.meta.transaction(async (tx) => {
      const file = await this.requireFile(tx, fileId, 'update');
      if (file.status === 'ready') throw errors.uploadCompleted();
      await this.discardUpload(tx, file);
    });
    this.emptyTrash();
    return { file_id: fileId, aborted: true };
  }

  private async discardUpload(tx: MetadataTx, file: StoredFile): Promise<void> {
    await tx.deleteFiles([file.id]);
    await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: file.upload_id, object: 0 }], this.now());
  }

  /** Aborts uploads left open past their time; returns how many. */
  async expireUploads(): Promise<number> {
    let total = 0;
    for (;;) {
      const stale = await this.meta.expiredUploads(this.now(), 100);
      if (stale.length === 0) break;
      await this.meta.transaction(async (tx) => {
        for (const file of stale) {
          const current = await tx.getFile(file.id, 'update');
          if (current && this.isExpired(current)) await this.discardUpload(tx, current);
        }
      });
      total += stale.length;
    }
    if (total > 0) this.emptyTrash();
    return total;
  }

  /** Removes queued blobs; runs after each change and at start, one pass at a time. */
  emptyTrash(): Promise<void> {
    if (this.trashRunning) {
      this.trashAgain = true;
      return this.trashRunning;
    }
    this.trashRunning = (async () => {
      do {
        this.trashAgain = false;
        for (;;) {
          const batch = await this.meta.pendingBlobDeletions(100);
          if (batch.length === 0) break;
          const done: number[] = [];
          for (const blob of batch) {
            try {
              await this.removeBlob(blob);
              done.push(blob.id);
            } catch (err) {
              // Left queued for the next pass.
              this.opts.onBackgroundError?.(`removing blob ${blob.blob_key}`, err);
            }
          }
          await this.meta.forgetBlobDeletions(done);
          if (done.length < batch.length) break;
        }
      } while (this.trashAgain);
    })().finally(() => {
      this.trashRunning = null;
    });
    return this.trashRunning;
  }

  private async removeBlob(blob: BlobToDelete): Promise<void> {
    if (blob.upload_id) await this.blobs.abortMultipart(blob.blob_key, blob.upload_id);
    if (blob.object) await this.blobs.delete(blob.blob_key);
  }

  // ---- Playground sessions ------------------------------------------------------

  /** Opens a session for a caller that has shown the access key; the token goes in the cookie only. */
  async startSession(): Promise<Session & { token: string }> {
    // 256 random bits each: neither can be guessed.
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const now = this.now();
    const expiresAt = now + (this.opts.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_SECONDS) * 1000;
    await this.meta.transaction((tx) => tx.insertSession({ token_hash: sessionTokenHash(token), csrf_token: csrfToken, created_at: now, expires_at: expiresAt }));
    return { token, csrfToken, expiresAt };
  }

  /** The live session a cookie's token names, or null: unknown, ended and expired alike. */
  async findSession(token: string): Promise<Session | null> {
    const row = await this.meta.read.getSession(sessionTokenHash(token));
    // Expired sessions are refused at once; the sweeper only tidies up.
    if (!row || row.expires_at <= this.now()) return null;
    return { csrfToken: row.csrf_token, expiresAt: row.expires_at };
  }

  /** Ends a session for good: its cookie is worthless from now on, wherever it is replayed. */
  async endSession(token: string): Promise<boolean> {
    return this.meta.transaction((tx) => tx.deleteSession(sessionTokenHash(token)));
  }

  /** Deletes expired sessions; returns how many. */
  async expireSessions(): Promise<number> {
    return this.meta.deleteExpiredSessions(this.now());
  }

  // ---- folders (contract §5) ---------------------------------------------------

  async createFolder(req: CreateFolderRequest): Promise<FolderRecord> {
    const parentId = req.parent_id ?? null;
    const { record, seq } = await this.meta.transaction(async (tx) => {
      await tx.lockFolderTree();
      if (parentId !== null) {
        await this.requireFolder(tx, parentId, 'parent_id');
        this.checkDepth(await tx.folderChain(parentId), 0);
      }
      const name = validateName(req.name);
      const existing = await tx.findFolderByName(parentId, name);
      if (existing) throw errors.folderExists(name, existing.id);
      const visibility = parseVisibility(req.visibility);
      const now = this.now();
      const folder: StoredFolder = { id: newId(), name, name_key: nameKey(name), visibility, parent_id: parentId, created_at: now, updated_at: now };
      await tx.insertFolder(folder);
      const seq = await tx.appendEvent({ type: 'folder.created', folder_id: folder.id, data: folderEventData(folder) }, now);
      return { record: await this.toFolderRecord(tx, folder), seq };
    });
    await this.publish(seq);
    return record;
  }

  async getFolder(folderId: string): Promise<FolderRecord> {
    return this.toFolderRecord(this.meta.read, await this.requireFolder(this.meta.read, folderId));
  }

  async updateFolder(req: UpdateFolderRequest): Promise<FolderRecord> {
    const { record, seq } = await this.meta.transaction(async (tx) => {
      await tx.lockFolderTree();
      const folder = await this.requireFolder(tx, req.folder_id);
      let parentId = folder.parent_id;
      if (req.parent_id !== undefined) {
        parentId = req.parent_id;
        if (parentId !== null) {
          await this.requireFolder(tx, parentId, 'parent_id');
          const chain = await tx.folderChain(parentId);
          if (chain.some((f) => f.id === folder.id)) throw errors.cycle();
          // Every folder of the moved subtree must stay within the limit.
          if (parentId !== folder.parent_id) this.checkDepth(chain, await tx.folderHeight(folder.id, MAX_FOLDER_DEPTH));
        }
      }
      let name = folder.name;
      let nameError: unknown = null;
      if (req.name !== undefined) {
        try {
          name = validateName(req.name);
        } catch (err) {
          nameError = err;
        }
      }
      if (nameError === null && (name !== folder.name || parentId !== folder.parent_id)) {
        const existing = await tx.findFolderByName(parentId, name);
        if (existing && existing.id !== folder.id) throw errors.folderExists(name, existing.id);
      }
      if (nameError) throw nameError;
      const visibility = req.visibility === undefined ? folder.visibility : parseVisibility(req.visibility);
      const changed = name !== folder.name || parentId !== folder.parent_id || visibility !== folder.visibility;
      if (!changed) return { record: await this.toFolderRecord(tx, folder), seq: 0 };
      const now = this.now();
      const updated: StoredFolder = { ...folder, name, name_key: nameKey(name), parent_id: parentId, visibility, updated_at: now };
      await tx.updateFolder(folder.id, { name, name_key: updated.name_key, parent_id: parentId, visibility, updated_at: now });
      const seq = await tx.appendEvent({ type: 'folder.updated', folder_id: folder.id, data: folderEventData(updated) }, now);
      return { record: await this.toFolderRecord(tx, updated), seq };
    });
    if (seq) await this.publish(seq);
    return record;
  }

  async deleteFolder(req: DeleteFolderRequest): Promise<DeleteFolderResponse> {
    const { result, seq } = await this.meta.transaction(async (tx) => {
      await tx.lockFolderTree();
      const folder = await this.requireFolder(tx, req.folder_id);
      if (!req.recursive) {
        const children = await tx.countChildren(folder.id);
        if (children.files > 0 || children.folders > 0) throw errors.folderNotEmpty(folder.id, children.files, children.folders);
      }
      const folderIds = [folder.id, ...(await tx.descendantFolderIds(folder.id))];
      // Folders, then their files, as every transaction locks them: no file goes in or changes meanwhile.
      await tx.lockFolders(folderIds);
      const files = await tx.filesInFolders(folderIds, 'update');
      const now = this.now();
      let seq = 0;
      for (const file of files) {
        if (file.status === 'ready') seq = await tx.appendEvent({ type: 'file.deleted', file_id: file.id, folder_id: file.folder_id, data: { file_id: file.id } }, now);
      }
      await tx.deleteFiles(files.map((f) => f.id));
      await tx.queueBlobDeletion(files.map((f) => ({
        bucket: f.bucket, blob_key: f.blob_key, upload_id: f.status === 'ready' ? null : f.upload_id, object: f.status === 'ready' ? 1 : 0,
      })), now);
      await tx.deleteFolders(folderIds);
      for (const id of [...folderIds].reverse()) seq = await tx.appendEvent({ type: 'folder.deleted', folder_id: id, data: { folder_id: id } }, now);
      return { result: { folder_id: folder.id, deleted_files: files.length, deleted_folders: folderIds.length }, seq };
    });
    this.emptyTrash();
    await this.publish(seq);
    return result;
  }

  // ---- listing and search ---------------------------------------------------------

  private async page(parentId: string | null, sort: SortField, order: SortOrder, limit: number, cursor: string | null | undefined, query: string | undefined) {
    const scope = cursorScope(parentId, sort, order, query);
    const state = cursor ? decodeCursor(cursor, scope) : { scope, phase: 'folders' as const, after: null };
    const base: Omit<PageQuery, 'after' | 'limit'> = { parentId, sort, order, ...(query !== undefined ? { nameContains: query } : {}) };
    const folderValue = (f: StoredFolder) => (sort === 'created_at' ? f.created_at : sort === 'updated_at' ? f.updated_at : f.name_key);
    const fileValue = (f: StoredFile) => (sort === 'name' ? f.name_key : f[sort]);

    let folders: StoredFolder[] = [];
    let files: StoredFile[] = [];
    let next: string | null = null;
    if (state.phase === 'folders') {
      folders = await this.meta.listFolders({ ...base, after: state.after, limit: limit + 1 });
      if (folders.length > limit) {
        folders = folders.slice(0, limit);
        const last = folders[folders.length - 1]!;
        next = encodeCursor({ scope, phase: 'folders', after: { value: folderValue(last), id: last.id } });
        return { folders, files, next };
      }
    }
    const room = limit - folders.length;
    const after = state.phase === 'files' ? state.after : null;
    files = await this.meta.listFiles({ ...base, after, limit: room + 1 });
    if (files.length > room) {
      files = files.slice(0, room);
      const last = files[files.length - 1];
      next = encodeCursor({ scope, phase: 'files', after: last ? { value: fileValue(last), id: last.id } : after });
    }
    return { folders, files, next };
  }

  async list(req: ListRequest): Promise<ListResponse> {
    const folderId = req.folder_id ?? null;
    const chain = folderId === null ? [] : await this.meta.read.folderChain(folderId);
    if (folderId !== null && chain.length === 0) throw errors.folderNotFound(folderId);
    const limit = checkLimit(req.limit);
    const sort = req.sort ?? 'name';
    const order = req.order ?? 'asc';
    const page = await this.page(folderId, sort, order, limit, req.cursor, undefined);
    const context = contextOfChain(chain);
    // Breadcrumbs from the top folder down to this one.
    const breadcrumbs: FolderRecord[] = [];
    // Above a chain cut short lies something unseen: fail closed.
    let parent: FolderContext = chainIsComplete(chain) ? ROOT_CONTEXT : { path: '/…', visibility: 'Private' };
    for (const f of [...chain].reverse()) {
      breadcrumbs.push(folderRecord(f, parent));
      parent = childContext(f, parent);
    }
    return {
      folder: breadcrumbs[breadcrumbs.length - 1] ?? null,
      breadcrumbs,
      folders: page.folders.map((f) => folderRecord(f, context)),
      files: page.files.map((f) => fileRecord(f, context, this.opts.cdnUrl)),
      next_cursor: page.next,
    };
  }

  async search(req: SearchRequest): Promise<SearchResponse> {
    const folderId = req.folder_id ?? null;
    const chain = folderId === null ? [] : await this.meta.read.folderChain(folderId);
    if (folderId !== null && chain.length === 0) throw errors.folderNotFound(folderId);
    const text = req.query.trim();
    if (text.length === 0 || text.length > 255) throw errors.invalidField('invalid_query', 'query', '"query" must hold 1 to 255 characters besides white space.');
    const limit = checkLimit(req.limit);
    const page = await this.page(folderId, 'name', 'asc', limit, req.cursor, nameKey(text));
    const context = contextOfChain(chain);
    return {
      folders: page.folders.map((f) => folderRecord(f, context)),
      files: page.files.map((f) => fileRecord(f, context, this.opts.cdnUrl)),
      next_cursor: page.next,
    };
  }

  // ---- files ----------------------------------------------------------------------

  async getFile(fileId: string): Promise<FileRecord> {
    return this.toFileRecord(this.meta.read, await this.requireFile(this.meta.read, fileId));
  }

  async updateFile(req: UpdateFileRequest): Promise<FileRecord> {
    const { record, seq } = await this.meta.transaction(async (tx) => {
      // The destination folder is locked before the file, the order a folder delete locks them in.
      const destination = req.folder_id ? await tx.getFolder(req.folder_id, 'share') : undefined;
      const file = await this.requireFile(tx, req.file_id, 'update');
      let folderId = file.folder_id;
      if (req.folder_id !== undefined) {
        folderId = req.folder_id;
        if (folderId !== null && !destination) throw errors.folderNotFound(folderId, 'folder_id');
      }
      const name = req.name === undefined ? file.name : validateName(req.name);
      const visibility = req.visibility === undefined ? file.visibility : parseVisibility(req.visibility);
      if (name === file.name && folderId === file.folder_id && visibility === file.visibility) {
        return { record: await this.toFileRecord(tx, file), seq: 0 };
      }
      const now = this.now();
      const updated: StoredFile = { ...file, name, name_key: nameKey(name), folder_id: folderId, visibility, updated_at: now };
      await tx.updateFile(file.id, { name, name_key: updated.name_key, folder_id: folderId, visibility, updated_at: now });
      const context = await this.folderContext(tx, folderId);
      let seq = 0;
      if (file.status === 'ready') {
        seq = await tx.appendEvent({ type: 'file.updated', file_id: file.id, folder_id: folderId, data: fileEventData(updated, context) }, now);
      }
      return { record: fileRecord(updated, context, this.opts.cdnUrl), seq };
    });
    if (seq) await this.publish(seq);
    return record;
  }

  async deleteFile(fileId: string): Promise<{ file_id: string; deleted: true }> {
    const seq = await this.meta.transaction(async (tx) => {
      // Locked: a completion of this file commits before this reads it, or after it is gone.
      const file = await this.requireFile(tx, fileId, 'update');
      const now = this.now();
      await tx.deleteFiles([file.id]);
      const ready = file.status === 'ready';
      await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: ready ? null : file.upload_id, object: ready ? 1 : 0 }], now);
      return ready ? tx.appendEvent({ type: 'file.deleted', file_id: file.id, folder_id: file.folder_id, data: { file_id: file.id } }, now) : 0;
    });
    this.emptyTrash();
    if (seq) await this.publish(seq);
    return { file_id: fileId, deleted: true };
  }

  private async readyFile(fileId: string): Promise<{ file: StoredFile; record: FileRecord }> {
    const file = await this.requireFile(this.meta.read, fileId);
    if (file.status !== 'ready') throw errors.uploadNotComplete(fileId);
    return { file, record: await this.toFileRecord(this.meta.read, file) };
  }

  private sign(fileId: string, expiresIn: number, params?: Record<string, string>) {
    const path = deliveryPath(fileId);
    const signed = signPath(path, this.opts.signingSecrets[0]!, { expiresIn, now: Math.floor(this.now() / 1000), ...(params ? { params } : {}) }, nodeHmac);
    return { url: this.opts.cdnUrl + signed.pathAndQuery, expiresAt: isoTime(signed.expires * 1000) };
  }

  async createLink(req: CreateLinkRequest): Promise<CreateLinkResponse> {
    const { file } = await this.readyFile(req.file_id);
    let fileType: FileType;
    try {
      fileType = parseFileType(req.file_type);
    } catch {
      fileType = req.file_type as FileType;
    }
    if (fileType !== file.file_type) {
      throw errors.invalidField('file_type_mismatch', 'file_type', `"file_type" must be the file's own type, "${file.file_type}".`, { expected: file.file_type });
    }
    const expiry = checkExpiry(req.expiry);
    const link = this.sign(file.id, expiry);
    return { file_id: file.id, file_type: file.file_type, expiry, presigned_url: link.url, expires_at: link.expiresAt };
  }

  async downloadLink(req: DownloadRequest): Promise<DownloadResponse> {
    const { file, record } = await this.readyFile(req.file_id);
    const expiry = checkExpiry(req.expiry);
    if (record.effective_visibility === 'Public') {
      return { file_id: file.id, download_url: `${this.opts.cdnUrl}${deliveryPath(file.id)}?download=1`, expires_at: null };
    }
    const link = this.sign(file.id, expiry, { download: '1' });
    return { file_id: file.id, download_url: link.url, expires_at: link.expiresAt };
  }
}
