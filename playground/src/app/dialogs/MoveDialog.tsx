/**
 * Where to move files and folders: the folder picker, opened at the folder they are in,
 * saying what the move will do. A folder cannot go into itself; the service refuses a move
 * below itself, and says so.
 */
import type { JSX } from 'preact';
import type { FolderRecord } from '../../../../src/sdk/index.js';
import { countWords, itemName, type Item } from '../bulk.js';
import { canDropInto } from '../dragItems.js';
import { middleEllipsis } from '../format.js';
import { FolderPickerDialog } from './FolderPickerDialog.js';

export function MoveDialog(props: {
  items: Item[];
  /** Where the picker opens: the folder open (null: All files). */
  from: string | null;
  onMove: (target: FolderRecord | null) => void;
  onClose: () => void;
}): JSX.Element {
  const what = props.items.length === 1 ? `“${middleEllipsis(itemName(props.items[0]!), 40)}”` : countWords(props.items);
  const moving = new Set(props.items.map((i) => (i.kind === 'folder' ? i.folder.folder_id : '')));
  const hint = (chosen: FolderRecord | null) => {
    const id = chosen?.folder_id ?? null;
    if (id !== null && moving.has(id)) return 'A folder cannot be moved into itself.';
    if (!canDropInto(props.items, id)) return `${what} ${props.items.length === 1 ? 'is' : 'are'} already here.`;
    const where = chosen ? `“${middleEllipsis(chosen.name, 40)}”` : 'All files';
    const priv = chosen?.effective_visibility === 'Private' ? ' Files there need signed links: the folder is Private.' : '';
    return `${what} will move to ${where}.${priv}`;
  };
  return (
    <FolderPickerDialog
      start={props.from} title={`Move ${what}`} hint={hint}
      chooseLabel={(chosen) => `Move to “${middleEllipsis(chosen?.name ?? 'All files', 24)}”`}
      onClose={props.onClose}
      onChoose={(path) => {
        const target = path[path.length - 1] ?? null;
        const id = target?.folder_id ?? null;
        if (!canDropInto(props.items, id)) return;
        props.onMove(target);
      }}
    />
  );
}
