/** What a folder view shows: folders, files, and files still uploading into it. */
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import type { UploadItem } from '../uploads/manager.js';

/** `where`: the folders above a hit of a search across all folders, outermost first. */
export type Entry =
  | { kind: 'folder'; key: string; name: string; folder: FolderRecord; where?: FolderRecord[] }
  | { kind: 'file'; key: string; name: string; file: FileRecord; where?: FolderRecord[] }
  | { kind: 'upload'; key: string; name: string; upload: UploadItem };

export const folderEntry = (folder: FolderRecord, where?: FolderRecord[]): Entry => ({ kind: 'folder', key: folder.folder_id, name: folder.name, folder, ...(where ? { where } : {}) });
export const fileEntry = (file: FileRecord, where?: FolderRecord[]): Entry => ({ kind: 'file', key: file.file_id, name: file.name, file, ...(where ? { where } : {}) });

/** "All files / Photos / 2026": where a search hit is. */
export const pathText = (where: FolderRecord[]): string => ['All files', ...where.map((f) => f.name)].join(' / ');
export const uploadEntry = (upload: UploadItem): Entry => ({ kind: 'upload', key: 'upload:' + upload.id, name: upload.name, upload });

/** A DOM id for an entry's row or card (for aria-activedescendant). */
export const domId = (key: string): string => 'item-' + key.replace(/[^A-Za-z0-9_-]/g, '_');
