/**
 * Joining an upload's recorded parts into its file, once per file among every origin sharing
 * the store (run inside `meta.exclusive`): the parts become one object, its SHA-256 is computed,
 * and in one transaction the file turns ready with a file.ready event (edges then fetch it). A
 * crash at any moment leaves the upload open and resumable, or the file ready and whole.
 *
 * Which parts are joined is the plan's: all of them for contract §4's uploads, the ones the
 * client lists for S3's CompleteMultipartUpload.
 */
import { errors } from '../../core/errors.js';
import { missingParts, partCount } from '../../core/upload.js';
import type { MetadataTx, StoredFile, StoredPart } from '../../core/ports.js';
import type { FileRecord } from '../../core/api.js';
import type { ServiceContext } from '../context.js';
import { fileEventData, fileRecord } from '../records.js';

export interface PartsPolicy {
  /** The recorded parts to join, in order; throws (a CofferError) when they cannot be joined. */
  choose(file: StoredFile, parts: StoredPart[]): StoredPart[];
  /** Whether the joined object must be exactly the size the file declared. */
  declaredSize: boolean;
  /** More fields of the ready file. */
  extra?: Partial<StoredFile>;
  /** More work in the transaction that makes the file ready. */
  onReady?(tx: MetadataTx, ready: StoredFile): Promise<void>;
  /** Checked before anything is joined (a dialect's own refusals). */
  check?(file: StoredFile): Promise<void>;
  /** Keep the chosen parts' records (number, size, MD5) with the ready file: S3 reads an object by its parts. */
  keepParts?: boolean;
}

/** Every part the declared size makes, all of them there. */
export function everyPart(file: StoredFile, parts: StoredPart[]): StoredPart[] {
  const missing = missingParts(partCount(file.size), parts.map((p) => p.part_number));
  if (missing.length > 0) throw errors.missingParts(missing);
  return parts;
}

/** contract §4's completion: every part, into a file of the declared size. */
export const ALL_PARTS: PartsPolicy = { declaredSize: true, choose: everyPart };

const ATTEMPTS = 3;

export async function joinParts(c: ServiceContext, fileId: string, plan: PartsPolicy): Promise<{ record: FileRecord; seq: number }> {
  for (let attempt = 1; ; attempt++) {
    const file = await c.requireFile(c.meta.read, fileId);
    if (file.status === 'ready') {
      // Completed by another origin: answer once the edges have what it published.
      return { record: await c.toFileRecord(c.meta.read, file), seq: await c.meta.lastEventSeq() };
    }
    let chosen: StoredPart[];
    try {
      chosen = plan.choose(file, await c.meta.read.listParts(fileId));
    } catch (err) {
      // Parts go only with their file: read after them, a file now ready took them with it.
      if ((await c.requireFile(c.meta.read, fileId)).status === 'ready') continue;
      throw err;
    }
    let digest: { size: number; sha256: string };
    try {
      digest = await c.blobs.completeMultipart(file.blob_key, file.upload_id!, chosen.map((p) => ({ partNumber: p.part_number, etag: p.etag })));
    } catch (err) {
      // A part replaced while it was being joined: join again from the new list. An upload
      // that is gone (aborted, deleted) is answered from the state read again.
      if (attempt < ATTEMPTS) continue;
      throw err;
    }
    const outcome = await c.meta.transaction(async (tx) => {
      // Locked: a delete, an abort or an update of this file waits for this decision, and sees it.
      const current = await tx.getFile(fileId, 'update');
      if (!current || c.isExpired(current)) {
        // Deleted, aborted or expired while its parts were joined: the object just made is nobody's.
        await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: null, object: 1 }], c.now());
        return 'gone' as const;
      }
      if (current.status === 'ready') return { record: await c.toFileRecord(tx, current), seq: 0 };
      const now = new Map((await tx.listParts(fileId)).map((p) => [p.part_number, p.etag]));
      if (!chosen.every((p) => now.get(p.part_number) === p.etag)) return null;
      if (plan.declaredSize && digest.size !== current.size) throw new Error(`joined ${digest.size} bytes for a declared size of ${current.size}`);
      const at = c.now();
      const patch: Partial<StoredFile> = {
        status: 'ready', sha256: digest.sha256, size: digest.size, completed_at: at, updated_at: at, upload_expires_at: null, ...plan.extra,
      };
      const ready: StoredFile = { ...current, ...patch };
      await tx.updateFile(fileId, patch);
      if (plan.keepParts) await keepOnly(tx, fileId, chosen, now.size);
      else await tx.deleteParts(fileId);
      await tx.queueBlobDeletion([{ bucket: current.bucket, blob_key: current.blob_key, upload_id: current.upload_id, object: 0 }], at);
      await plan.onReady?.(tx, ready);
      const context = await c.folderContext(tx, current.folder_id);
      const seq = await tx.appendEvent({ type: 'file.ready', file_id: fileId, folder_id: current.folder_id, data: fileEventData(ready, context) }, at);
      return { record: fileRecord(ready, context, c.cdnUrl), seq };
    });
    if (outcome === 'gone') {
      c.emptyTrash();
      throw errors.fileNotFound(fileId);
    }
    if (outcome === null) {
      if (attempt < ATTEMPTS) continue;
      throw errors.unavailable('The upload kept changing while it was being completed; try again.');
    }
    return outcome;
  }
}

/** Leaves the records of the chosen parts alone, where others were recorded too. */
async function keepOnly(tx: MetadataTx, fileId: string, chosen: StoredPart[], recorded: number): Promise<void> {
  if (chosen.length === recorded) return;
  await tx.deleteParts(fileId);
  for (const part of chosen) await tx.upsertPart(part);
}

/**
 * Joins every part of an upload into the object at its key without making it a file (a tus
 * partial upload, contract §9): `mark` records that, in the transaction that drops the parts,
 * or says 'gone' when the upload was removed meanwhile. Run inside the completion's exclusive.
 */
export async function assembleParts(c: ServiceContext, file: StoredFile, mark: (tx: MetadataTx) => Promise<'gone' | 'marked'>): Promise<void> {
  const parts = everyPart(file, await c.meta.read.listParts(file.id));
  await c.blobs.completeMultipart(file.blob_key, file.upload_id!, parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })));
  const at = c.now();
  await c.meta.transaction(async (tx) => {
    const current = await tx.getFile(file.id, 'update');
    const marked = current ? await mark(tx) : 'gone';
    if (marked === 'gone') {
      // Removed while joined: the object just made is nobody's.
      await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: null, object: 1 }], at);
      return;
    }
    await tx.deleteParts(file.id);
    // The multipart upload's leftovers (the parts themselves, on disk).
    await tx.queueBlobDeletion([{ bucket: file.bucket, blob_key: file.blob_key, upload_id: file.upload_id, object: 0 }], at);
  });
}
