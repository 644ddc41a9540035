/**
 * The file manager: one folder at a time (from the address), in a grid or a list, with
 * every action of the service: folders, uploads (drag-and-drop or the file browser),
 * delivery URLs, signed links and their revocation, downloads, rename, visibility and delete.
 */
import type { JSX } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { FileRecord, FolderRecord } from '../../../src/sdk/index.js';
import { CofferError } from '../../../src/sdk/index.js';
import type { UploadItem } from '../uploads/manager.js';
import { sessionUploads } from '../uploads/shared.js';
import { UploadPanel } from '../uploads/UploadPanel.js';
import { Breadcrumbs } from './Breadcrumbs.js';
import { DeleteDialog, type Deletable } from './dialogs/DeleteDialog.js';
import { DetailsDialog, type FileAction } from './dialogs/DetailsDialog.js';
import { LinkDialog } from './dialogs/LinkDialog.js';
import { NewFolderDialog } from './dialogs/NewFolderDialog.js';
import { RenameDialog, type Renamable } from './dialogs/RenameDialog.js';
import { RevokeLinksDialog } from './dialogs/RevokeLinksDialog.js';
import { fileEntry, folderEntry, uploadEntry, type Entry } from './entries.js';
import { FileGrid } from './FileGrid.js';
import { FileList } from './FileList.js';
import { fileActions } from './fileActions.js';
import { errorMessage, middleEllipsis, plural } from './format.js';
import { entryMenuItems, type EntryActions } from './entryMenu.js';
import { GlobeIcon, LockIcon, UploadIcon } from './icons.js';
import { Menu, type MenuAnchor } from './Menu.js';
import { compareEntries } from './order.js';
import { defaultOrder, loadPrefs, saveSort, saveView, type Sort, type SortField } from './state/prefs.js';
import { navigate, routeHref, useRoute, type View } from './state/url.js';
import { EmptyFolder, ErrorState, Loading, NoResults } from './States.js';
import { toastError, toastInfo, toastSuccess } from './Toasts.js';
import { TopBar, Toolbar } from './Toolbar.js';
import { useListing } from './useListing.js';
import { useNow } from './useNow.js';
import { usePageKeys } from './usePageKeys.js';
import { hasFiles, type ViewProps } from './views.js';
import { UsageChart } from './UsageChart.js';

type DialogState =
  | { type: 'new-folder' }
  | { type: 'rename'; target: Renamable }
  | { type: 'delete'; target: Deletable }
  | { type: 'link'; file: FileRecord }
  | { type: 'details'; file: FileRecord }
  | { type: 'revoke-links'; file: FileRecord };

