/**
 * What an edge knows of the origin's files and folders, kept current by the event feed.
 * Effective visibility is derived here, so a folder switch changes every file below it
 * without touching the files.
 */
import type { Visibility } from '../core/records.js';
import { MAX_FOLDER_DEPTH } from '../core/upload.js';

export interface EdgeFile {
  file_id: string;
  name: string;
  visibility: Visibility;
  folder_id: string | null;
  size: number;
  content_type: string;
  sha256: string;
  completed_at: number;
  updated_at: number;
  /** Signed links issued at or before this time (Unix ms) are refused; absent from older origins. */
  links_revoked_at?: number | null;
}

export interface EdgeFolder {
  folder_id: string;
  name: string;
  visibility: Visibility;
  parent_id: string | null;
}

export interface FeedEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

export interface Snapshot {
  seq: number;
  folders: EdgeFolder[];
  files: EdgeFile[];
}

export interface StateListener {
  /** A file to fetch: `completedAt` is the sequence of the completion that made it, null when an update brought it into view. */
  fileReady(file: EdgeFile, completedAt: number | null): void;
  fileGone(fileId: string): void;
  /** After any change that may narrow what may be served (an update, a delete, a folder change, a new snapshot). */
  changed?(): void;
}

export class EdgeState {
  readonly files = new Map<string, EdgeFile>();
  readonly folders = new Map<string, EdgeFolder>();
  seq = 0;
  /** Bumped by every folder change: cached effective visibilities older than it are stale. */
  private generation = 0;
  private readonly effective = new Map<string, { generation: number; value: Visibility }>();
  private readonly seqWaiters = new Set<{ seq: number; resolve: () => void }>();

  constructor(private readonly listener: StateListener) {}

  /** Resolves once the applied sequence reaches `seq`; `cancel` forgets the wait (a caller's deadline). */
  whenSeq(seq: number): { reached: Promise<void>; cancel(): void } {
    if (this.seq >= seq) return { reached: Promise.resolve(), cancel: () => {} };
    let waiter!: { seq: number; resolve: () => void };
    const reached = new Promise<void>((resolve) => {
      waiter = { seq, resolve };
    });
    this.seqWaiters.add(waiter);
    return { reached, cancel: () => this.seqWaiters.delete(waiter) };
  }

  private seqAdvanced(): void {
    for (const w of this.seqWaiters) {
      if (this.seq < w.seq) continue;
      this.seqWaiters.delete(w);
      w.resolve();
    }
  }

  load(snapshot: Snapshot): void {
    const before = new Set(this.files.keys());
    this.files.clear();
    this.folders.clear();
    this.effective.clear();
    this.generation++;
    for (const f of snapshot.folders) this.folders.set(f.folder_id, f);
    for (const f of snapshot.files) this.files.set(f.file_id, f);
    for (const id of before) if (!this.files.has(id)) this.listener.fileGone(id);
    this.seq = snapshot.seq;
    this.listener.changed?.();
    this.seqAdvanced();
  }

  apply(event: FeedEvent): void {
    if (event.seq <= this.seq) return;
    const d = event.data;
    switch (event.type) {
      case 'file.ready':
      case 'file.updated': {
        const file = d as unknown as EdgeFile;
        const previous = this.files.get(file.file_id);
        this.files.set(file.file_id, file);
        this.effective.delete(file.file_id);
        if (event.type === 'file.ready' || !previous) this.listener.fileReady(file, event.type === 'file.ready' ? event.seq : null);
        break;
      }
      case 'file.deleted': {
        const id = d.file_id as string;
        this.files.delete(id);
        this.effective.delete(id);
        this.listener.fileGone(id);
        break;
      }
      case 'folder.created':
      case 'folder.updated':
        this.folders.set(d.folder_id as string, d as unknown as EdgeFolder);
        this.generation++;
        break;
      case 'folder.deleted':
        this.folders.delete(d.folder_id as string);
        this.generation++;
        break;
    }
    this.seq = event.seq;
    if (event.type !== 'file.ready' && event.type !== 'folder.created') this.listener.changed?.();
    if (this.seqWaiters.size > 0) this.seqAdvanced();
  }

  /**
   * Private if the file or any folder above it is Private. A walk cut short, by a folder this
   * edge does not know or by more than MAX_FOLDER_DEPTH levels (a cycle among them), is Private.
   */
  visibilityOf(file: EdgeFile): Visibility {
    const cached = this.effective.get(file.file_id);
    if (cached && cached.generation === this.generation) return cached.value;
    let value: Visibility = file.visibility;
    let folderId = file.folder_id;
    for (let depth = 0; value === 'Public' && folderId !== null; depth++) {
      const folder = depth < MAX_FOLDER_DEPTH ? this.folders.get(folderId) : undefined;
      if (!folder || folder.visibility === 'Private') value = 'Private';
      else folderId = folder.parent_id;
    }
    this.effective.set(file.file_id, { generation: this.generation, value });
    return value;
  }
}
