/**
 * The keys the page shows, newest first, and the path of each folder a key is confined to
 * (a key names its folder by id; people know folders by where they are).
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { FolderRecord, KeyRecord } from '../../../src/sdk/index.js';
import { CofferError } from '../../../src/sdk/index.js';
import { client } from '../api.js';

export type FolderPlace =
  | { status: 'loading' }
  | { status: 'found'; path: FolderRecord[] }
  | { status: 'gone' }
  | { status: 'error'; message: string };

export interface KeysState {
  status: 'loading' | 'ready' | 'error';
  error: unknown;
  keys: KeyRecord[];
}

export type KeyStatus = 'active' | 'revoked' | 'expired';

export function keyStatus(k: KeyRecord, now: number): KeyStatus {
  if (k.revoked_at !== null) return 'revoked';
  if (k.expires_at !== null && Date.parse(k.expires_at) <= now) return 'expired';
  return 'active';
}

const newestFirst = (a: KeyRecord, b: KeyRecord) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0);

/** Only what a list answer holds: a record passed in from a creation loses its secret here. */
const publicPart = (k: KeyRecord): KeyRecord => ({
  key_id: k.key_id, name: k.name, scopes: k.scopes, folder_id: k.folder_id, created_at: k.created_at,
  expires_at: k.expires_at, revoked_at: k.revoked_at, last_used_at: k.last_used_at, created_by: k.created_by,
});

export function useKeys() {
  const [state, setState] = useState<KeysState>({ status: 'loading', error: null, keys: [] });
  const [places, setPlaces] = useState<ReadonlyMap<string, FolderPlace>>(new Map());
  const [reloads, setReloads] = useState(0);
  const asked = useRef(new Set<string>());

  useEffect(() => {
    const ac = new AbortController();
    setState((s) => ({ ...s, status: s.status === 'ready' ? 'ready' : 'loading' }));
    client.listKeys({ signal: ac.signal }).then(
      ({ keys }) => setState({ status: 'ready', error: null, keys: keys.map(publicPart).sort(newestFirst) }),
      (err: unknown) => { if (!ac.signal.aborted) setState((s) => ({ ...s, status: 'error', error: err })); },
    );
    return () => ac.abort();
  }, [reloads]);

  // Each folder's path, asked once per folder (a reload asks again).
  useEffect(() => {
    for (const k of state.keys) {
      const id = k.folder_id;
      if (id === null || asked.current.has(id)) continue;
      asked.current.add(id);
      setPlaces((m) => new Map(m).set(id, { status: 'loading' }));
      client.list({ folder_id: id, limit: 1 }).then(
        (page) => setPlaces((m) => new Map(m).set(id, { status: 'found', path: page.breadcrumbs })),
        (err: unknown) => setPlaces((m) => new Map(m).set(id, err instanceof CofferError && err.code === 'folder_not_found'
          ? { status: 'gone' }
          : { status: 'error', message: err instanceof Error ? err.message : String(err) })),
      );
    }
  }, [state.keys]);

  const reload = useCallback(() => {
    asked.current.clear();
    setReloads((n) => n + 1);
  }, []);

  /** A key made here joins the list at once; its folder's path is already known from the picker. */
  const added = useCallback((k: KeyRecord, path: FolderRecord[] | null) => {
    if (k.folder_id !== null && path) {
      asked.current.add(k.folder_id);
      setPlaces((m) => new Map(m).set(k.folder_id!, { status: 'found', path }));
    }
    setState((s) => ({ ...s, status: 'ready', keys: [publicPart(k), ...s.keys.filter((x) => x.key_id !== k.key_id)].sort(newestFirst) }));
  }, []);

  const revoked = useCallback((keyId: string, at: string) => {
    setState((s) => ({ ...s, keys: s.keys.map((k) => (k.key_id === keyId ? { ...k, revoked_at: at } : k)) }));
  }, []);

  return { state, places, reload, added, revoked };
}
