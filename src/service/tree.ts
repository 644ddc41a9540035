/** Folders (contract §5): create, get, update (rename, move, visibility) and delete. */
import { errors, isCofferError, type CofferError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { nameKey, validateName } from '../core/names.js';
import { parseVisibility, type Visibility } from '../core/records.js';
import { MAX_FOLDER_DEPTH } from '../core/upload.js';
import type { MetadataTx, StoredFolder } from '../core/ports.js';
import type { CreateFolderRequest, CreateFolderResponse, DeleteFolderRequest, DeleteFolderResponse, FolderRecord, UpdateFolderRequest, UpdateFolderResponse } from '../core/api.js';
import { folderEventData } from './records.js';
import type { ServiceContext } from './context.js';
import type { Caller } from '../core/access.js';
import { authorize, authorizeFolder, holds, requireNotOwnTop } from './policy.js';
import { removeFiles } from './trash.js';
import { refuseFolderToTop } from './empty-name.js';

/**
 * 409 folder_exists, with the existing folder's id only when the caller reaches it: a confined
 * key renaming its own folder meets the names of the folders beside it, outside its reach.
 */
async function conflict(tx: MetadataTx, caller: Caller, name: string, existing: StoredFolder): Promise<CofferError> {
  const seen = await authorizeFolder(tx, caller, 'folder.write', existing.id).then(() => true, (err: unknown) => {
    if (isCofferError(err) && err.status === 404) return false;
    throw err;
  });
  return errors.folderExists(name, seen ? existing.id : null);
}

/**
 * Makes a folder, however it is asked for (here, or by path for S3): its record and its
 * folder.created event, in the caller's transaction, which holds the folder tree's lock and
 * checked the depth and the name. Returns the folder and the event's sequence.
 */
export async function addFolder(c: ServiceContext, tx: MetadataTx, at: { name: string; parentId: string | null; visibility: Visibility; s3Implicit?: boolean }): Promise<{ folder: StoredFolder; seq: number }> {
  const now = c.now();
  const folder: StoredFolder = {
    id: newId(), name: at.name, name_key: nameKey(at.name), visibility: at.visibility, parent_id: at.parentId, created_at: now, updated_at: now,
    ...(at.s3Implicit ? { s3_implicit: 1 } : {}),
  };
  await tx.insertFolder(folder);
  const seq = await tx.appendEvent({ type: 'folder.created', folder_id: folder.id, data: folderEventData(folder) }, now);
  return { folder, seq };
}

export class Tree {
  constructor(private readonly c: ServiceContext) {}

  async create(caller: Caller, req: CreateFolderRequest): Promise<CreateFolderResponse> {
    authorize(caller, 'folder.write');
    const parentId = req.parent_id ?? null;
    const { record, seq } = await this.c.meta.transaction(async (tx) => {
      await tx.lockFolderTree();
      if (parentId !== null) {
        await this.c.requireFolderFor(tx, caller, parentId, 'parent_id');
        this.c.checkDepth(await tx.folderChain(parentId), 0);
      } else {
        await authorizeFolder(tx, caller, 'folder.write', null, 'parent_id');
      }
      const name = validateName(req.name);
      const existing = await tx.findFolderByName(parentId, name);
      if (existing) throw await conflict(tx, caller, name, existing);
      const { folder, seq } = await addFolder(this.c, tx, { name, parentId, visibility: parseVisibility(req.visibility) });
      return { record: holds(caller, 'read') ? await this.c.toFolderRecord(tx, folder) : { folder_id: folder.id, created: true as const }, seq };
    });
    await this.c.publish(seq);
    return record;
  }

  async get(caller: Caller, folderId: string): Promise<FolderRecord> {
    authorize(caller, 'folder.read');
    return this.c.toFolderRecord(this.c.meta.read, await this.c.requireFolderFor(this.c.meta.read, caller, folderId));
  }

  async update(caller: Caller, req: UpdateFolderRequest): Promise<UpdateFolderResponse> {
    authorize(caller, 'folder.write');
    const { record, seq } = await this.c.meta.transaction(async (tx) => {
      await tx.lockFolderTree();
      const folder = await this.c.requireFolderFor(tx, caller, req.folder_id);
      if (req.name !== undefined || req.parent_id !== undefined) requireNotOwnTop(caller, folder.id);
      let parentId = folder.parent_id;
      if (req.parent_id !== undefined) {
        parentId = req.parent_id;
        if (parentId === null) await authorizeFolder(tx, caller, 'folder.write', null, 'parent_id');
        else {
          await this.c.requireFolderFor(tx, caller, parentId, 'parent_id');
          const chain = await tx.folderChain(parentId);
          if (chain.some((f) => f.id === folder.id)) throw errors.cycle();
          // Every folder of the moved subtree must stay within the limit.
          if (parentId !== folder.parent_id) this.c.checkDepth(chain, await tx.folderHeight(folder.id, MAX_FOLDER_DEPTH));
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
        if (existing && existing.id !== folder.id) throw await conflict(tx, caller, name, existing);
      }
      if (nameError) throw nameError;
      // Made a bucket, a file of the empty name in it would be the key "" (empty-name.ts).
      if (parentId === null && folder.parent_id !== null) await refuseFolderToTop(tx, folder);
      const visibility = req.visibility === undefined ? folder.visibility : parseVisibility(req.visibility);
      const changed = name !== folder.name || parentId !== folder.parent_id || visibility !== folder.visibility;
      if (!changed) return { record: await this.answer(tx, caller, folder), seq: 0 };
      const now = this.c.now();
      const updated: StoredFolder = { ...folder, name, name_key: nameKey(name), parent_id: parentId, visibility, updated_at: now };
      await tx.updateFolder(folder.id, { name, name_key: updated.name_key, parent_id: parentId, visibility, updated_at: now });
      const seq = await tx.appendEvent({ type: 'folder.updated', folder_id: folder.id, data: folderEventData(updated) }, now);
      return { record: await this.answer(tx, caller, updated), seq };
    });
    if (seq) await this.c.publish(seq);
    return record;
  }

  /** An update's answer: the record needs "read" (a no-op update would otherwise be a read). */
  private async answer(tx: MetadataTx, caller: Caller, folder: StoredFolder): Promise<UpdateFolderResponse> {
    return holds(caller, 'read') ? this.c.toFolderRecord(tx, folder) : { folder_id: folder.id, updated: true };
  }

  async delete(caller: Caller, req: DeleteFolderRequest): Promise<DeleteFolderResponse> {
    authorize(caller, 'folder.write');
    const { result, seq } = await this.c.meta.transaction(async (tx) => {
      await tx.lockFolderTree();
      const folder = await this.c.requireFolderFor(tx, caller, req.folder_id);
      requireNotOwnTop(caller, folder.id);
      if (!req.recursive) {
        const children = await tx.countChildren(folder.id);
        if (children.files > 0 || children.folders > 0) throw errors.folderNotEmpty(folder.id, children.files, children.folders);
      }
      const folderIds = [folder.id, ...(await tx.descendantFolderIds(folder.id))];
      // Folders, then their files, as every transaction locks them: no file goes in or changes meanwhile.
      await tx.lockFolders(folderIds);
      const files = await tx.filesInFolders(folderIds, 'update');
      const now = this.c.now();
      let seq = await removeFiles(tx, files, now);
      await tx.deleteFolders(folderIds);
      for (const id of [...folderIds].reverse()) seq = await tx.appendEvent({ type: 'folder.deleted', folder_id: id, data: { folder_id: id } }, now);
      return { result: { folder_id: folder.id, deleted_files: files.length, deleted_folders: folderIds.length }, seq };
    });
    this.c.emptyTrash();
    await this.c.publish(seq);
    return result;
  }
}
