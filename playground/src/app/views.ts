/** What the list and the grid share: their props and keyboard movement. */
import type { FolderRecord } from '../../../src/sdk/index.js';
import type { Item } from './bulk.js';
import { endDrag, moveDropTarget, startDrag } from './dragItems.js';
import type { Entry } from './entries.js';
import type { MenuAnchor } from './Menu.js';
import type { Sort, SortField } from './state/prefs.js';

export interface ViewProps {
  entries: Entry[];
  activeKey: string | null;
  setActive: (key: string | null) => void;
  selected: ReadonlySet<string>;
  /** A click with modifiers, or a check box (toggle). */
  pick: (key: string, how: { toggle?: boolean; range?: boolean }) => void;
  selectAll: () => void;
  clearSelection: () => void;
  /** What an action on an entry applies to: the whole selection when the entry is in it. */
  itemsFor: (entry: Entry) => Item[];
  /** Moves items into a folder. */
  moveInto: (folder: FolderRecord, items: Item[]) => void;
  open: (entry: Entry) => void;
  showMenu: (entry: Entry, anchor: MenuAnchor) => void;
  command: (cmd: 'delete' | 'rename' | 'move', entry: Entry) => void;
  sort: Sort;
  onSort: (field: SortField) => void;
  hasMore: boolean;
  loadingMore: boolean;
  moreError: string | null;
  loadMore: () => void;
  now: number;
  /** The grid's accessible name, e.g. "Contents of Photos". */
  label: string;
  /** A new folder or search: the view starts at the top again. */
  resetKey: string;
  dropKey: string | null;
  setDropKey: (key: string | null) => void;
  dropInto: (folder: FolderRecord, files: File[]) => void;
  cancelUpload: (id: string) => void;
  goUp: () => void;
  folderHref: (folderId: string) => string;
}

export const hasFiles = (e: DragEvent): boolean => !!e.dataTransfer && Array.from(e.dataTransfer.types).includes('Files');

/**
 * Where a key moves the selection in a grid of `cols` columns (1 for the list), or null
 * when the key is not a movement.
 */
export function moveTarget(key: string, index: number, count: number, cols: number, pageRows: number): number | null {
  if (count === 0) return null;
  if (index < 0) return ['ArrowDown', 'ArrowRight', 'Home', 'PageDown', 'ArrowUp', 'ArrowLeft'].includes(key) ? 0 : key === 'End' ? count - 1 : null;
  const last = count - 1;
  const row = Math.floor(index / cols);
  const lastRow = Math.floor(last / cols);
  switch (key) {
    case 'ArrowDown': return row < lastRow ? Math.min(last, index + cols) : index;
    case 'ArrowUp': return row > 0 ? index - cols : index;
    case 'ArrowRight': return cols > 1 ? Math.min(last, index + 1) : null;
    case 'ArrowLeft': return cols > 1 ? Math.max(0, index - 1) : null;
    case 'Home': return 0;
    case 'End': return last;
    case 'PageDown': return Math.min(last, index + cols * Math.max(1, pageRows - 1));
    case 'PageUp': return Math.max(0, index - cols * Math.max(1, pageRows - 1));
    default: return null;
  }
}

/** The active entry follows a movement key; with Shift the selection stretches to it. */
export function moveTo(e: KeyboardEvent, to: number, props: ViewProps): void {
  const entry = props.entries[to]!;
  if (e.shiftKey && entry.kind !== 'upload') props.pick(entry.key, { range: true });
  else props.setActive(entry.key);
}

/** Keys every view handles the same way; true when handled. */
export function commandKey(e: KeyboardEvent, entry: Entry | undefined, props: ViewProps, anchor: () => MenuAnchor): boolean {
  if (e.altKey && e.key === 'ArrowUp') {
    props.goUp();
    return true;
  }
  if ((e.ctrlKey || e.metaKey) && !e.altKey && (e.key === 'a' || e.key === 'A')) {
    props.selectAll();
    return true;
  }
  if (!entry) return false;
  if (e.key === 'Enter') {
    props.open(entry);
    return true;
  }
  if (e.key === 'Delete' || (e.key === 'Backspace' && e.metaKey)) {
    if (entry.kind === 'upload') props.cancelUpload(entry.upload.id);
    else props.command('delete', entry);
    return true;
  }
  if (e.key === 'F2') {
    if (entry.kind !== 'upload') props.command('rename', entry);
    return true;
  }
  if (e.key === 'ContextMenu' || (e.shiftKey && e.key === 'F10')) {
    props.showMenu(entry, anchor());
    return true;
  }
  return false;
}

/**
 * A click on a row or card: Ctrl/⌘ toggles it in the selection, Shift selects the range from
 * the last one clicked; a plain click selects it alone.
 */
export function clickPick(e: MouseEvent, entry: Entry, props: ViewProps): void {
  const toggle = e.ctrlKey || e.metaKey;
  if (entry.kind === 'upload' || (!toggle && !e.shiftKey)) props.setActive(entry.key);
  else props.pick(entry.key, { toggle, range: e.shiftKey });
}

/** Rows and cards can be dragged onto a folder or a breadcrumb to move them (with the selection). */
export function dragSource(entry: Entry, props: ViewProps): Record<string, unknown> {
  if (entry.kind === 'upload') return {};
  return {
    draggable: true,
    onDragStart: (e: DragEvent) => startDrag(e, props.itemsFor(entry)),
    onDragEnd: () => endDrag(),
  };
}

/**
 * A folder's row or card as a drop target: dropped files upload into it, dragged files and
 * folders move into it.
 */
export function folderDropTarget(entry: Entry, props: ViewProps): Record<string, (e: DragEvent) => void> {
  if (entry.kind !== 'folder') return {};
  const hover = (on: boolean) => { if (on !== (props.dropKey === entry.key)) props.setDropKey(on ? entry.key : null); };
  const move = moveDropTarget(entry.folder.folder_id, hover, (items) => props.moveInto(entry.folder, items));
  return {
    onDragOver: (e) => {
      if (!hasFiles(e)) return move.onDragOver!(e);
      e.preventDefault();
      e.stopPropagation();
      e.dataTransfer!.dropEffect = 'copy';
      hover(true);
    },
    onDragLeave: move.onDragLeave!,
    onDrop: (e) => {
      if (!hasFiles(e)) return move.onDrop!(e);
      e.preventDefault();
      e.stopPropagation();
      props.setDropKey(null);
      props.dropInto(entry.folder, Array.from(e.dataTransfer!.files));
    },
  };
}
