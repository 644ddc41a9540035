/**
 * Search across every folder: `/collections/search` looks only among one folder's direct
 * children (contract §5), so this walks the tree from All files through the listing, a page
 * at a time, and keeps what matches with the folders above it. The walk is bounded, shows
 * hits as they come, and stops when the search changes, is cleared, or the user stops it.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import { walkTree } from './tree.js';

/** The most entries the walk reads, and the most hits it keeps. */
export const WALK_LIMIT = 50_000;
export const HIT_LIMIT = 1000;

export interface GlobalHits {
  status: 'idle' | 'searching' | 'done' | 'stopped' | 'error';
  error: unknown;
  folders: FolderRecord[];
  files: FileRecord[];
  /** Where each hit is: the folders above it, by its id. */
  paths: Map<string, FolderRecord[]>;
  /** Not every folder was searched (the bound, or stopped). */
  partial: boolean;
}

const IDLE: GlobalHits = { status: 'idle', error: null, folders: [], files: [], paths: new Map(), partial: false };

const fold = (s: string) => s.normalize('NFC').toLowerCase();

export function useGlobalSearch(q: string, enabled: boolean) {
  const [hits, setHits] = useState<GlobalHits>(IDLE);
  const controller = useRef<AbortController | null>(null);
  const [runs, setRuns] = useState(0);

  useEffect(() => {
    controller.current?.abort();
    if (!enabled || !q.trim()) {
      setHits(IDLE);
      return;
    }
    const ac = new AbortController();
    controller.current = ac;
    const needle = fold(q.trim());
    const found: GlobalHits = { ...IDLE, status: 'searching', paths: new Map() };
    setHits(found);
    let count = 0;
    walkTree(null, (page) => {
      const folders = page.folders.filter((f) => fold(f.name).includes(needle));
      const files = page.files.filter((f) => fold(f.name).includes(needle));
      if (folders.length + files.length === 0) return;
      for (const f of folders) found.paths.set(f.folder_id, page.path);
      for (const f of files) found.paths.set(f.file_id, page.path);
      count += folders.length + files.length;
      setHits((cur) => ({ ...cur, folders: cur.folders.concat(folders), files: cur.files.concat(files) }));
      return count < HIT_LIMIT;
    }, { signal: ac.signal, maxEntries: WALK_LIMIT }).then(
      (r) => setHits((cur) => ({ ...cur, status: 'done', partial: r.truncated })),
      (error: unknown) => {
        if (ac.signal.aborted) return;
        setHits((cur) => ({ ...cur, status: 'error', error }));
      },
    );
    return () => ac.abort();
  }, [q, enabled, runs]);

  const stop = useCallback(() => {
    controller.current?.abort();
    setHits((cur) => (cur.status === 'searching' ? { ...cur, status: 'stopped', partial: true } : cur));
  }, []);

  // Changes made from the results (rename, visibility, move, delete) show at once.
  const upsertFile = useCallback((file: FileRecord) => setHits((cur) => ({ ...cur, files: cur.files.map((f) => (f.file_id === file.file_id ? file : f)) })), []);
  const upsertFolder = useCallback((folder: FolderRecord) => setHits((cur) => ({ ...cur, folders: cur.folders.map((f) => (f.folder_id === folder.folder_id ? folder : f)) })), []);
  const remove = useCallback((id: string) => setHits((cur) => ({
    ...cur, folders: cur.folders.filter((f) => f.folder_id !== id), files: cur.files.filter((f) => f.file_id !== id),
  })), []);

  const retry = useCallback(() => setRuns((n) => n + 1), []);

  return { hits, stop, retry, upsertFile, upsertFolder, remove };
}
