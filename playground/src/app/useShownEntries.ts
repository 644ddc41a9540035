/**
 * What the view shows, in order: the folder's folders, its uploads in progress and its files;
 * or what a search found, in this folder or in all of them (with where each hit is).
 */
import { useMemo } from 'preact/hooks';
import type { UploadItem } from '../uploads/manager.js';
import { fileEntry, folderEntry, uploadEntry, type Entry } from './entries.js';
import { compareEntries } from './order.js';
import type { Sort } from './state/prefs.js';
import type { GlobalHits } from './useGlobalSearch.js';
import type { Listing } from './useListing.js';

export function useShownEntries(a: {
  listing: Listing; hits: GlobalHits; everywhere: boolean; q: string; sort: Sort; uploads: UploadItem[]; folderId: string | null;
}): { entries: Entry[]; pending: Entry[] } {
  const { listing, hits, everywhere, q, sort, uploads, folderId } = a;
  const folders = useMemo(() => (everywhere
    ? hits.folders.map((f) => folderEntry(f, hits.paths.get(f.folder_id)))
    : listing.folders.map((f) => folderEntry(f))), [everywhere, hits, listing.folders]);
  const files = useMemo(() => (everywhere
    ? hits.files.map((f) => fileEntry(f, hits.paths.get(f.file_id)))
    : listing.files.map((f) => fileEntry(f))), [everywhere, hits, listing.files]);
  const pending = useMemo(
    () => (q ? [] : uploads.filter((u) => u.folderId === folderId && (u.status === 'queued' || u.status === 'uploading')).map(uploadEntry)),
    [uploads, folderId, q],
  );
  const entries = useMemo(() => {
    if (!q) return [...folders, ...pending, ...files];
    // Search in one folder answers in name order; any other order, and the all-folders walk, are ordered here.
    const cmp = compareEntries(sort);
    return !everywhere && sort.field === 'name' && sort.order === 'asc'
      ? [...folders, ...files]
      : [...folders.slice().sort(cmp), ...files.slice().sort(cmp)];
  }, [folders, files, pending, q, sort, everywhere]);
  return { entries, pending };
}
