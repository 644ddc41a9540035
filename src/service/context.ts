/**
 * What every part of the service shares: the ports, the options, the clock, the publisher
 * that holds answers until edges have a change, and the lookups each rule starts from.
 */
import { errors } from '../core/errors.js';
import { MAX_FOLDER_DEPTH } from '../core/upload.js';
import type { BlobStore, MetadataStore, MetadataTx, RowLock, StoredFile, StoredFolder } from '../core/ports.js';
import type { FileRecord, FolderRecord } from '../core/api.js';
import { ROOT_CONTEXT, chainIsComplete, contextOfChain, fileRecord, folderRecord, type FolderContext } from './records.js';
import { Trash } from './trash.js';
import { Background } from './background.js';
import { PartRecords } from './uploads/part-records.js';
import type { Caller } from '../core/access.js';
import { fileInReach, requireFolderInReach } from './access.js';
import type { WebhookSendOptions } from './webhooks/sender.js';

export interface ServiceOptions {
  /** Where files are delivered; a function when it is known only once an edge listens (`coffer serve` on port 0). */
  cdnUrl: string | (() => string);
  /** The first signs; all verify. */
  signingSecrets: string[];
  uploadTtlSeconds: number;
  /** How long a Playground session lasts; 12 hours when not given. */
  sessionTtlSeconds?: number;
  maxFileSize: number;
  /**
   * The root access key: keys made while it is set get a SigV4 secret sealed under it, for the
   * S3 interface (core/key-seal.ts). Unset: keys work with Bearer only.
   */
  rootKey?: string;
  /** Webhook receivers may be on loopback and private addresses. */
  webhookAllowPrivate?: boolean;
  now?: () => number;
  /** Told of background failures that no request will report. */
  onBackgroundError?: (what: string, err: unknown) => void;
  /** Where work no request waits for runs; by default one reporting to `onBackgroundError`. */
  background?: Background;
  /**
   * Told of each committed change; the change's answer waits for it (the edge feed holds
   * answers until edges have the change). None: answers wait for nothing.
   */
  publish?: EventPublisher;
  /** How webhooks are sent once `webhooks.start()` is called (webhooks/sender.ts). */
  webhooks?: WebhookSendOptions;
}

/** Called after a change is committed with its last event's sequence; resolves once edges have it. */
export type EventPublisher = (seq: number) => Promise<void>;

export class ServiceContext {
  readonly now: () => number;
  /** Told of each committed change (ServiceOptions.publish). */
  readonly publish: EventPublisher;
  readonly trash: Trash;
  readonly background: Background;
  /** Parts answered and not yet recorded, whichever way they came. */
  readonly parts: PartRecords;

  /** The delivery address files' URLs start with. */
  get cdnUrl(): string {
    const url = this.opts.cdnUrl;
    return typeof url === 'function' ? url() : url;
  }

  constructor(readonly meta: MetadataStore, readonly blobs: BlobStore, readonly opts: ServiceOptions) {
    this.now = opts.now ?? Date.now;
    this.publish = opts.publish ?? (async () => {});
    this.trash = new Trash(meta, blobs);
    this.background = opts.background ?? new Background({ onFailure: (task, err) => opts.onBackgroundError?.(task, err) });
    this.parts = new PartRecords(this);
  }

  /** Starts removing what a change queued; the change's answer does not wait, and a failure is retried later. */
  emptyTrash(): void {
    void this.background.run('trash', () => this.trash.empty());
  }

  async folderContext(tx: MetadataTx, folderId: string | null): Promise<FolderContext> {
    return folderId === null ? ROOT_CONTEXT : contextOfChain(await tx.folderChain(folderId));
  }

  /** A folder placed under `parentChain` with `height` levels below it must not sit deeper than MAX_FOLDER_DEPTH. */
  checkDepth(parentChain: StoredFolder[], height: number): void {
    if (!chainIsComplete(parentChain) || parentChain.length + 1 + height > MAX_FOLDER_DEPTH) throw errors.folderTooDeep(MAX_FOLDER_DEPTH);
  }

  async requireFolder(tx: MetadataTx, folderId: string, field = 'folder_id', lock?: RowLock): Promise<StoredFolder> {
    const folder = await tx.getFolder(folderId, lock);
    if (!folder) throw errors.folderNotFound(folderId, field);
    return folder;
  }

  isExpired(file: StoredFile): boolean {
    return file.status === 'uploading' && file.upload_expires_at !== null && file.upload_expires_at <= this.now();
  }

  /**
   * A file as clients may see it: an expired upload no longer exists, and a tus partial
   * upload (contract §9) never is a file, only bytes a final upload is made from.
   */
  async requireFile(tx: MetadataTx, fileId: string, lock?: RowLock): Promise<StoredFile> {
    const file = await tx.getFile(fileId, lock);
    if (!file || this.isExpired(file)) throw errors.fileNotFound(fileId);
    if (file.status === 'uploading' && (await tx.tus.get(fileId))?.kind === 'partial') throw errors.fileNotFound(fileId);
    return file;
  }

  /** A file as this caller may see it: 404 outside its reach, as if it did not exist. */
  async requireFileFor(tx: MetadataTx, caller: Caller, fileId: string, lock?: RowLock): Promise<StoredFile> {
    const file = await this.requireFile(tx, fileId, lock);
    if (!(await fileInReach(tx, caller, file))) throw errors.fileNotFound(fileId);
    return file;
  }

  /** A folder as this caller may see it: 404 outside its reach, as if it did not exist. */
  async requireFolderFor(tx: MetadataTx, caller: Caller, folderId: string, field = 'folder_id', lock?: RowLock): Promise<StoredFolder> {
    const folder = await this.requireFolder(tx, folderId, field, lock);
    await requireFolderInReach(tx, caller, folderId, field);
    return folder;
  }

  async toFileRecord(tx: MetadataTx, file: StoredFile): Promise<FileRecord> {
    return fileRecord(file, await this.folderContext(tx, file.folder_id), this.cdnUrl);
  }

  async toFolderRecord(tx: MetadataTx, folder: StoredFolder): Promise<FolderRecord> {
    return folderRecord(folder, await this.folderContext(tx, folder.parent_id));
  }
}
