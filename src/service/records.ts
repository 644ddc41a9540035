/** Turns stored rows into the records of contract §3. */
import { effectiveVisibility, isoTime, type Visibility } from '../core/records.js';
import type { StoredFile, StoredFolder } from '../core/ports.js';
import type { FileRecord, FolderRecord } from '../core/api.js';
import { deliveryPath } from '../core/signing.js';

/** What a folder's position gives the items inside it. */
export interface FolderContext {
  /** "/a/b" for the folder itself; "" at the root. */
  path: string;
  /** Private if the folder or any folder above it is Private. */
  visibility: Visibility;
}

export const ROOT_CONTEXT: FolderContext = { path: '', visibility: 'Public' };

/** Whether a chain (nearest first) reaches the root; one cut short by the store's depth cap does not. */
export const chainIsComplete = (chain: StoredFolder[]): boolean => chain.length === 0 || chain[chain.length - 1]!.parent_id === null;

/** `chain` is the folder and its ancestors, nearest first. A chain cut short fails closed: Private. */
export function contextOfChain(chain: StoredFolder[]): FolderContext {
  if (chain.length === 0) return ROOT_CONTEXT;
  return {
    path: '/' + chain.map((f) => f.name).reverse().join('/'),
    visibility: chainIsComplete(chain) ? effectiveVisibility('Public', chain.map((f) => f.visibility)) : 'Private',
  };
}

export function folderRecord(folder: StoredFolder, parent: FolderContext): FolderRecord {
  return {
    folder_id: folder.id,
    name: folder.name,
    visibility: folder.visibility,
    effective_visibility: effectiveVisibility(folder.visibility, [parent.visibility]),
    parent_id: folder.parent_id,
    path: `${parent.path}/${folder.name}`,
    created_at: isoTime(folder.created_at),
    updated_at: isoTime(folder.updated_at),
  };
}

export const childContext = (folder: StoredFolder, parent: FolderContext): FolderContext => ({
  path: `${parent.path}/${folder.name}`,
  visibility: effectiveVisibility(folder.visibility, [parent.visibility]),
});

export function fileRecord(file: StoredFile, folder: FolderContext, cdnUrl: string): FileRecord {
  return {
    file_id: file.id,
    name: file.name,
    visibility: file.visibility,
    effective_visibility: effectiveVisibility(file.visibility, [folder.visibility]),
    size: file.size,
    file_type: file.file_type,
    content_type: file.content_type,
    folder_id: file.folder_id,
    status: file.status,
    sha256: file.sha256,
    created_at: isoTime(file.created_at),
    updated_at: isoTime(file.updated_at),
    delivery_url: file.status === 'ready' ? cdnUrl + deliveryPath(file.id) : null,
  };
}

/** What edges need to know of a file, carried by its events. */
export function fileEventData(file: StoredFile, folder: FolderContext): Record<string, unknown> {
  return {
    file_id: file.id, name: file.name, visibility: file.visibility, folder_id: file.folder_id,
    effective_visibility: effectiveVisibility(file.visibility, [folder.visibility]),
    size: file.size, content_type: file.content_type, sha256: file.sha256,
    completed_at: file.completed_at, updated_at: file.updated_at, links_revoked_at: file.links_revoked_at,
  };
}

export function folderEventData(folder: StoredFolder): Record<string, unknown> {
  return { folder_id: folder.id, name: folder.name, visibility: folder.visibility, parent_id: folder.parent_id, updated_at: folder.updated_at };
}
