/**
 * The ports: what the service needs from a metadata store and a blob store.
 * Adapters implement them; the service holds every rule and calls only these.
 */
import type { FileStatus, FileType, Visibility } from './records.js';
import type { StoredGrant, StoredKey } from './access.js';
import type { StoredDelivery, StoredWebhook } from './webhooks.js';
import type { StoredTusUpload } from './tus.js';

export interface StoredFolder {
  id: string;
  name: string;
  name_key: string;
  visibility: Visibility;
  parent_id: string | null;
  created_at: number;
  updated_at: number;
  /** 1 when the S3 interface made it for a key's path: it goes again once the S3 interface empties it. */
  s3_implicit?: number | null;
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
  /** The upload grant the upload was started under, if any. */
  grant_id: string | null;
  /** Signed links issued up to this time (Unix ms) are revoked. */
  links_revoked_at: number | null;
  /** The S3 interface's ETag (contract §12): the MD5 of a single PUT, S3's multipart form otherwise; null when made elsewhere. */
  s3_etag?: string | null;
  /** What an S3 client stored with the object (x-amz-meta-* and a few headers), as JSON; null when none. */
  s3_meta?: string | null;
}

export interface StoredPart {
  file_id: string;
  part_number: number;
  size: number;
  /** The blob store's name for this version of the part. */
  etag: string;
  updated_at: number;
  /** The MD5 (hex) of the part's bytes, for parts sent through the S3 interface. */
  md5?: string | null;
}

export type EventType = 'file.ready' | 'file.updated' | 'file.deleted' | 'folder.created' | 'folder.updated' | 'folder.deleted' | 'upload.expired';

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
  /** The fingerprint of the root key it was signed in with (core/access.ts rootFingerprint); null for sessions older than it. */
  root_fingerprint: string | null;
}

/** A blob left to remove: the multipart upload `upload_id` if set, the object if `object` is 1. */
export interface BlobToDelete {
  bucket: string;
  blob_key: string;
  upload_id: string | null;
  object: number;
}

/**
 * A row lock a read takes inside a transaction, held until it ends: `share` keeps the row as
 * read (others may share), `update` keeps everyone else off it. Several origins may share a
 * PostgreSQL store, so a decision that rests on a row another origin may change reads it with
 * a lock; SQLite runs one transaction at a time and ignores them. Outside a transaction
 * (`read`) there is nothing to hold them, and they are ignored too.
 */
export type RowLock = 'share' | 'update';

/** Keys other than the root key (contract §10). */
export interface KeyRows {
  insert(key: StoredKey): Promise<void>;
  get(id: string): Promise<StoredKey | undefined>;
  list(): Promise<StoredKey[]>;
  /** Sets revoked_at unless the key is revoked already. */
  revoke(id: string, at: number): Promise<void>;
  touch(id: string, at: number): Promise<void>;
}

/** Upload grants (contract §10). */
export interface GrantRows {
  insert(grant: StoredGrant): Promise<void>;
  get(id: string): Promise<StoredGrant | undefined>;
  /** Counts one more file against the grant; false when it has none left. */
  use(id: string): Promise<boolean>;
}

/** Webhooks and their deliveries (contract §11). */
export interface WebhookRows {
  insert(webhook: StoredWebhook): Promise<void>;
  /** With `lock`, held for the transaction; on PostgreSQL a webhook another origin holds is skipped (undefined). */
  get(id: string, lock?: boolean): Promise<StoredWebhook | undefined>;
  list(): Promise<StoredWebhook[]>;
  /** Deletes the webhook and its deliveries; false when there was none. */
  delete(id: string): Promise<boolean>;
  advance(id: string, cursorSeq: number): Promise<void>;
  insertDeliveries(rows: StoredDelivery[]): Promise<void>;
  getDelivery(id: string): Promise<StoredDelivery | undefined>;
  /** Newest first, before the given position. */
  listDeliveries(webhookId: string, before: { seq: number; id: string } | null, limit: number): Promise<StoredDelivery[]>;
  /**
   * Takes up to `limit` due deliveries, each the earliest pending one of its webhook and key,
   * and holds them until `holdUntil`; rows another sender holds are skipped.
   */
  claimDue(now: number, limit: number, holdUntil: number): Promise<StoredDelivery[]>;
  updateDelivery(id: string, patch: Partial<Omit<StoredDelivery, 'id'>>): Promise<void>;
  /**
   * The parent each `folder.created` and `folder.updated` event of the log gave this folder,
   * oldest first: where it was at any point of the log, even once deleted.
   */
  folderParents(folderId: string): Promise<FolderMove[]>;
}

