/** Files (contract §5): get, update (rename, move, visibility) and delete. */
import { nameKey, validateName } from '../core/names.js';
import { parseVisibility } from '../core/records.js';
import { errors } from '../core/errors.js';
import type { StoredFile } from '../core/ports.js';
import type { UpdateFileRequest, UpdateFileResponse } from '../core/api.js';
import type { FileWithUsage } from '../core/api-usage.js';
import { fileEventData, fileRecord } from './records.js';
import type { ServiceContext } from './context.js';
import type { Caller } from '../core/access.js';
import { authorize, authorizeFolder, holds } from './policy.js';
import { removeFiles } from './trash.js';
import { fileToTop, isEmptyKey } from './empty-name.js';

export class Files {
  constructor(private readonly c: ServiceContext) {}

  /** The record with what edges have reported serving (contract §11). */
  async get(caller: Caller, fileId: string): Promise<FileWithUsage> {
    authorize(caller, 'file.read');
    const record = await this.c.toFileRecord(this.c.meta.read, await this.c.requireFileFor(this.c.meta.read, caller, fileId));
    const used = await this.c.meta.read.usage.ofFile(fileId);
    return { ...record, downloads: used.downloads, bytes_served: used.bytes };
  }

  /** The record needs "read" too: without it a no-op update would be a read (docs/security.md). */
  async update(caller: Caller, req: UpdateFileRequest): Promise<UpdateFileResponse> {
    authorize(caller, 'file.write');
    const answer = holds(caller, 'read');
    const { record, seq } = await this.c.meta.transaction(async (tx) => {
      // The destination folder is locked before the file, the order a folder delete locks them in.
      const destination = req.folder_id ? await tx.getFolder(req.folder_id, 'share') : undefined;
      const file = await this.c.requireFileFor(tx, caller, req.file_id, 'update');
      let folderId = file.folder_id;
      if (req.folder_id !== undefined) {
        folderId = req.folder_id;
        if (folderId !== null && !destination) throw errors.folderNotFound(folderId, 'folder_id');
        await authorizeFolder(tx, caller, 'file.write', folderId);
      }
      const name = req.name === undefined ? file.name : validateName(req.name);
      // The empty name at the root or at a bucket's top would be the key "" (empty-name.ts).
      if (folderId !== file.folder_id && isEmptyKey(name, destination ?? null)) throw fileToTop();
      const visibility = req.visibility === undefined ? file.visibility : parseVisibility(req.visibility);
      if (name === file.name && folderId === file.folder_id && visibility === file.visibility) {
        return { record: answer ? await this.c.toFileRecord(tx, file) : null, seq: 0 };
      }
      const now = this.c.now();
      const updated: StoredFile = { ...file, name, name_key: nameKey(name), folder_id: folderId, visibility, updated_at: now };
      await tx.updateFile(file.id, { name, name_key: updated.name_key, folder_id: folderId, visibility, updated_at: now });
      const context = await this.c.folderContext(tx, folderId);
      let seq = 0;
      if (file.status === 'ready') {
        seq = await tx.appendEvent({ type: 'file.updated', file_id: file.id, folder_id: folderId, data: fileEventData(updated, context) }, now);
      }
      return { record: answer ? fileRecord(updated, context, this.c.cdnUrl) : null, seq };
    });
    if (seq) await this.c.publish(seq);
    return record ?? { file_id: req.file_id, updated: true };
  }

  async delete(caller: Caller, fileId: string): Promise<{ file_id: string; deleted: true }> {
    authorize(caller, 'file.write');
    const seq = await this.c.meta.transaction(async (tx) => {
      // Locked: a completion of this file commits before this reads it, or after it is gone.
      const file = await this.c.requireFileFor(tx, caller, fileId, 'update');
      return removeFiles(tx, [file], this.c.now());
    });
    this.c.emptyTrash();
    if (seq) await this.c.publish(seq);
    return { file_id: fileId, deleted: true };
  }
}
