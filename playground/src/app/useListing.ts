/**
 * One folder's contents as the user sees them: the first page, then more pages as the
 * view scrolls (cursor paging), or search results within the folder. Local changes
 * (a new folder, an uploaded file, a rename, a delete) apply at once, without a reload.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { FileRecord, FolderRecord, ListRequest } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { fileEntry, folderEntry } from './entries.js';
import { compareEntries } from './order.js';
import type { Sort } from './state/prefs.js';

export const PAGE_SIZE = 200;

export interface Listing {
  status: 'loading' | 'ready' | 'error';
  error: unknown;
  folder: FolderRecord | null;
  breadcrumbs: FolderRecord[];
  folders: FolderRecord[];
  files: FileRecord[];
  cursor: string | null;
  loadingMore: boolean;
  moreError: unknown;
  /** Which folder, search and sort these results belong to. */
  key: string;
}

export interface ListingApi {
  listing: Listing;
  loadMore(): void;
  refresh(): void;
  upsertFile(file: FileRecord): void;
  upsertFolder(folder: FolderRecord): void;
  remove(id: string): void;
}

const keyOf = (folderId: string | null, q: string, sort: Sort) => `${folderId ?? ''}\n${q}\n${sort.field}\n${sort.order}`;

const EMPTY: Omit<Listing, 'key'> = {
  status: 'loading', error: null, folder: null, breadcrumbs: [], folders: [], files: [], cursor: null, loadingMore: false, moreError: null,
};

/** Puts a record where the sort puts it (after a rename or an upload, the order holds). */
function placed<T>(list: T[], record: T, cmp: (a: T, b: T) => number): T[] {
  const out = list.slice();
  const at = out.findIndex((x) => cmp(record, x) < 0);
  out.splice(at < 0 ? out.length : at, 0, record);
  return out;
}

const matches = (name: string, q: string) => !q || name.normalize('NFC').toLowerCase().includes(q.trim().normalize('NFC').toLowerCase());

export function useListing(folderId: string | null, q: string, sort: Sort): ListingApi {
  const key = keyOf(folderId, q, sort);
  const [listing, setListing] = useState<Listing>({ ...EMPTY, key });
  const generation = useRef(0);
  const controller = useRef<AbortController | null>(null);
  const [reloads, setReloads] = useState(0);
  const listSort = sort.field as NonNullable<ListRequest['sort']>;

  useEffect(() => {
    const gen = ++generation.current;
    controller.current?.abort();
    const ac = new AbortController();
    controller.current = ac;
    setListing((old) => (old.key === key && reloads > 0 ? { ...old, status: old.status === 'error' ? 'loading' : old.status } : { ...EMPTY, key }));
    const query = q.trim();
    const load = query
      ? Promise.all([
        client.list({ folder_id: folderId, limit: 1 }, { signal: ac.signal }),
        client.search({ folder_id: folderId, query, limit: PAGE_SIZE }, { signal: ac.signal }),
      ]).then(([where, found]) => ({ ...where, folders: found.folders, files: found.files, next_cursor: found.next_cursor }))
      : client.list({ folder_id: folderId, limit: PAGE_SIZE, sort: listSort, order: sort.order }, { signal: ac.signal });
    load.then(
      (page) => {
        if (gen !== generation.current) return;
        setListing({
          ...EMPTY, key, status: 'ready', folder: page.folder, breadcrumbs: page.breadcrumbs,
          folders: page.folders, files: page.files, cursor: page.next_cursor,
        });
      },
      (error: unknown) => {
        if (gen !== generation.current || ac.signal.aborted) return;
        setListing({ ...EMPTY, key, status: 'error', error });
      },
    );
    return () => ac.abort();
  }, [key, reloads]);

  const latest = useRef(listing);
  latest.current = listing;

  const loadMore = useCallback(() => {
    const old = latest.current;
    if (old.key !== key || old.status !== 'ready' || !old.cursor || old.loadingMore) return;
    const gen = generation.current;
    const cursor = old.cursor;
    const signal = controller.current?.signal;
    const query = q.trim();
    latest.current = { ...old, loadingMore: true, moreError: null };
    setListing((cur) => (cur.key === key ? { ...cur, loadingMore: true, moreError: null } : cur));
    const next = query
      ? client.search({ folder_id: folderId, query, limit: PAGE_SIZE, cursor }, { signal })
      : client.list({ folder_id: folderId, limit: PAGE_SIZE, sort: listSort, order: sort.order, cursor }, { signal });
    next.then(
      (page) => {
        if (gen !== generation.current) return;
        setListing((cur) => {
          if (cur.key !== key) return cur;
          const seen = new Set<string>();
          for (const f of cur.folders) seen.add(f.folder_id);
          for (const f of cur.files) seen.add(f.file_id);
          return {
            ...cur, loadingMore: false, moreError: null, cursor: page.next_cursor,
            folders: cur.folders.concat(page.folders.filter((f) => !seen.has(f.folder_id))),
            files: cur.files.concat(page.files.filter((f) => !seen.has(f.file_id))),
          };
        });
      },
      (error: unknown) => {
        if (gen !== generation.current || signal?.aborted) return;
        setListing((cur) => (cur.key === key ? { ...cur, loadingMore: false, moreError: error } : cur));
      },
    );
  }, [key]);

  const refresh = useCallback(() => setReloads((n) => n + 1), []);

  const byFile = (a: FileRecord, b: FileRecord) => compareEntries(sort)(fileEntry(a), fileEntry(b));
  const byFolder = (a: FolderRecord, b: FolderRecord) => compareEntries(sort)(folderEntry(a), folderEntry(b));

  const upsertFile = useCallback((file: FileRecord) => {
    setListing((cur) => {
      const i = cur.files.findIndex((f) => f.file_id === file.file_id);
      if (i >= 0) {
        const files = cur.files.slice();
        files.splice(i, 1);
        return { ...cur, files: file.folder_id !== folderId ? files : placed(files, file, byFile) };
      }
      if (cur.status !== 'ready' || file.folder_id !== folderId || file.status !== 'ready' || !matches(file.name, q)) return cur;
      return { ...cur, files: placed(cur.files, file, byFile) };
    });
  }, [folderId, q, sort]);

  const upsertFolder = useCallback((folder: FolderRecord) => {
    setListing((cur) => {
      if (cur.folder?.folder_id === folder.folder_id) {
        return { ...cur, folder, breadcrumbs: cur.breadcrumbs.map((b) => (b.folder_id === folder.folder_id ? folder : b)) };
      }
      const i = cur.folders.findIndex((f) => f.folder_id === folder.folder_id);
      if (i >= 0) {
        const folders = cur.folders.slice();
        folders.splice(i, 1);
        return { ...cur, folders: folder.parent_id !== folderId ? folders : placed(folders, folder, byFolder) };
      }
      if (cur.status !== 'ready' || folder.parent_id !== folderId || !matches(folder.name, q)) return cur;
      return { ...cur, folders: placed(cur.folders, folder, byFolder) };
    });
  }, [folderId, q, sort]);

  const remove = useCallback((id: string) => {
    setListing((cur) => ({
      ...cur,
      folders: cur.folders.some((f) => f.folder_id === id) ? cur.folders.filter((f) => f.folder_id !== id) : cur.folders,
      files: cur.files.some((f) => f.file_id === id) ? cur.files.filter((f) => f.file_id !== id) : cur.files,
    }));
  }, []);

  // A listing for another folder, search or sort is never shown while the new one loads.
  const shown = listing.key === key ? listing : { ...EMPTY, key };
  return { listing: shown, loadMore, refresh, upsertFile, upsertFolder, remove };
}
