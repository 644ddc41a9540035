/**
 * Dragging files and folders within the page to move them: onto a folder's row or card, or a
 * breadcrumb. The browser lets a drag's data be read only on drop, so what is dragged is also
 * kept here, for the targets to decide while the drag passes over them.
 */
import type { Item } from './bulk.js';

const TYPE = 'application/x-coffer-items';
let dragged: Item[] | null = null;

export function startDrag(e: DragEvent, items: Item[]): void {
  if (!e.dataTransfer || items.length === 0) return;
  dragged = items;
  e.dataTransfer.effectAllowed = 'move';
  e.dataTransfer.setData(TYPE, String(items.length));
}

export function endDrag(): void {
  dragged = null;
}

/** The items a drag carries, when it is a move of this page's items. */
export function draggedItems(e: DragEvent): Item[] | null {
  return e.dataTransfer && Array.from(e.dataTransfer.types).includes(TYPE) ? dragged : null;
}

/** Whether the items may go into a folder (null: All files): not into itself, nor where they are. */
export function canDropInto(items: Item[], folderId: string | null): boolean {
  return items.some((i) => (i.kind === 'file' ? i.file.folder_id !== folderId : i.folder.parent_id !== folderId))
    && !items.some((i) => i.kind === 'folder' && i.folder.folder_id === folderId);
}

/**
 * Handlers that make an element a target for moves into a folder. `hover` marks it while a
 * drag that may drop there is over it.
 */
export function moveDropTarget(folderId: string | null, hover: (on: boolean) => void, drop: (items: Item[]) => void): Record<string, (e: DragEvent) => void> {
  return {
    onDragOver: (e) => {
      const items = draggedItems(e);
      if (!items || !canDropInto(items, folderId)) return;
      e.preventDefault();
      e.stopPropagation();
      e.dataTransfer!.dropEffect = 'move';
      hover(true);
    },
    onDragLeave: (e) => {
      if (!(e.currentTarget as HTMLElement).contains(e.relatedTarget as Node | null)) hover(false);
    },
    onDrop: (e) => {
      const items = draggedItems(e);
      hover(false);
      if (!items || !canDropInto(items, folderId)) return;
      e.preventDefault();
      e.stopPropagation();
      endDrag();
      drop(items);
    },
  };
}