export function FileManager(props: { onSignOut: () => void; onSessionEnded: () => void }): JSX.Element {
  const route = useRoute();
  const prefs = useMemo(loadPrefs, []);
  const [prefView, setPrefView] = useState<View>(prefs.view);
  const view: View = route.view ?? prefView;
  const [sort, setSortState] = useState<Sort>(prefs.sort);
  const q = route.q.trim();
  const { listing, loadMore, refresh, upsertFile, upsertFolder, remove } = useListing(route.folder, q, sort);

  const manager = useMemo(sessionUploads, []);
  const [uploads, setUploads] = useState<UploadItem[]>(() => manager.items());
  useEffect(() => manager.subscribe(setUploads), [manager]);

  const [activeKey, setActiveKey] = useState<string | null>(null);
  const [dialog, setDialog] = useState<DialogState | null>(null);
  const [menu, setMenu] = useState<{ entry: Entry; anchor: MenuAnchor } | null>(null);
  const [dragging, setDragging] = useState(false);
  const [dropKey, setDropKey] = useState<string | null>(null);
  const now = useNow(30_000);
  const searchRef = useRef<HTMLInputElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const uploadVisibility = useRef<'Private' | undefined>(undefined);
  const refocus = useRef(false);
  const selectAfterLoad = useRef<string | null>(null);

  const folder = listing.folder;
  const where = route.folder === null ? 'All files' : folder?.name ?? 'this folder';

  // ---- failures ------------------------------------------------------------------------
  const sessionGone = (err: unknown) => err instanceof CofferError && (err.status === 401 || err.code === 'csrf_failed');
  const fail = useCallback((err: unknown, context?: string) => {
    if (sessionGone(err)) {
      props.onSessionEnded();
      return;
    }
    toastError(context ? `${context}: ${errorMessage(err)}` : errorMessage(err));
  }, []);
  useEffect(() => {
    if (listing.status === 'error' && sessionGone(listing.error)) props.onSessionEnded();
  }, [listing.status]);

  // ---- what is shown -------------------------------------------------------------------
  const folderEntries = useMemo(() => listing.folders.map(folderEntry), [listing.folders]);
  const fileEntries = useMemo(() => listing.files.map(fileEntry), [listing.files]);
  const pending = useMemo(
    () => (q ? [] : uploads.filter((u) => u.folderId === route.folder && (u.status === 'queued' || u.status === 'uploading')).map(uploadEntry)),
    [uploads, route.folder, q],
  );
  const entries = useMemo(() => {
    if (!q) return [...folderEntries, ...pending, ...fileEntries];
    // Search answers in name order; any other order is applied to what was found.
    const cmp = compareEntries(sort);
    return sort.field === 'name' && sort.order === 'asc'
      ? [...folderEntries, ...fileEntries]
      : [...folderEntries.slice().sort(cmp), ...fileEntries.slice().sort(cmp)];
  }, [folderEntries, fileEntries, pending, q, sort]);

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

  // The title says where the user is.
  useEffect(() => {
    document.title = `${q ? `“${q}” in ` : ''}${where} · Coffer`;
  }, [where, q]);

  // After a folder loads: select the folder the user came up from, and keep keyboard focus.
  useEffect(() => {
    if (listing.status !== 'ready') return;
    const key = selectAfterLoad.current;
    selectAfterLoad.current = null;
    if (key && entries.some((e) => e.key === key)) setActiveKey(key);
    if (refocus.current) {
      refocus.current = false;
      requestAnimationFrame(() => document.querySelector<HTMLElement>('[data-focus-home]')?.focus({ preventScroll: true }));
    }
  }, [listing.status, listing.key]);

  // ---- navigation ----------------------------------------------------------------------
  const goFolder = useCallback((folderId: string | null) => {
    const focused = document.activeElement?.closest('.scroller') !== null && document.activeElement !== document.body;
    refocus.current = focused;
    // Going up: select the folder we came from.
    const crumbs = listing.breadcrumbs;
    const at = folderId === null ? -1 : crumbs.findIndex((c) => c.folder_id === folderId);
    const child = crumbs[at + 1];
    selectAfterLoad.current = child && (folderId === null || at >= 0) ? child.folder_id : null;
    setActiveKey(null);
    navigate({ folder: folderId, q: '' });
  }, [listing.breadcrumbs]);

  const goUp = () => {
    if (route.folder === null) return;
    goFolder(folder?.parent_id ?? null);
  };

  const setView = (v: View) => {
    saveView(v);
    setPrefView(v);
    navigate({ view: v });
  };
  const setSort = (s: Sort) => {
    saveSort(s);
    setSortState(s);
  };
  const onSort = (field: SortField) => setSort(sort.field === field ? { field, order: sort.order === 'asc' ? 'desc' : 'asc' } : { field, order: defaultOrder(field) });

  const onSearch = (text: string, commit: boolean) => {
    const next = text.trim();
    if (next === route.q.trim() && !commit) return;
    setActiveKey(null);
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

  // ---- actions -------------------------------------------------------------------------
  const { copyUrl, download, toggleVisibility } = fileActions({
    fail, upsertFile, upsertFolder, signedLink: (file) => setDialog({ type: 'link', file }),
  });

  const open = (entry: Entry) => {
    if (entry.kind === 'folder') goFolder(entry.folder.folder_id);
    else if (entry.kind === 'file') setDialog({ type: 'details', file: entry.file });
  };

  const command = (cmd: 'delete' | 'rename', entry: Entry) => {
    if (entry.kind === 'upload') return;
    const target = entry.kind === 'file' ? { kind: 'file' as const, file: entry.file } : { kind: 'folder' as const, folder: entry.folder };
    setDialog(cmd === 'delete' ? { type: 'delete', target } : { type: 'rename', target });
  };

  const fileAction = (file: FileRecord, a: FileAction) => {
    const entry = fileEntry(file);
    switch (a) {
      case 'copy': setDialog(null); void copyUrl(file); break;
      case 'link': setDialog({ type: 'link', file }); break;
      case 'download': setDialog(null); void download(file); break;
      case 'rename': command('rename', entry); break;
      case 'visibility': setDialog(null); void toggleVisibility(entry); break;
      case 'delete': command('delete', entry); break;
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
  const state = useRef({ dialog, menu, q: route.q });
  state.current = { dialog, menu, q: route.q };
  usePageKeys(state, searchRef, () => setMenu(null));

  // ---- drag and drop onto the page ---------------------------------------------------
  const dragDepth = useRef(0);
  const dropHandlers = {
    onDragEnter: (e: DragEvent) => {
      if (!hasFiles(e) || dialog) return;
      e.preventDefault();
      dragDepth.current++;
      setDragging(true);
    },
    onDragOver: (e: DragEvent) => {
      if (!hasFiles(e) || dialog) return;
      e.preventDefault();
      e.dataTransfer!.dropEffect = 'copy';
      if (dropKey) setDropKey(null);
      if (!dragging) setDragging(true);
    },
    onDragLeave: () => {
      dragDepth.current = Math.max(0, dragDepth.current - 1);
      if (dragDepth.current === 0) {
        setDragging(false);
        setDropKey(null);
      }
    },
    onDrop: (e: DragEvent) => {
      dragDepth.current = 0;
      setDragging(false);
      setDropKey(null);
      if (!hasFiles(e) || dialog) return;
      e.preventDefault();
      uploadTo(route.folder, Array.from(e.dataTransfer!.files), where);
    },
  };
  // Files dropped outside the page's zone are not opened by the browser.
  useEffect(() => {
    const stop = (e: DragEvent) => { if (hasFiles(e)) e.preventDefault(); };
    const end = () => { dragDepth.current = 0; setDragging(false); setDropKey(null); };
    window.addEventListener('dragover', stop);
    window.addEventListener('drop', stop);
    window.addEventListener('dragend', end);
    return () => {
      window.removeEventListener('dragover', stop);
      window.removeEventListener('drop', stop);
      window.removeEventListener('dragend', end);
    };
  }, []);
  const dropFolderName = dropKey ? entries.find((e) => e.key === dropKey)?.name ?? where : where;

  // ---- render --------------------------------------------------------------------------
  const viewProps: ViewProps = {
    entries, activeKey, setActive: setActiveKey, open, command,
    showMenu: (entry, anchor) => { if (entry.kind !== 'upload') setMenu({ entry, anchor }); },
    sort, onSort,
    hasMore: listing.cursor !== null, loadingMore: listing.loadingMore,
    moreError: listing.moreError ? errorMessage(listing.moreError) : null, loadMore,
    now, label: q ? `Search results for ${q} in ${where}` : `Contents of ${where}`,
    resetKey: listing.key, dropKey, setDropKey,
    dropInto: (f, files) => {
      dragDepth.current = 0;
      setDragging(false);
      uploadTo(f.folder_id, files, f.name);
    },
    cancelUpload: (id) => manager.cancel(id),
    goUp,
    folderHref: (id) => routeHref({ folder: id, view: route.view, q: '' }),
  };

  let content: JSX.Element;
  if (listing.status === 'loading') content = <Loading view={view} />;
  else if (listing.status === 'error') {
    const notFound = listing.error instanceof CofferError && listing.error.code === 'folder_not_found';
    content = <ErrorState message={errorMessage(listing.error)} notFound={notFound} onRetry={refresh} onRoot={() => goFolder(null)} />;
  } else if (entries.length === 0) {
    content = q
      ? <NoResults q={q} where={where} onClear={() => navigate({ q: '' }, 'replace')} />
      : <EmptyFolder root={route.folder === null} onUpload={() => pickFiles()} onNewFolder={() => setDialog({ type: 'new-folder' })} />;
  } else content = view === 'grid' ? <FileGrid {...viewProps} /> : <FileList {...viewProps} />;

  const loadedCount = listing.folders.length + listing.files.length;
  const summary = listing.status !== 'ready' ? '' : q
    ? `${plural(loadedCount, 'result')}${listing.cursor ? '+' : ''} for “${q}”`
    : `${plural(listing.folders.length, 'folder')}${listing.cursor ? '+' : ''}, ${plural(listing.files.length, 'file')}${listing.cursor ? '+' : ''}${pending.length ? ` · ${plural(pending.length, 'upload')} in progress` : ''}`;

  return (
    <div class={'app' + (dragging ? ' dragging' : '')} {...dropHandlers}>
      <TopBar
        q={route.q} where={where} searchRef={searchRef} onSearch={onSearch} onSignOut={props.onSignOut}
        homeHref={routeHref({ folder: null, view: route.view, q: '' })} onHome={() => goFolder(null)}
      />
      <main class="main" aria-label="Files">
        <Toolbar
          breadcrumbs={<Breadcrumbs crumbs={listing.breadcrumbs} href={(id) => routeHref({ folder: id, view: route.view, q: '' })} go={goFolder} />}
          view={view} setView={setView} sort={sort} setSort={setSort} searching={q !== ''}
          onNewFolder={() => setDialog({ type: 'new-folder' })}
          onUpload={(v) => { uploadTarget.current = null; pickFiles(v); }}
        />
        <div class="subbar">
          {q ? (
            <p class="subbar-text" role="status">
              <span>{summary} in <strong>{where}</strong></span>
              <button type="button" class="btn btn-link" onClick={() => navigate({ q: '' }, 'replace')}>Clear search</button>
            </p>
          ) : (
            <p class="subbar-text" role="status" data-testid="summary">{summary}</p>
          )}
          {listing.status === 'ready' && folder && (
            <span class="subbar-badge" title={folder.effective_visibility === 'Private' ? 'Files in this folder need signed links' : 'Files here are Public unless Private themselves'}>
              {folder.effective_visibility === 'Private' ? <LockIcon size={13} /> : <GlobeIcon size={13} />}
              {folder.effective_visibility === 'Private' ? 'Private folder' : 'Public folder'}
            </span>
          )}
        </div>
        {route.folder === null && !q && <UsageChart />}
        <section class="content" aria-label={q ? 'Search results' : 'Folder contents'}>
          {content}
          {dragging && (
            <div class="drop-overlay" aria-hidden="true">
              <div class="drop-hint"><UploadIcon size={22} /><span>Drop files to upload to <strong>{dropFolderName}</strong></span></div>
            </div>
          )}
        </section>
      </main>

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

      <UploadPanel manager={manager} />

      {menu && (
        <Menu label={`Actions for ${menu.entry.name}`} anchor={menu.anchor} items={entryMenuItems(menu.entry, menuActions)} onClose={() => setMenu(null)} />
      )}

      {dialog?.type === 'new-folder' && (
        <NewFolderDialog parent={folder} onClose={() => setDialog(null)} onCreated={(f) => {
          setDialog(null);
          upsertFolder(f);
          setActiveKey(f.folder_id);
          toastSuccess(`Created folder “${middleEllipsis(f.name, 40)}”`);
        }} />
      )}
      {dialog?.type === 'rename' && (
        <RenameDialog target={dialog.target} onClose={() => setDialog(null)} onRenamed={(r) => {
          setDialog(null);
          if (r.kind === 'file') upsertFile(r.file);
          else upsertFolder(r.folder);
          toastSuccess(`Renamed to “${middleEllipsis(r.kind === 'file' ? r.file.name : r.folder.name, 40)}”`);
        }} />
      )}
      {dialog?.type === 'delete' && (
        <DeleteDialog target={dialog.target} onClose={() => setDialog(null)} onDeleted={(id) => {
          const t = dialog.target;
          const i = entries.findIndex((e) => e.key === id);
          const next = entries[i + 1] ?? entries[i - 1];
          setDialog(null);
          remove(id);
          setActiveKey(next && next.key !== id ? next.key : null);
          toastSuccess(t.kind === 'file'
            ? `Deleted “${middleEllipsis(t.file.name, 40)}”`
            : `Deleted folder “${middleEllipsis(t.folder.name, 40)}” and everything in it`);
        }} />
      )}
      {dialog?.type === 'link' && <LinkDialog file={dialog.file} onClose={() => setDialog(null)} />}
      {dialog?.type === 'revoke-links' && (
        <RevokeLinksDialog file={dialog.file} onClose={() => setDialog(null)} onSignedLink={(file) => setDialog({ type: 'link', file })} onFailed={fail} />
      )}
      {dialog?.type === 'details' && (
        <DetailsDialog file={dialog.file} now={now} onClose={() => setDialog(null)} onAction={(a) => fileAction((dialog as { file: FileRecord }).file, a)} />
      )}
    </div>
  );
}
