/**
 * Actions on many files and folders at once: move, visibility and delete, a few requests
 * at a time. Each item succeeds or fails on its own; the caller hears of both.
 */
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import { client } from '../api.js';

/** A file or a folder: what the bulk actions take. */
export type Item = { kind: 'file'; file: FileRecord } | { kind: 'folder'; folder: FolderRecord };

export const itemId = (i: Item): string => (i.kind === 'file' ? i.file.file_id : i.folder.folder_id);
export const itemName = (i: Item): string => (i.kind === 'file' ? i.file.name : i.folder.name);

export interface BulkResult<T> {
  done: T[];
  failed: { item: Item; error: unknown }[];
}

const PARALLEL = 4;

async function each<T>(items: Item[], run: (item: Item) => Promise<T>): Promise<BulkResult<T>> {
  const result: BulkResult<T> = { done: [], failed: [] };
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        result.done.push(await run(item));
      } catch (error) {
        result.failed.push({ item, error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
  return result;
}

/** The updated records, to put in the listing (the service answers them to a reader). */
export type Updated = { kind: 'file'; file: FileRecord } | { kind: 'folder'; folder: FolderRecord };

const asUpdated = (item: Item, answer: unknown): Updated => {
  const record = answer as FileRecord & FolderRecord & { updated?: true };
  if (record.updated) return item; // a caller without read: keep what we had
  return item.kind === 'file' ? { kind: 'file', file: record } : { kind: 'folder', folder: record };
};

export function moveItems(items: Item[], target: string | null): Promise<BulkResult<Updated>> {
  return each(items, async (item) => asUpdated(item, item.kind === 'file'
    ? await client.updateFile({ file_id: item.file.file_id, folder_id: target })
    : await client.updateFolder({ folder_id: item.folder.folder_id, parent_id: target })));
}

export function setVisibility(items: Item[], visibility: 'Public' | 'Private'): Promise<BulkResult<Updated>> {
  return each(items, async (item) => asUpdated(item, item.kind === 'file'
    ? await client.updateFile({ file_id: item.file.file_id, visibility })
    : await client.updateFolder({ folder_id: item.folder.folder_id, visibility })));
}

/** Deletes files, and folders (with everything inside them when `recursive`); answers the ids deleted. */
export function deleteItems(items: Item[], recursive: boolean): Promise<BulkResult<string>> {
  return each(items, async (item) => {
    if (item.kind === 'file') await client.deleteFile(item.file.file_id);
    else await client.deleteFolder({ folder_id: item.folder.folder_id, recursive });
    return itemId(item);
  });
}

/** "3 files and 2 folders". */
export function countWords(items: Item[]): string {
  const files = items.filter((i) => i.kind === 'file').length;
  const folders = items.length - files;
  const parts: string[] = [];
  if (files) parts.push(`${files} ${files === 1 ? 'file' : 'files'}`);
  if (folders) parts.push(`${folders} ${folders === 1 ? 'folder' : 'folders'}`);
  return parts.join(' and ');
}
