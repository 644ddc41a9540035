/**
 * The ports: what the service needs from a metadata store and a blob store.
 * Adapters implement them; the service holds every rule and calls only these.
 */
import type { FileStatus, FileType, Visibility } from './records.js';

export interface StoredFolder {
  id: string;
  name: string;
  name_key: string;
  visibility: Visibility;
  parent_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface StoredFile {
  id: string;
  name: string;
  name_key: string;
  visibility: Visibility;
  size: number;
  file_type: FileType;
  content_type: string;
  folder_id: string | null;
  status: FileStatus;
  sha256: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  bucket: string;
  blob_key: string;
  upload_id: string | null;
  upload_expires_at: number | null;
}

export interface StoredPart {
  file_id: string;
  part_number: number;
  size: number;
  etag: string;
  updated_at: number;
}

export type EventType = 'file.ready' | 'file.updated' | 'file.deleted' | 'folder.created' | 'folder.updated' | 'folder.deleted';

export interface NewEvent {
  type: EventType;
  file_id?: string | null;
  folder_id?: string | null;
  data: Record<string, unknown>;
}

export interface StoredEvent extends Required<NewEvent> {
  seq: number;
  created_at: number;
}

export type SortField = 'name' | 'created_at' | 'updated_at' | 'size';
export type SortOrder = 'asc' | 'desc';

/** Where a keyset page starts: after this sort value and id. */
export interface Keyset {
  value: string | number;
  id: string;
}

export interface PageQuery {
  parentId: string | null;
  sort: SortField;
  order: SortOrder;
  after: Keyset | null;
  limit: number;
  /** Case-folded text the name key must contain (search). */
  nameContains?: string;
}

/**
 * A Playground session. Only the SHA-256 of the cookie's token is kept, so a copy of the
 * database cannot be replayed as a live session; the CSRF token is useless without the cookie.
 */
export interface StoredSession {
  token_hash: string;
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

/** A blob left to remove: the multipart upload `upload_id` if set, the object if `object` is 1. */
export interface BlobToDelete {
  bucket: string;
  blob_key: string;
  upload_id: string | null;
  object: number;
}

/** Operations inside one transaction: all of them commit together or none does. */
export interface MetadataTx {
  getFolder(id: string): Promise<StoredFolder | undefined>;
  /** The folder and every folder above it, nearest first. */
  folderChain(id: string): Promise<StoredFolder[]>;
  findFolderByName(parentId: string | null, name: string): Promise<StoredFolder | undefined>;
  insertFolder(folder: StoredFolder): Promise<void>;
  updateFolder(id: string, patch: Partial<Omit<StoredFolder, 'id'>>): Promise<void>;
  /** Every folder below this one (not itself). */
  descendantFolderIds(id: string): Promise<string[]>;
  countChildren(folderId: string): Promise<{ files: number; folders: number }>;
  deleteFolders(ids: string[]): Promise<void>;
  filesInFolders(folderIds: string[]): Promise<StoredFile[]>;

  getFile(id: string): Promise<StoredFile | undefined>;
  insertFile(file: StoredFile): Promise<void>;
  updateFile(id: string, patch: Partial<Omit<StoredFile, 'id'>>): Promise<void>;
  deleteFiles(ids: string[]): Promise<void>;

  getPart(fileId: string, partNumber: number): Promise<StoredPart | undefined>;
  upsertPart(part: StoredPart): Promise<void>;
  listParts(fileId: string): Promise<StoredPart[]>;
  partNumbers(fileId: string): Promise<number[]>;
  deleteParts(fileId: string): Promise<void>;

  appendEvent(event: NewEvent, at: number): Promise<number>;
  /** Blobs to remove once the transaction has committed; kept until they are gone. */
  queueBlobDeletion(blobs: BlobToDelete[], at: number): Promise<void>;

  insertSession(session: StoredSession): Promise<void>;
  getSession(tokenHash: string): Promise<StoredSession | undefined>;
  /** Returns whether a session was there to delete. */
  deleteSession(tokenHash: string): Promise<boolean>;
}

export interface MetadataStore {
  readonly dialect: 'sqlite' | 'postgres';
  migrate(): Promise<void>;
  /**
   * Runs `fn` in one transaction. `durable: false` lets an engine skip the flush at commit
   * where losing the change to a power cut is harmless (a part can be sent again).
   */
  transaction<T>(fn: (tx: MetadataTx) => Promise<T>, opts?: { durable?: boolean }): Promise<T>;
  /** Reads outside a transaction use the same operations. */
  read: MetadataTx;
  listFolders(q: PageQuery): Promise<StoredFolder[]>;
  listFiles(q: PageQuery): Promise<StoredFile[]>;
  expiredUploads(now: number, limit: number): Promise<StoredFile[]>;
  /** Everything an edge needs to start from: every folder and every ready file. */
  allFolders(): Promise<StoredFolder[]>;
  allReadyFiles(): Promise<StoredFile[]>;
  eventsAfter(seq: number, limit: number): Promise<StoredEvent[]>;
  lastEventSeq(): Promise<number>;
  pendingBlobDeletions(limit: number): Promise<Array<BlobToDelete & { id: number }>>;
  forgetBlobDeletions(ids: number[]): Promise<void>;
  /** Deletes sessions whose expiry is at or before `now`; returns how many. */
  deleteExpiredSessions(now: number): Promise<number>;
  close(): Promise<void>;
}

/** A part being received: bytes are written as they arrive, and land only on commit. */
export interface PartWriter {
  /** Writes the bytes; the caller may reuse `chunk` once the promise resolves. */
  write(chunk: Buffer): Promise<void>;
  readonly bytesWritten: number;
  /** Discards what was written; safe to call more than once. */
  discard(): Promise<void>;
}

export interface CommittedPart {
  etag: string;
  size: number;
  /** Resolves once the part would survive a power cut; only then may it be recorded. */
  durable: Promise<void>;
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export interface BlobStore {
  /** The bucket name reported in upload sessions. */
  readonly bucket: string;
  createMultipart(key: string): Promise<{ uploadId: string }>;
  openPart(): Promise<PartWriter>;
  /**
   * Makes the written bytes part `partNumber` of the upload, readable at once and durable
   * when `durable` resolves; the previous version stays until `dropPart`.
   */
  commitPart(key: string, uploadId: string, partNumber: number, writer: PartWriter): Promise<CommittedPart>;
  dropPart(key: string, uploadId: string, partNumber: number, etag: string): Promise<void>;
  /** Joins the parts, in order, into the object at `key` atomically; returns its digest. */
  completeMultipart(key: string, uploadId: string, parts: Array<{ partNumber: number; etag: string }>): Promise<{ size: number; sha256: string }>;
  abortMultipart(key: string, uploadId: string): Promise<void>;
  read(key: string, range?: ByteRange): Promise<NodeJS.ReadableStream>;
  size(key: string): Promise<number | null>;
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}
