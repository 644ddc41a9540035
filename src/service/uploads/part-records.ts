/**
 * Parts answered but not yet recorded, by file and part number, shared by every way parts
 * arrive (contract §4's chunks, raw parts, S3's UploadPart). A part is recorded only once its
 * bytes are on disk for good, so the store never lists a part a power cut could take back; the
 * flush overlaps the next parts' transfer instead of delaying the answer.
 */
import { KeyedQueue } from '../../core/coalesce.js';
import type { CommittedPart, StoredFile } from '../../core/ports.js';
import type { ServiceContext } from '../context.js';

export class PartRecords {
  /** Per file, the versions of each part waiting, recorded in the order they arrived. */
  private readonly pending = new Map<string, KeyedQueue<number>>();

  constructor(private readonly c: ServiceContext) {}

  /** Whether a version of this part is waiting to be recorded. */
  has(fileId: string, partNumber: number): boolean {
    return this.pending.get(fileId)?.has(partNumber) ?? false;
  }

  /** The part numbers of a file waiting to be recorded. */
  numbers(fileId: string): number[] {
    return this.pending.get(fileId)?.keys() ?? [];
  }

  /**
   * Records a committed part once it is durable; `durableRecord` makes the record itself survive
   * a power cut (for a part that replaces one a client was told it has). `md5`: the part's MD5,
   * for parts sent through S3. Resolves true once the part is recorded, false when it was
   * dropped instead (the upload moved on, or the flush failed).
   */
  record(file: StoredFile, partNumber: number, part: CommittedPart, durableRecord: boolean, md5: string | null = null): Promise<boolean> {
    let queue = this.pending.get(file.id);
    if (!queue) {
      const created = new KeyedQueue<number>(() => {
        if (this.pending.get(file.id) === created) this.pending.delete(file.id);
      });
      this.pending.set(file.id, created);
      queue = created;
    }
    const drop = (etag: string) => this.c.blobs.dropPart(file.blob_key, file.upload_id!, partNumber, etag).catch(() => {});
    return queue
      .run(partNumber, async () => {
        try {
          await part.durable;
        } catch (err) {
          this.c.opts.onBackgroundError?.(`flushing part ${partNumber} of ${file.id}`, err);
          await drop(part.etag);
          return false;
        }
        const outcome = await this.c.meta.transaction(async (tx) => {
          // Shared: parts of one file are recorded side by side, never while a complete or a delete decides.
          const current = await tx.getFile(file.id, 'share');
          if (!current || current.status !== 'uploading' || current.upload_id !== file.upload_id) return { stale: true as const };
          const previous = await tx.getPart(file.id, partNumber);
          await tx.upsertPart({ file_id: file.id, part_number: partNumber, size: part.size, etag: part.etag, updated_at: this.c.now(), md5 });
          return { stale: false as const, previous };
        }, { durable: durableRecord });
        if (outcome.stale) {
          await drop(part.etag);
          return false;
        }
        if (outcome.previous && outcome.previous.etag !== part.etag) await drop(outcome.previous.etag);
        return true;
      })
      .catch((err) => {
        this.c.opts.onBackgroundError?.(`recording part ${partNumber} of ${file.id}`, err);
        return false;
      });
  }

  /** Waits until every part of a file answered so far is recorded (or dropped). */
  async settle(fileId: string): Promise<void> {
    await this.pending.get(fileId)?.drain();
  }

  /** Waits for every answered part of every upload to be recorded: before a shutdown. */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending.keys()].map((id) => this.settle(id)));
  }
}
