/** The file manager's actions on one file or folder that end in a toast: copy, download, visibility. */
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { copyText } from './clipboard.js';
import type { Entry } from './entries.js';
import { middleEllipsis } from './format.js';
import { toastError, toastInfo, toastSuccess } from './Toasts.js';

export interface FileActionDeps {
  fail(err: unknown, context?: string): void;
  upsertFile(file: FileRecord): void;
  upsertFolder(folder: FolderRecord): void;
  /** Opens the signed-link dialog for a file. */
  signedLink(file: FileRecord): void;
}

export function fileActions(d: FileActionDeps) {
  const copyUrl = async (file: FileRecord) => {
    if (!file.delivery_url) {
      toastError('This file has no delivery URL yet: its upload has not finished.');
      return;
    }
    try {
      await copyText(file.delivery_url);
      if (file.effective_visibility === 'Private') {
        toastInfo('Delivery URL copied, but this file is Private', {
          detail: 'Its delivery URL answers only when signed. Create a signed link to share it.',
          action: { label: 'Create signed link', run: () => d.signedLink(file) },
        });
      } else {
        toastSuccess('Delivery URL copied', { detail: 'Anyone with it can download the file.' });
      }
    } catch (err) {
      d.fail(err);
    }
  };

  const download = async (file: FileRecord) => {
    try {
      const { download_url } = await client.downloadUrl({ file_id: file.file_id });
      toastInfo(`Downloading “${middleEllipsis(file.name, 40)}”`);
      location.assign(download_url);
    } catch (err) {
      d.fail(err, 'Download failed');
    }
  };

  const toggleVisibility = async (entry: Entry) => {
    try {
      if (entry.kind === 'file') {
        const next = entry.file.visibility === 'Private' ? 'Public' : 'Private';
        const file = await client.updateFile({ file_id: entry.file.file_id, visibility: next });
        d.upsertFile(file);
        toastSuccess(`“${middleEllipsis(file.name, 40)}” is now ${next}`, {
          detail: file.effective_visibility === 'Private'
            ? next === 'Public' ? 'It is still reachable only through signed links: a folder above it is Private.' : 'Its delivery URL now needs a signature; share it with a signed link.'
            : 'Anyone with its delivery URL can download it.',
        });
      } else if (entry.kind === 'folder') {
        const next = entry.folder.visibility === 'Private' ? 'Public' : 'Private';
        const f = await client.updateFolder({ folder_id: entry.folder.folder_id, visibility: next });
        d.upsertFolder(f);
        toastSuccess(`Folder “${middleEllipsis(f.name, 40)}” is now ${next}`, {
          detail: f.effective_visibility === 'Private' ? 'Files inside it need a signed link.' : 'Files inside it are Public unless they are Private themselves.',
        });
      }
    } catch (err) {
      d.fail(err, 'Could not change visibility');
    }
  };

  return { copyUrl, download, toggleVisibility };
}
