/**
 * Resume handles of open uploads, in IndexedDB, so an upload cut off by a reload or a
 * closed tab continues when the same file is chosen again. Only the four values naming an
 * upload are kept (file id, bucket, key, upload id): never the access key, never the
 * CSRF token, never file contents.
 *
 * Used from the upload worker (IndexedDB is available in workers). Every failure here is
 * swallowed: without IndexedDB (a private window, a full disk) uploads still work, they
 * just start over after a reload.
 */
import type { ResumeHandle } from '../../../src/sdk/index.js';

export const DB_NAME = 'coffer-uploads';
const STORE = 'handles';
/** Older handles are dropped: the service aborts uploads left open for 24 hours by default. */
const MAX_AGE_MS = 7 * 24 * 3600_000;

interface Entry {
  handle: ResumeHandle;
  savedAt: number;
}

/** The file as the browser describes it, plus where and how it goes. */
export interface FileIdentity {
  name: string;
  size: number;
  lastModified: number;
  folderId: string | null;
  visibility: string;
}

/** One key per (file, destination): the same file sent to another folder is another upload. */
export function resumeKey(f: FileIdentity): string {
  return JSON.stringify([f.name, f.size, f.lastModified, f.folderId ?? '', f.visibility.toLowerCase()]);
}

let opening: Promise<IDBDatabase | null> | null = null;

function open(): Promise<IDBDatabase | null> {
  opening ??= new Promise((resolve) => {
    try {
      const req = indexedDB.open(DB_NAME, 1);
      req.onupgradeneeded = () => {
        if (!req.result.objectStoreNames.contains(STORE)) req.result.createObjectStore(STORE);
      };
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => resolve(null);
      req.onblocked = () => resolve(null);
    } catch {
      resolve(null);
    }
  });
  return opening;
}

async function run<T>(mode: IDBTransactionMode, fn: (store: IDBObjectStore) => IDBRequest<T>): Promise<T | undefined> {
  const db = await open();
  if (!db) return undefined;
  return new Promise((resolve) => {
    try {
      const tx = db.transaction(STORE, mode);
      const req = fn(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = () => resolve(undefined);
      tx.onabort = () => resolve(undefined);
    } catch {
      resolve(undefined);
    }
  });
}

const isHandle = (v: unknown): v is ResumeHandle => {
  const h = v as Partial<ResumeHandle> | null;
  return !!h && typeof h.fileId === 'string' && typeof h.bucket === 'string' && typeof h.key === 'string' && typeof h.uploadId === 'string';
};

export async function loadHandle(key: string): Promise<ResumeHandle | null> {
  const entry = (await run('readonly', (s) => s.get(key))) as Entry | undefined;
  if (!entry || !isHandle(entry.handle)) return null;
  if (Date.now() - entry.savedAt > MAX_AGE_MS) {
    await forgetHandle(key);
    return null;
  }
  return entry.handle;
}

export async function saveHandle(key: string, handle: ResumeHandle): Promise<void> {
  // Exactly these four fields: nothing else the session object might carry is stored.
  const entry: Entry = { handle: { fileId: handle.fileId, bucket: handle.bucket, key: handle.key, uploadId: handle.uploadId }, savedAt: Date.now() };
  await run('readwrite', (s) => s.put(entry, key));
}

export async function forgetHandle(key: string): Promise<void> {
  await run('readwrite', (s) => s.delete(key));
}
