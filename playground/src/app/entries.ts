/** What a folder view shows: folders, files, and files still uploading into it. */
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import type { UploadItem } from '../uploads/manager.js';

export type Entry =
  | { kind: 'folder'; key: string; name: string; folder: FolderRecord }
  | { kind: 'file'; key: string; name: string; file: FileRecord }
  | { kind: 'upload'; key: string; name: string; upload: UploadItem };

export const folderEntry = (folder: FolderRecord): Entry => ({ kind: 'folder', key: folder.folder_id, name: folder.name, folder });
export const fileEntry = (file: FileRecord): Entry => ({ kind: 'file', key: file.file_id, name: file.name, file });
export const uploadEntry = (upload: UploadItem): Entry => ({ kind: 'upload', key: 'upload:' + upload.id, name: upload.name, upload });

/** A DOM id for an entry's row or card (for aria-activedescendant). */
export const domId = (key: string): string => 'item-' + key.replace(/[^A-Za-z0-9_-]/g, '_');