/** A folder's parent from the event `seq` of the log on (null: the root). */
export interface FolderMove {
  seq: number;
  parent_id: string | null;
}

/** Downloads and bytes served of one file on one UTC day (`day` as yyyymmdd). */
export interface UsageRow {
  file_id: string;
  day: number;
  downloads: number;
  bytes: number;
}

/** What edges report they served (contract §11), summed per file and day. */
export interface UsageRows {
  /** Adds the counts to the rows of their file and day. */
  add(rows: UsageRow[]): Promise<void>;
  ofFile(fileId: string): Promise<{ downloads: number; bytes: number }>;
  /** Totals per day from `fromDay` on, every file together, oldest first. */
  byDay(fromDay: number): Promise<Array<{ day: number; downloads: number; bytes: number }>>;
}

/** tus uploads (contract §9): what tus keeps beside an upload's file record. */
export interface TusRows {
  insert(row: StoredTusUpload): Promise<void>;
  get(fileId: string): Promise<StoredTusUpload | undefined>;
  /** The rows of these files (for removing their blobs with them). */
  ofFiles(fileIds: string[]): Promise<StoredTusUpload[]>;
  /**
   * Compare-and-set: applies `patch` and adds 1 to `version` only if the row still has
   * `version`; false when another writer changed it first (or it is gone).
   */
  update(fileId: string, version: number, patch: Partial<Omit<StoredTusUpload, 'file_id' | 'version'>>): Promise<boolean>;
  /** The declared sizes of the open partial uploads started under this grant, summed. */
  partialBytesOfGrant(grantId: string): Promise<number>;
}

/** An S3 multipart upload (contract §12): the file it makes, and where, as the S3 client named it. */
export interface S3Upload {
  file_id: string;
  /** The top-level folder the bucket is. */
  bucket_id: string;
  /** The object's key inside the bucket. */
  object_key: string;
  created_at: number;
}

/** One entry of a folder in S3 key order: a ready file under its name, a folder under its name and "/". */
export type S3Entry = { kind: 'file'; key: string; file: StoredFile } | { kind: 'folder'; key: string; folder: StoredFolder };

/** What the S3 interface asks of the store beyond the rest (contract §12). */
export interface S3Rows {
  /** The ready files of a folder with exactly this name, newest (last completed) first. */
  filesNamed(folderId: string | null, name: string, lock?: RowLock): Promise<StoredFile[]>;
  /**
   * Up to `limit` entries of a folder whose key sorts after `after` (bytes of UTF-8; null: from
   * the start), in that order; of several files with one name, the newest comes first.
   * `more` is false once nothing follows the last one.
   */
  entries(folderId: string | null, after: string | null, limit: number): Promise<{ entries: S3Entry[]; more: boolean }>;
  insertUpload(upload: S3Upload): Promise<void>;
  getUpload(fileId: string): Promise<S3Upload | undefined>;
  deleteUpload(fileId: string): Promise<void>;
  /** Uploads of a bucket whose key starts with `prefix`, ordered by key then file id, after the given pair. */
  listUploads(bucketId: string, prefix: string, after: { key: string; fileId: string } | null, limit: number): Promise<S3Upload[]>;
}

/** Operations inside one transaction: all of them commit together or none does. */
export interface MetadataTx {
  readonly s3: S3Rows;
  readonly keys: KeyRows;
  readonly grants: GrantRows;
  readonly webhooks: WebhookRows;
  readonly usage: UsageRows;
  readonly tus: TusRows;
  getFolder(id: string, lock?: RowLock): Promise<StoredFolder | undefined>;
  /**
   * The folder and every folder above it, nearest first; at most MAX_FOLDER_DEPTH of them,
   * so a chain whose last folder still has a parent was cut short.
   */
  folderChain(id: string): Promise<StoredFolder[]>;
  findFolderByName(parentId: string | null, name: string): Promise<StoredFolder | undefined>;
  insertFolder(folder: StoredFolder): Promise<void>;
  updateFolder(id: string, patch: Partial<Omit<StoredFolder, 'id'>>): Promise<void>;
  /** Every folder below this one (not itself). */
  descendantFolderIds(id: string): Promise<string[]>;
  /** How many levels of folders lie below this one (0 for none), counted up to `limit`. */
  folderHeight(id: string, limit: number): Promise<number>;
  countChildren(folderId: string): Promise<{ files: number; folders: number }>;
  deleteFolders(ids: string[]): Promise<void>;
  filesInFolders(folderIds: string[], lock?: RowLock): Promise<StoredFile[]>;
  /** Takes `update` locks on these folders. */
  lockFolders(ids: string[]): Promise<void>;
  /**
   * Serialises this transaction with every other one that calls this, in every process sharing
   * the store: folder creation, moves, renames and deletes, so names stay unique and no move
   * makes a cycle.
   */
  lockFolderTree(): Promise<void>;

