/**
 * The file manager: one folder at a time (from the address), in a grid or a list, with
 * every action of the service: folders, uploads (drag-and-drop or the file browser),
 * delivery URLs, signed links and their revocation, downloads, rename, move, visibility and
 * delete, on one item or on a selection of many; search in this folder or in all of them.
 */
import type { JSX } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import { CofferError } from '../../../src/sdk/index.js';
import type { UploadItem } from '../uploads/manager.js';
import { sessionUploads } from '../uploads/shared.js';
import { UploadPanel } from '../uploads/UploadPanel.js';
import { Breadcrumbs } from './Breadcrumbs.js';
import type { Item } from './bulk.js';
import type { FileAction } from './dialogs/DetailsDialog.js';
import { fileEntry, type Entry } from './entries.js';
import { FileDialogs, type DialogState } from './FileDialogs.js';
import { FileGrid } from './FileGrid.js';
import { FileList } from './FileList.js';
import { fileActions } from './fileActions.js';
import { errorMessage, middleEllipsis, plural } from './format.js';
import { entryMenuItems, type EntryActions } from './entryMenu.js';
import { UploadIcon } from './icons.js';
import { Menu, type MenuAnchor } from './Menu.js';
import { defaultOrder, loadPrefs, saveSort, saveView, type Sort, type SortField } from './state/prefs.js';
import { navigate, routeHref, useRoute, type View } from './state/url.js';
import { moveWithToast, visibilityWithToast, type ApplyDeps } from './selectionActions.js';
import { EmptyFolder, ErrorState, Loading, NoResults } from './States.js';
import { SubBar } from './SubBar.js';
import { toastError, toastInfo, toastSuccess } from './Toasts.js';
import { TopBar, Toolbar } from './Toolbar.js';
import { useDropZone } from './useDropZone.js';
import { useGlobalSearch } from './useGlobalSearch.js';
import { useListing } from './useListing.js';
import { useNow } from './useNow.js';
import { usePageKeys } from './usePageKeys.js';
import { useSelection } from './useSelection.js';
import { useShownEntries } from './useShownEntries.js';
import type { ViewProps } from './views.js';
import { UsageChart } from './UsageChart.js';

const asItem = (e: Entry): Item | null => (e.kind === 'file' ? { kind: 'file', file: e.file } : e.kind === 'folder' ? { kind: 'folder', folder: e.folder } : null);
const sessionGone = (err: unknown) => err instanceof CofferError && (err.status === 401 || err.code === 'csrf_failed');

