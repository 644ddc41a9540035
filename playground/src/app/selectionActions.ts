/** Moves and visibility changes of many items, ending in one toast that says what happened. */
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import { itemName, moveItems, setVisibility, type BulkResult, type Item, type Updated } from './bulk.js';
import { errorMessage, middleEllipsis, plural } from './format.js';
import { toastError, toastSuccess } from './Toasts.js';

export interface ApplyDeps {
  upsertFile(file: FileRecord): void;
  upsertFolder(folder: FolderRecord): void;
  /** The session ended: stop here. */
  sessionGone(err: unknown): boolean;
  onSessionEnded(): void;
}

const what = (items: Item[]) => (items.length === 1 ? `“${middleEllipsis(itemName(items[0]!), 40)}”` : plural(items.length, 'item'));

function apply(r: BulkResult<Updated>, d: ApplyDeps): boolean {
  for (const u of r.done) {
    if (u.kind === 'file') d.upsertFile(u.file);
    else d.upsertFolder(u.folder);
  }
  const first = r.failed[0];
  if (!first) return true;
  if (d.sessionGone(first.error)) {
    d.onSessionEnded();
    return false;
  }
  toastError(`${plural(r.failed.length, 'item')} could not be changed`, {
    detail: `“${middleEllipsis(itemName(first.item), 40)}”: ${errorMessage(first.error)}`,
  });
  return false;
}

export async function moveWithToast(items: Item[], target: FolderRecord | null, d: ApplyDeps): Promise<void> {
  const r = await moveItems(items, target?.folder_id ?? null);
  const where = target ? `“${middleEllipsis(target.name, 40)}”` : 'All files';
  const moved = r.done.map((u) => u as Item);
  if (apply(r, d) || moved.length) {
    if (moved.length) toastSuccess(`Moved ${what(moved)} to ${where}`);
  }
}

export async function visibilityWithToast(items: Item[], visibility: 'Public' | 'Private', d: ApplyDeps): Promise<void> {
  const r = await setVisibility(items, visibility);
  apply(r, d);
  if (r.done.length) {
    toastSuccess(`${r.done.length === 1 ? what(r.done) : plural(r.done.length, 'item')} ${r.done.length === 1 ? 'is' : 'are'} now ${visibility}`, {
      detail: visibility === 'Private' ? 'Their delivery URLs now need a signature; share them with signed links.' : 'Anyone with a delivery URL can download them, unless a folder above is Private.',
    });
  }
}