  getFile(id: string, lock?: RowLock): Promise<StoredFile | undefined>;
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

/**
 * Where an edge stands with every origin sharing the store (see feed/hub.ts):
 * `caught_up` may hold a lease; `lapsed` had a change answered without it; `behind` is new,
 * or was lapsed and has been heard from again, and must apply the head before a lease.
 */
export type EdgeLeaseState = 'behind' | 'caught_up' | 'lapsed';

/** An edge's acknowledgement as an origin records it. Times are that origin's wall-clock ms. */
export interface EdgeAck {
  edge_id: string;
  /** The origin that heard it. */
  origin_id: string;
  acked_seq: number;
  heard_at: number;
  /** Until when every origin counts the edge as live: receipt + the lease granted (0 when none was). */
  live_until: number;
}

/** One row of the shared lease table. `version` grows with every write (compare-and-set). */
export interface EdgeLease extends EdgeAck {
  state: EdgeLeaseState;
  version: number;
}

/**
 * An edge's last report of itself (POST /_edge/usage's `edge`), kept where every origin sharing
 * the store can list it: `report` is the report as JSON, `received_at` the receiving origin's wall ms.
 */
export interface EdgeReportRow {
  edge_id: string;
  origin_id: string;
  received_at: number;
  report: string;
}

export interface MetadataStore {
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * Whether other origins may write the same rows: one origin's memory (parts answered and
   * not yet recorded) is then invisible to the origin that is asked next.
   */
  readonly sharedByOrigins: boolean;
  migrate(): Promise<void>;
  /**
   * Runs `fn` in one transaction. `durable: false` lets an engine skip the flush at commit
   * where losing the change to a power cut is harmless (a part can be sent again).
   * A transaction that loses a race with another (a deadlock, a uniqueness check) may be
   * rolled back and `fn` run again, so `fn` does database work only.
   */
  transaction<T>(fn: (tx: MetadataTx) => Promise<T>, opts?: { durable?: boolean }): Promise<T>;
  /**
   * Runs `fn` while no other caller of `exclusive` with the same name runs, in any process
   * sharing this store; not inside a transaction. For work outside the database that must
   * happen once, such as joining an upload's parts.
   */
  exclusive<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Runs `fn` unless a `tryExclusive` of the same name is running, in any process sharing this
   * store; then it returns at once without running it. A holder that dies lets go with its
   * process. For work a client must not do twice at once, such as two PATCHes of one tus upload.
   */
  tryExclusive<T>(name: string, fn: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }>;
  /** Reads outside a transaction use the same operations. */
  read: MetadataTx;
  listFolders(q: PageQuery): Promise<StoredFolder[]>;
  listFiles(q: PageQuery): Promise<StoredFile[]>;
  expiredUploads(now: number, limit: number): Promise<StoredFile[]>;
  /** How many uploads are open (metrics). */
  countOpenUploads(): Promise<number>;
  /** Everything an edge needs to start from: every folder and every ready file. */
  allFolders(): Promise<StoredFolder[]>;
  allReadyFiles(): Promise<StoredFile[]>;
  eventsAfter(seq: number, limit: number): Promise<StoredEvent[]>;
  lastEventSeq(): Promise<number>;
  pendingBlobDeletions(limit: number): Promise<Array<BlobToDelete & { id: number }>>;
  forgetBlobDeletions(ids: number[]): Promise<void>;
  /** Deletes sessions whose expiry is at or before `now`; returns how many. */
  deleteExpiredSessions(now: number): Promise<number>;
  /**
   * Records acknowledgements, one row per edge: `acked_seq` and `live_until` only grow; a
   * `lapsed` row, or one whose `live_until` had passed by `heard_at`, becomes `behind`; a new
   * one starts `behind`. Returns the rows as written.
   */
  recordEdgeAcks(acks: EdgeAck[]): Promise<EdgeLease[]>;
  edgeLeases(): Promise<EdgeLease[]>;
  /** Marks `lapsed` each edge whose row still has the version given; returns the ids marked. */
  markEdgesLapsed(edges: Array<{ edge_id: string; version: number }>): Promise<string[]>;
  /** Makes a `behind` row `caught_up` if it still has this version. */
  markEdgeCaughtUp(edgeId: string, version: number): Promise<boolean>;
  /** Deletes the rows of edges not live since before `before`; returns how many. */
  pruneEdgeLeases(before: number): Promise<number>;
  /** Keeps an edge's last report, one row per edge (the newest replaces the one before). */
  recordEdgeReport(row: EdgeReportRow): Promise<void>;
  edgeReports(): Promise<EdgeReportRow[]>;
  /** Deletes the reports received before `before`; returns how many. */
  pruneEdgeReports(before: number): Promise<number>;
  close(): Promise<void>;
}