export function FileManager(props: { onSignOut: () => void; onSessionEnded: () => void }): JSX.Element {
  const route = useRoute();
  const prefs = useMemo(loadPrefs, []);
  const [prefView, setPrefView] = useState<View>(prefs.view);
  const view: View = route.view ?? prefView;
  const [sort, setSortState] = useState<Sort>(prefs.sort);
  const q = route.q.trim();
  const everywhere = !!q && !!route.all;
  const local = useListing(route.folder, everywhere ? '' : q, sort);
  const global = useGlobalSearch(q, everywhere);
  const { listing, loadMore, refresh } = local;
  const upsertFile = useCallback((f: FileRecord) => { local.upsertFile(f); global.upsertFile(f); }, [local.upsertFile]);
  const upsertFolder = useCallback((f: FolderRecord) => { local.upsertFolder(f); global.upsertFolder(f); }, [local.upsertFolder]);
  const remove = (ids: string[]) => { for (const id of ids) { local.remove(id); global.remove(id); } };

  const manager = useMemo(sessionUploads, []);
  const [uploads, setUploads] = useState<UploadItem[]>(() => manager.items());
  useEffect(() => manager.subscribe(setUploads), [manager]);

  const [dialog, setDialog] = useState<DialogState | null>(null);
  const [menu, setMenu] = useState<{ entry: Entry; anchor: MenuAnchor } | null>(null);
  const [busy, setBusy] = useState(false);
  const now = useNow(30_000);
  const searchRef = useRef<HTMLInputElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const uploadVisibility = useRef<'Private' | undefined>(undefined);
  const refocus = useRef(false);
  const selectAfterLoad = useRef<string | null>(null);

  const folder = listing.folder;
  const where = route.folder === null ? 'All files' : folder?.name ?? 'this folder';

  const fail = useCallback((err: unknown, context?: string) => {
    if (sessionGone(err)) return props.onSessionEnded();
    toastError(context ? `${context}: ${errorMessage(err)}` : errorMessage(err));
  }, []);
  useEffect(() => {
    if (listing.status === 'error' && sessionGone(listing.error)) props.onSessionEnded();
  }, [listing.status]);

  // ---- what is shown -------------------------------------------------------------------
  const { hits } = global;
  const { entries, pending } = useShownEntries({ listing, hits, everywhere, q, sort, uploads, folderId: route.folder });
  const sel = useSelection(entries);

  // Finished uploads join the listing at once.
  const handled = useRef(new Set<string>());
  useEffect(() => {
    for (const u of uploads) {
      if (u.status === 'done' && u.record && !handled.current.has(u.id)) {
        handled.current.add(u.id);
        upsertFile(u.record);
      }
    }
  }, [uploads, upsertFile]);

  useEffect(() => {
    document.title = `${q ? `“${q}” in ` : ''}${everywhere ? 'all folders' : where} · Coffer`;
  }, [where, q, everywhere]);

  // After a folder loads: select the folder the user came up from, and keep keyboard focus.
  useEffect(() => {
    if (listing.status !== 'ready') return;
    const key = selectAfterLoad.current;
    selectAfterLoad.current = null;
    sel.setActive(key && entries.some((e) => e.key === key) ? key : null);
    if (refocus.current) {
      refocus.current = false;
      requestAnimationFrame(() => document.querySelector<HTMLElement>('[data-focus-home]')?.focus({ preventScroll: true }));
    }
  }, [listing.status, listing.key]);

  // ---- navigation ----------------------------------------------------------------------
  const goFolder = useCallback((folderId: string | null) => {
    refocus.current = document.activeElement?.closest('.scroller') !== null && document.activeElement !== document.body;
    // Going up: select the folder we came from.
    const crumbs = listing.breadcrumbs;
    const at = folderId === null ? -1 : crumbs.findIndex((c) => c.folder_id === folderId);
    const child = crumbs[at + 1];
    selectAfterLoad.current = child && (folderId === null || at >= 0) ? child.folder_id : null;
    sel.setActive(null);
    navigate({ folder: folderId, q: '' });
  }, [listing.breadcrumbs]);

  const goUp = () => { if (route.folder !== null) goFolder(folder?.parent_id ?? null); };
  const setView = (v: View) => { saveView(v); setPrefView(v); navigate({ view: v }); };
  const setSort = (s: Sort) => { saveSort(s); setSortState(s); };
  const onSort = (field: SortField) => setSort(sort.field === field ? { field, order: sort.order === 'asc' ? 'desc' : 'asc' } : { field, order: defaultOrder(field) });

  const onSearch = (text: string, commit: boolean) => {
    const next = text.trim();
    if (next === route.q.trim() && !commit) return;
    sel.setActive(null);
    // A new search is a step in history; refining it is not.
    navigate({ q: next }, route.q === '' && next !== '' ? 'push' : 'replace');
  };

  // ---- uploads -------------------------------------------------------------------------
  const uploadTo = (folderId: string | null, files: File[], name: string, visibility?: 'Private') => {
    if (files.length === 0) return;
    manager.add(files, visibility ? { folderId, visibility } : { folderId });
    if (folderId !== route.folder) toastInfo(`Uploading ${plural(files.length, 'file')} to “${middleEllipsis(name, 40)}”`);
  };
  const pickFiles = (visibility?: 'Private') => {
    uploadVisibility.current = visibility;
    fileInput.current?.click();
  };
  const drop = useDropZone(!!dialog, (files) => uploadTo(route.folder, files, where));

  // ---- actions -------------------------------------------------------------------------
  const { copyUrl, download, toggleVisibility } = fileActions({
    fail, upsertFile, upsertFolder, signedLink: (file) => setDialog({ type: 'link', file }),
  });
  const applyDeps: ApplyDeps = { upsertFile, upsertFolder, sessionGone, onSessionEnded: props.onSessionEnded };
  const running = (task: Promise<void>) => { setBusy(true); void task.finally(() => setBusy(false)); };
  // What moved away is no longer in view: the selection ends with the move.
  const moveInto = (target: FolderRecord | null, items: Item[]) => running(moveWithToast(items, target, applyDeps).then(sel.clear));
  const setVisibility = (items: Item[], v: 'Public' | 'Private') => running(visibilityWithToast(items, v, applyDeps));

  /** An action on an entry takes the whole selection when the entry is part of it. */
  const itemsFor = (entry: Entry): Item[] => {
    const chosen = sel.selected.has(entry.key) && sel.chosen.length > 1 ? sel.chosen : [entry];
    return chosen.map(asItem).filter((i): i is Item => i !== null);
  };

  const open = (entry: Entry) => {
    if (entry.kind === 'folder') goFolder(entry.folder.folder_id);
    else if (entry.kind === 'file') setDialog({ type: 'details', file: entry.file });
  };

  const command = (cmd: 'delete' | 'rename' | 'move', entry: Entry) => {
    const item = asItem(entry);
    if (!item) return;
    if (cmd === 'rename') setDialog({ type: 'rename', target: item });
    else if (cmd === 'delete') setDialog({ type: 'delete', targets: itemsFor(entry) });
    else setDialog({ type: 'move', items: itemsFor(entry) });
  };

  const fileAction = (file: FileRecord, a: FileAction) => {
    const entry = fileEntry(file);
    switch (a) {
      case 'copy': setDialog(null); void copyUrl(file); break;
      case 'link': setDialog({ type: 'link', file }); break;
      case 'download': setDialog(null); void download(file); break;
      case 'rename': command('rename', entry); break;
      case 'visibility': setDialog(null); void toggleVisibility(entry); break;
      case 'delete': setDialog({ type: 'delete', targets: [{ kind: 'file', file }] }); break;
      case 'revoke-links': setDialog({ type: 'revoke-links', file }); break;
    }
  };

  // "Upload here…" from a folder's menu: the file browser uploads into that folder.
  const uploadTarget = useRef<FolderRecord | null>(null);
  const menuActions: EntryActions = {
    open, command, toggleVisibility: (e) => void toggleVisibility(e), download: (f) => void download(f), copyUrl: (f) => void copyUrl(f),
    uploadInto: (f) => { uploadTarget.current = f; fileInput.current?.click(); },
    signedLink: (file) => setDialog({ type: 'link', file }), revokeLinks: (file) => setDialog({ type: 'revoke-links', file }),
  };

  // ---- keyboard ------------------------------------------------------------------------
  const state = useRef({ dialog, menu, q: route.q, selecting: sel.multi });
  state.current = { dialog, menu, q: route.q, selecting: sel.multi };
  usePageKeys(state, searchRef, () => setMenu(null), sel.clear);

  // ---- render --------------------------------------------------------------------------
  const viewProps: ViewProps = {
    entries, activeKey: sel.active, setActive: sel.setActive, selected: sel.selected, pick: sel.pick, selectAll: sel.selectAll,
    clearSelection: sel.clear, itemsFor, moveInto,
    open, command,
    showMenu: (entry, anchor) => { if (entry.kind !== 'upload') setMenu({ entry, anchor }); },
    sort, onSort,
    hasMore: !everywhere && listing.cursor !== null, loadingMore: !everywhere && listing.loadingMore,
    moreError: !everywhere && listing.moreError ? errorMessage(listing.moreError) : null, loadMore,
    now, label: q ? `Search results for ${q} in ${everywhere ? 'all folders' : where}` : `Contents of ${where}`,
    resetKey: everywhere ? `all\n${q}` : listing.key, dropKey: drop.dropKey, setDropKey: drop.setDropKey,
    dropInto: (f, files) => { drop.reset(); uploadTo(f.folder_id, files, f.name); },
    cancelUpload: (id) => manager.cancel(id),
    goUp,
    folderHref: (id) => routeHref({ folder: id, view: route.view, q: '' }),
  };

  const status = everywhere ? (hits.status === 'error' ? 'error' : hits.status === 'searching' && entries.length === 0 ? 'loading' : 'ready') : listing.status;
  const error = everywhere ? hits.error : listing.error;
  let content: JSX.Element;
  if (status === 'loading') content = <Loading view={view} />;
  else if (status === 'error') {
    const notFound = error instanceof CofferError && error.code === 'folder_not_found';
    content = <ErrorState message={errorMessage(error)} notFound={notFound} onRetry={everywhere ? global.retry : refresh} onRoot={() => goFolder(null)} />;
  } else if (entries.length === 0) {
    content = q
      ? <NoResults q={q} where={everywhere ? 'all folders' : where} onClear={() => navigate({ q: '' }, 'replace')} />
      : <EmptyFolder root={route.folder === null} onUpload={() => pickFiles()} onNewFolder={() => setDialog({ type: 'new-folder' })} />;
  } else content = view === 'grid' ? <FileGrid {...viewProps} /> : <FileList {...viewProps} />;

  const chosenItems = sel.chosen.map(asItem).filter((i): i is Item => i !== null);
  return (
    <div class={'app' + (drop.dragging ? ' dragging' : '')} {...drop.handlers}>
      <TopBar
        q={route.q} where={where} searchRef={searchRef} onSearch={onSearch} onSignOut={props.onSignOut}
        homeHref={routeHref({ folder: null, view: route.view, q: '' })} onHome={() => goFolder(null)}
      />
      <div class="workspace">
      <main class="main" aria-label="Files">
        <Toolbar
          breadcrumbs={<Breadcrumbs crumbs={listing.breadcrumbs} href={(id) => routeHref({ folder: id, view: route.view, q: '' })} go={goFolder}
            moveInto={(f, items) => moveInto(f, items)} />}
          view={view} setView={setView} sort={sort} setSort={setSort} searching={q !== ''}
          onNewFolder={() => setDialog({ type: 'new-folder' })}
          onUpload={(v) => { uploadTarget.current = null; pickFiles(v); }}
        />
        <SubBar
          listing={listing} q={q} where={where} everywhere={everywhere} hits={hits} onStop={global.stop}
          found={entries.length} pending={pending.length}
          selection={sel.multi ? {
            items: chosenItems, busy, onClear: sel.clear,
            onMove: () => setDialog({ type: 'move', items: chosenItems }),
            onVisibility: (v) => setVisibility(chosenItems, v),
            onDelete: () => setDialog({ type: 'delete', targets: chosenItems }),
          } : null}
        />
        {route.folder === null && !q && <UsageChart />}
        <section class="content" aria-label={q ? 'Search results' : 'Folder contents'}>
          {content}
          {drop.dragging && (
            <div class="drop-overlay" aria-hidden="true">
              <div class="drop-hint"><UploadIcon size={22} /><span>Drop files to upload to <strong>{drop.dropKey ? entries.find((e) => e.key === drop.dropKey)?.name ?? where : where}</strong></span></div>
            </div>
          )}
        </section>
      </main>
      {/* Docked beside the files (below them on a phone), never over them. */}
      <UploadPanel manager={manager} />
      </div>

      <input
        ref={fileInput} type="file" multiple hidden tabIndex={-1} aria-hidden="true" data-testid="file-input"
        onChange={(e) => {
          const input = e.currentTarget;
          const files = Array.from(input.files ?? []);
          input.value = '';
          const target = uploadTarget.current;
          uploadTarget.current = null;
          if (target) uploadTo(target.folder_id, files, target.name);
          else uploadTo(route.folder, files, where, uploadVisibility.current);
          uploadVisibility.current = undefined;
        }}
      />

      {menu && (
        <Menu label={`Actions for ${menu.entry.name}`} anchor={menu.anchor} items={entryMenuItems(menu.entry, menuActions, itemsFor(menu.entry).length)} onClose={() => setMenu(null)} />
      )}
      <FileDialogs host={{
        dialog, setDialog, folderId: route.folder, folder, now, upsertFile, upsertFolder, fail, fileAction, moveInto,
        removed: (ids) => {
          const i = entries.findIndex((e) => ids.includes(e.key));
          const next = entries.slice(i + 1).find((e) => !ids.includes(e.key)) ?? entries.slice(0, Math.max(0, i)).reverse().find((e) => !ids.includes(e.key));
          remove(ids);
          sel.setActive(next ? next.key : null);
        },
        created: (f) => {
          upsertFolder(f);
          sel.setActive(f.folder_id);
          toastSuccess(`Created folder “${middleEllipsis(f.name, 40)}”`);
        },
      }} />
    </div>
  );
}
