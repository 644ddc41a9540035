/**
 * Walks a folder's tree through the listing, breadth first, a page at a time, within a bound
 * on the entries read: the Playground's recursive counts and its all-folders search both use
 * it, so neither needs more of the service than `/collections/list`.
 */
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import { client } from '../api.js';

const PAGE = 1000;

export interface TreePage {
  /** The folders above what this page holds, outermost first (empty at All files). */
  path: FolderRecord[];
  folders: FolderRecord[];
  files: FileRecord[];
}

export interface WalkResult {
  /** The bound was reached before the whole tree was read. */
  truncated: boolean;
}

/**
 * Calls `visit` with each page under `root` (null: All files). Stops at `maxEntries` entries
 * read, or when `visit` returns false, or when `signal` aborts (the promise then rejects).
 */
export async function walkTree(
  root: FolderRecord | null,
  visit: (page: TreePage) => boolean | void,
  opts: { signal?: AbortSignal; maxEntries: number },
): Promise<WalkResult> {
  const queue: FolderRecord[][] = [root ? [root] : []];
  let read = 0;
  while (queue.length > 0) {
    const path = queue.shift()!;
    const folderId = path.length ? path[path.length - 1]!.folder_id : null;
    let cursor: string | null = null;
    do {
      const page = await client.list({ folder_id: folderId, limit: PAGE, cursor, sort: 'name', order: 'asc' }, { signal: opts.signal });
      read += page.folders.length + page.files.length;
      for (const f of page.folders) queue.push([...path, f]);
      if (visit({ path, folders: page.folders, files: page.files }) === false) return { truncated: true };
      cursor = page.next_cursor;
      if (read >= opts.maxEntries && (cursor || queue.length)) return { truncated: true };
    } while (cursor);
  }
  return { truncated: false };
}

/** Everything inside some folders, counted at every level. */
export interface TreeCount { files: number; folders: number; bytes: number; more: boolean }

/** The most entries a count reads before it says "more than". */
export const COUNT_LIMIT = 10_000;

export async function countTree(roots: FolderRecord[], signal?: AbortSignal): Promise<TreeCount> {
  const total: TreeCount = { files: 0, folders: 0, bytes: 0, more: false };
  for (const root of roots) {
    const left = COUNT_LIMIT - total.files - total.folders;
    const r = await walkTree(root, (p) => {
      total.folders += p.folders.length;
      total.files += p.files.length;
      for (const f of p.files) total.bytes += f.size;
    }, { signal, maxEntries: Math.max(1, left) });
    if (r.truncated) {
      total.more = true;
      break;
    }
  }
  return total;
}