/** A part being received: bytes are written as they arrive, and land only on commit. */
export interface PartWriter {
  /** Writes the bytes; the caller may reuse `chunk` once the promise resolves. */
  write(chunk: Buffer): Promise<void>;
  /**
   * Writes the chunks one after the other in one gathered write, where the store has one (the
   * disk's writev): the bytes go from the caller's buffers to the file, copied by no one else.
   */
  writev?(chunks: readonly Buffer[]): Promise<void>;
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

/**
 * The multipart upload is no longer there: aborted, expired, or completed (by another
 * origin, or by an earlier attempt) with no object left at its key. Whoever sees it
 * re-reads the upload's state instead of retrying.
 */
export class UploadGoneError extends Error {
  readonly code = 'upload_gone';
  constructor(readonly key: string, readonly uploadId: string) {
    super(`the multipart upload ${uploadId} of ${key} is gone`);
    this.name = 'UploadGoneError';
  }
}

/** No object is at the key: never written, or deleted since. Thrown by `BlobStore.read`, whatever the store. */
export class BlobNotFoundError extends Error {
  readonly code = 'blob_not_found';
  constructor(readonly key: string) {
    super(`no object at ${key}`);
    this.name = 'BlobNotFoundError';
  }
}

/** Whether `err` says that no object is at the key read. */
export const isBlobNotFound = (err: unknown): err is BlobNotFoundError => err instanceof BlobNotFoundError;

export interface BlobStore {
  /** The bucket name reported in upload sessions. */
  readonly bucket: string;
  createMultipart(key: string): Promise<{ uploadId: string }>;
  /**
   * Starts receiving part `partNumber` of the upload. `expectedSize` is the size the
   * contract requires of this part: a store may start sending the bytes on at once (S3's
   * UploadPart needs the length up front); a writer that receives another number of bytes
   * cannot be committed and must be discarded.
   */
  openPart(key: string, uploadId: string, partNumber: number, expectedSize: number): Promise<PartWriter>;
  /**
   * Starts receiving bytes whose part is not known yet (a JSON chunk with `body` before the
   * fields), committed later by `commitPart` like any part's writer. Offered by stores that
   * need no part identity to write (the disk); without it, such bytes wait in memory.
   */
  openUnnamedPart?(): Promise<PartWriter>;
  /**
   * Makes the written bytes part `partNumber` of the upload, readable at once and durable
   * when `durable` resolves; the previous version stays until `dropPart`.
   */
  commitPart(key: string, uploadId: string, partNumber: number, writer: PartWriter): Promise<CommittedPart>;
  dropPart(key: string, uploadId: string, partNumber: number, etag: string): Promise<void>;
  /**
   * Joins the parts, in order, into the object at `key` atomically; returns its digest.
   * When the upload was already completed (the object is there, the upload is not), returns
   * the digest of that object; when neither is there, throws UploadGoneError.
   */
  completeMultipart(key: string, uploadId: string, parts: Array<{ partNumber: number; etag: string }>): Promise<{ size: number; sha256: string }>;
  /** Discards the upload and its parts; an upload that is already gone is no error. */
  abortMultipart(key: string, uploadId: string): Promise<void>;
  /**
   * Stores `chunks`, one after the other, as the whole object at `key`, replacing any; the
   * object is durable when this resolves, and read, sized and deleted like any other. For
   * small objects held in memory (a tus upload's tail: less than one part).
   */
  putObject(key: string, chunks: readonly Buffer[]): Promise<void>;
  /** Throws BlobNotFoundError when no object is at `key`. */
  read(key: string, range?: ByteRange): Promise<NodeJS.ReadableStream>;
  size(key: string): Promise<number | null>;
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}
