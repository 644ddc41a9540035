/** The actions of a file's or a folder's menu (its ⋮ button, a right click, Shift+F10). */
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import type { Entry } from './entries.js';
import { MoveIcon, CopyIcon, DownloadIcon, EyeIcon, FolderIcon, GlobeIcon, LinkIcon, LinkOffIcon, LockIcon, PencilIcon, TrashIcon, UploadIcon } from './icons.js';
import type { MenuItem } from './Menu.js';

export interface EntryActions {
  open: (entry: Entry) => void;
  uploadInto: (folder: FolderRecord) => void;
  command: (cmd: 'delete' | 'rename' | 'move', entry: Entry) => void;
  toggleVisibility: (entry: Entry) => void;
  download: (file: FileRecord) => void;
  copyUrl: (file: FileRecord) => void;
  signedLink: (file: FileRecord) => void;
  revokeLinks: (file: FileRecord) => void;
}

/** `count`: how many items the move, visibility and delete act on (the selection the entry is in). */
export function entryMenuItems(entry: Entry, a: EntryActions, count = 1): MenuItem[] {
  if (entry.kind === 'upload') return [];
  const many = count > 1 ? ` ${count} items` : '';
  const v = entry.kind === 'file' ? entry.file.visibility : entry.folder.visibility;
  const common: MenuItem[] = [
    { id: 'rename', label: 'Rename', icon: <PencilIcon />, run: () => a.command('rename', entry), hint: 'F2', separatorBefore: true },
    { id: 'move', label: `Move${many}…`, icon: <MoveIcon />, run: () => a.command('move', entry) },
    { id: 'visibility', label: v === 'Private' ? 'Make Public' : 'Make Private', icon: v === 'Private' ? <GlobeIcon /> : <LockIcon />, run: () => a.toggleVisibility(entry) },
    { id: 'delete', label: `Delete${many}`, icon: <TrashIcon />, run: () => a.command('delete', entry), danger: true, hint: 'Del', separatorBefore: true },
  ];
  if (entry.kind === 'folder') {
    return [
      { id: 'open', label: 'Open', icon: <FolderIcon />, run: () => a.open(entry), hint: 'Enter' },
      { id: 'upload-here', label: 'Upload here…', icon: <UploadIcon />, run: () => a.uploadInto(entry.folder) },
      ...common,
    ];
  }
  const f = entry.file;
  return [
    { id: 'details', label: 'Details', icon: <EyeIcon />, run: () => a.open(entry), hint: 'Enter' },
    { id: 'download', label: 'Download', icon: <DownloadIcon />, run: () => a.download(f) },
    { id: 'copy-url', label: 'Copy delivery URL', icon: <CopyIcon />, run: () => a.copyUrl(f) },
    ...(f.effective_visibility === 'Private' ? [{ id: 'signed-link', label: 'Create signed link…', icon: <LinkIcon />, run: () => a.signedLink(f) }] : []),
    { id: 'revoke-links', label: 'Revoke links…', icon: <LinkOffIcon />, run: () => a.revokeLinks(f) },
    ...common,
  ];
}
