/**
 * What edges read besides the feed: a snapshot to start from, one file's record for a
 * re-check, and a ready file's bytes. Built on the stores it is given; the origin's routes
 * (origin/edge-routes.ts) only carry it over HTTP.
 */
import { heldStream } from '../core/held-stream.js';
import type { ByteSource, HotBytes } from '../core/hot-bytes.js';
import { isBlobNotFound, type BlobStore, type MetadataStore, type StoredFile } from '../core/ports.js';
import { ROOT_CONTEXT, chainIsComplete, fileEventData, folderEventData } from '../service/records.js';

const edgeFile = (f: StoredFile) => fileEventData(f, ROOT_CONTEXT);

export interface EdgeSnapshot {
  seq: number;
  folders: Array<Record<string, unknown>>;
  files: Array<Record<string, unknown>>;
}

export interface EdgeFileRecord {
  file: Record<string, unknown>;
  folders: Array<Record<string, unknown>>;
}

export interface EdgeBlob {
  /** The bytes: a stream (of one buffer shared by every edge asking for a new file at once, or of the storage). */
  body: NodeJS.ReadableStream;
  size: number;
  sha256: string | null;
}

/**
 * Holds a new file's bytes back while changes wait for the edges' acknowledgements: the
 * completion answers once every edge acknowledged it, and edges prefetch as soon as they hear
 * of it, so without this their fills compete with the acknowledgements for the machine.
 */
export interface FillGate {
  /** Resolves once the changes waiting now are answered, or after `limitMs` (PublishWait.settled). */
  settled(limitMs: number): Promise<void>;
  /** Wall clock, Unix ms (the clock `completed_at` was written with). */
  now(): number;
  /** How long after its completion a file's bytes may be held back, at most. */
  holdMs: number;
}

export class EdgeRecords {
  constructor(
    private readonly meta: Pick<MetadataStore, 'lastEventSeq' | 'allFolders' | 'allReadyFiles' | 'read'>,
    private readonly blobs: Pick<BlobStore, 'read'>,
    private readonly gate?: FillGate,
    private readonly hot?: HotBytes,
  ) {}

  /** Every folder and ready file, with the sequence they are at least as new as. */
  async snapshot(): Promise<EdgeSnapshot> {
    // The sequence is read first: anything newer is replayed from the feed, and replay is idempotent.
    const seq = await this.meta.lastEventSeq();
    const [folders, files] = await Promise.all([this.meta.allFolders(), this.meta.allReadyFiles()]);
    return { seq, folders: folders.map(folderEventData), files: files.map(edgeFile) };
  }

  /** A ready file's record and its folders, or undefined. */
  async file(id: string): Promise<EdgeFileRecord | undefined> {
    const file = await this.readyFile(id);
    if (!file) return undefined;
    const chain = file.folder_id ? await this.meta.read.folderChain(file.folder_id) : [];
    // A chain cut short (or a folder gone) hides what lies above: the edge is told Private.
    const complete = file.folder_id === null || (chain.length > 0 && chainIsComplete(chain));
    const record = complete ? edgeFile(file) : { ...edgeFile(file), visibility: 'Private' as const };
    return { file: record, folders: chain.map(folderEventData) };
  }

  /** A ready file's bytes, or undefined (also when the file was deleted since it was looked up). */
  async blob(id: string): Promise<EdgeBlob | undefined> {
    let file = await this.readyFile(id);
    if (!file) return undefined;
    // At most holdMs: a completion stamped ahead of this origin's clock (another origin's, or the
    // clock stepped back) never holds a fill for longer.
    const hold = this.gate && file.completed_at !== null ? Math.min(this.gate.holdMs, file.completed_at + this.gate.holdMs - this.gate.now()) : 0;
    if (hold > 0) {
      await this.gate!.settled(hold);
      // Deleted or replaced meanwhile: read again.
      file = await this.readyFile(id);
      if (!file) return undefined;
    }
    const { blob_key: key, size, sha256 } = file;
    const held = this.hot?.take(`${key}\n${sha256}`, size, async () => (await this.blobs.read(key)) as ByteSource);
    try {
      if (!held) return { body: await this.blobs.read(key), size, sha256 };
      await held.bytes;
      // A read taking its time: a delete or replace that returned meanwhile is not answered after.
      const now = held.ready ? file : await this.readyFile(id);
      if (now?.blob_key !== key || now.sha256 !== sha256) {
        held.release();
        return undefined;
      }
      return { body: heldStream(held), size, sha256 };
    } catch (err) {
      held?.release();
      if (isBlobNotFound(err)) return undefined;
      throw err;
    }
  }

  private async readyFile(id: string): Promise<StoredFile | undefined> {
    const file = await this.meta.read.getFile(id);
    return file?.status === 'ready' ? file : undefined;
  }
}
