/**
 * Blobs whose records are gone are queued in the same transaction as the change and removed
 * here afterwards, so a crash between the two leaves a queue entry, never a lost blob.
 */
import type { BlobStore, BlobToDelete, MetadataStore, MetadataTx, StoredFile } from '../core/ports.js';
import type { StoredTusUpload } from '../core/tus.js';

export class Trash {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly meta: MetadataStore,
    private readonly blobs: BlobStore,
  ) {}

  /**
   * Removes queued blobs; runs after each change and at start, one pass at a time. Rejects
   * when a blob could not be removed: it stays queued, and a later pass tries it again.
   */
  empty(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      let failure: Error | null = null;
      do {
        this.again = false;
        for (;;) {
          const batch = await this.meta.pendingBlobDeletions(100);
          if (batch.length === 0) break;
          const done: number[] = [];
          for (const blob of batch) {
            try {
              await this.remove(blob);
              done.push(blob.id);
            } catch (err) {
              failure ??= new Error(`removing blob ${blob.blob_key} failed: ${(err as Error).message}`, { cause: err });
            }
          }
          await this.meta.forgetBlobDeletions(done);
          if (done.length < batch.length) break;
        }
      } while (this.again && !failure);
      if (failure) throw failure;
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async remove(blob: BlobToDelete): Promise<void> {
    if (blob.upload_id) await this.blobs.abortMultipart(blob.blob_key, blob.upload_id);
    if (blob.object) await this.blobs.delete(blob.blob_key);
  }
}

/** What must go from the blob store with a file: its object once ready, its multipart upload before. */
export function blobOf(file: StoredFile): BlobToDelete {
  const ready = file.status === 'ready';
  return { bucket: file.bucket, blob_key: file.blob_key, upload_id: ready ? null : file.upload_id, object: ready ? 1 : 0 };
}

/** The objects a tus upload holds besides its file's own blob. */
export function tusBlobsOf(t: StoredTusUpload, file: StoredFile): BlobToDelete[] {
  const keys = [t.tail_key, t.next_tail_key, t.joined ? file.blob_key : null].filter((k): k is string => k !== null);
  return keys.map((blob_key) => ({ bucket: file.bucket, blob_key, upload_id: null, object: 1 }));
}

/**
 * Removes files in a transaction: their rows, their blobs queued for the trash, and a
 * `file.deleted` event for each one edges may hold (ready files). Returns the last event's
 * sequence, 0 when there was none.
 */
export async function removeFiles(tx: MetadataTx, files: StoredFile[], now: number): Promise<number> {
  let seq = 0;
  for (const file of files) {
    if (file.status === 'ready') seq = await tx.appendEvent({ type: 'file.deleted', file_id: file.id, folder_id: file.folder_id, data: { file_id: file.id } }, now);
  }
  // Read before the rows go (they go with their files): a tus upload's tail objects, and the object a partial upload was joined into.
  const tus = await tx.tus.ofFiles(files.map((f) => f.id));
  await tx.deleteFiles(files.map((f) => f.id));
  await tx.queueBlobDeletion([...files.map(blobOf), ...tus.flatMap((t) => tusBlobsOf(t, files.find((f) => f.id === t.file_id)!))], now);
  return seq;
}
