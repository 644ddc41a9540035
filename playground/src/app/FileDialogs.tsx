/** The file manager's dialogs: which one is open, and what each does when it closes. */
import type { JSX } from 'preact';
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import { itemName, type Item } from './bulk.js';
import { DeleteDialog } from './dialogs/DeleteDialog.js';
import { DetailsDialog, type FileAction } from './dialogs/DetailsDialog.js';
import { LinkDialog } from './dialogs/LinkDialog.js';
import { MoveDialog } from './dialogs/MoveDialog.js';
import { NewFolderDialog } from './dialogs/NewFolderDialog.js';
import { RenameDialog, type Renamable } from './dialogs/RenameDialog.js';
import { RevokeLinksDialog } from './dialogs/RevokeLinksDialog.js';
import { middleEllipsis, plural } from './format.js';
import { toastSuccess } from './Toasts.js';

export type DialogState =
  | { type: 'new-folder' }
  | { type: 'rename'; target: Renamable }
  | { type: 'delete'; targets: Item[] }
  | { type: 'move'; items: Item[] }
  | { type: 'link'; file: FileRecord }
  | { type: 'details'; file: FileRecord }
  | { type: 'revoke-links'; file: FileRecord };

export interface DialogHost {
  dialog: DialogState | null;
  setDialog: (d: DialogState | null) => void;
  /** The folder open (null: All files), and its record. */
  folderId: string | null;
  folder: FolderRecord | null;
  now: number;
  upsertFile: (f: FileRecord) => void;
  upsertFolder: (f: FolderRecord) => void;
  /** Files and folders left the view (deleted). */
  removed: (ids: string[]) => void;
  created: (f: FolderRecord) => void;
  moveInto: (target: FolderRecord | null, items: Item[]) => void;
  fileAction: (file: FileRecord, a: FileAction) => void;
  fail: (err: unknown, context?: string) => void;
}

export function FileDialogs({ host }: { host: DialogHost }): JSX.Element | null {
  const { dialog, setDialog } = host;
  const close = () => setDialog(null);
  switch (dialog?.type) {
    case 'new-folder':
      return <NewFolderDialog parent={host.folder} onClose={close} onCreated={(f) => { close(); host.created(f); }} />;
    case 'rename':
      return (
        <RenameDialog target={dialog.target} onClose={close} onRenamed={(r) => {
          close();
          if (r.kind === 'file') host.upsertFile(r.file);
          else host.upsertFolder(r.folder);
          toastSuccess(`Renamed to “${middleEllipsis(r.kind === 'file' ? r.file.name : r.folder.name, 40)}”`);
        }} />
      );
    case 'delete':
      return (
        <DeleteDialog targets={dialog.targets} onClose={close} onDeleted={(ids, failed) => {
          host.removed(ids);
          if (failed) return;
          close();
          const t = dialog.targets;
          const one = t.length === 1 ? t[0]! : null;
          toastSuccess(!one ? `Deleted ${plural(ids.length, 'item')}`
            : one.kind === 'file' ? `Deleted “${middleEllipsis(itemName(one), 40)}”`
              : `Deleted folder “${middleEllipsis(itemName(one), 40)}” and everything in it`);
        }} />
      );
    case 'move':
      return (
        <MoveDialog items={dialog.items} from={host.folderId} onClose={close}
          onMove={(target) => { close(); host.moveInto(target, dialog.items); }} />
      );
    case 'link':
      return <LinkDialog file={dialog.file} onClose={close} />;
    case 'revoke-links':
      return <RevokeLinksDialog file={dialog.file} onClose={close} onSignedLink={(file) => setDialog({ type: 'link', file })} onFailed={host.fail} />;
    case 'details':
      return <DetailsDialog file={dialog.file} now={host.now} onClose={close} onAction={(a) => host.fileAction(dialog.file, a)} />;
    default:
      return null;
  }
}

