/**
 * The top bar (brand, pages, search, sign out) and the folder toolbar (breadcrumbs, new folder,
 * upload, sort, view).
 */
import type { ComponentChildren, JSX, RefObject } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ChevronDownIcon, CloseIcon, FolderPlusIcon, GridIcon, ListIcon, LockIcon, LogoIcon, SearchIcon, SignOutIcon, UploadIcon } from './icons.js';
import { Menu, type MenuAnchor } from './Menu.js';
import { PageNav } from './Nav.js';
import type { Sort } from './state/prefs.js';
import type { View } from './state/url.js';

const isMac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
export const MOD = isMac ? '⌘' : 'Ctrl';

/** A phone's width, where the search field has room for one word of placeholder. */
function useNarrow(): boolean {
  const [narrow, setNarrow] = useState(() => window.matchMedia('(max-width: 600px)').matches);
  useEffect(() => {
    const mq = window.matchMedia('(max-width: 600px)');
    const on = () => setNarrow(mq.matches);
    mq.addEventListener('change', on);
    return () => mq.removeEventListener('change', on);
  }, []);
  return narrow;
}

export function TopBar(props: {
  q: string; where: string; onSearch: (q: string, commit: boolean) => void; onSignOut: () => void; searchRef: RefObject<HTMLInputElement>; homeHref: string; onHome: () => void;
}): JSX.Element {
  const [text, setText] = useState(props.q);
  const narrow = useNarrow();
  const timer = useRef<ReturnType<typeof setTimeout>>();
  // The address changed (back, forward, a folder opened): the field follows.
  useEffect(() => {
    clearTimeout(timer.current);
    setText(props.q);
  }, [props.q, props.where]);

  const onInput = (value: string) => {
    setText(value);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => props.onSearch(value, false), 250);
  };
  const clear = () => {
    clearTimeout(timer.current);
    setText('');
    props.onSearch('', true);
    props.searchRef.current?.focus();
  };

  return (
    <header class="topbar">
      <a class="brand" href={props.homeHref} onClick={(e) => { if (e.button === 0 && !e.metaKey && !e.ctrlKey) { e.preventDefault(); props.onHome(); } }}>
        <span class="brand-mark"><LogoIcon size={20} /></span>
        <span class="brand-name">Coffer</span>
      </a>
      <PageNav current="files" />
      <form role="search" class="search" onSubmit={(e) => { e.preventDefault(); clearTimeout(timer.current); props.onSearch(text, true); }}>
        <SearchIcon size={18} class="search-icon" />
        <input
          ref={props.searchRef} type="search" class="search-input" value={text} autoComplete="off" spellcheck={false}
          placeholder={narrow ? 'Search' : props.where === 'All files' ? 'Search all files' : 'Search this folder'} aria-label={`Search by name in ${props.where}`} data-testid="search"
          onInput={(e) => onInput(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Escape' && text) {
              e.preventDefault();
              e.stopPropagation();
              clear();
            }
          }}
        />
        {text ? (
          <button type="button" class="icon-btn search-clear" aria-label="Clear search" onClick={clear}><CloseIcon size={16} /></button>
        ) : (
          <kbd class="search-kbd" aria-hidden="true">{MOD}+F</kbd>
        )}
      </form>
      <button type="button" class="btn btn-ghost signout" onClick={props.onSignOut} aria-label="Sign out" title="Sign out">
        <SignOutIcon /><span class="hide-narrow">Sign out</span>
      </button>
    </header>
  );
}

const SORTS: { value: string; label: string }[] = [
  { value: 'name:asc', label: 'Name (A–Z)' },
  { value: 'name:desc', label: 'Name (Z–A)' },
  { value: 'updated_at:desc', label: 'Modified (newest)' },
  { value: 'updated_at:asc', label: 'Modified (oldest)' },
  { value: 'created_at:desc', label: 'Uploaded (newest)' },
  { value: 'created_at:asc', label: 'Uploaded (oldest)' },
  { value: 'size:desc', label: 'Size (largest)' },
  { value: 'size:asc', label: 'Size (smallest)' },
];

export function Toolbar(props: {
  breadcrumbs: ComponentChildren; view: View; setView: (v: View) => void; sort: Sort; setSort: (s: Sort) => void;
  onNewFolder: () => void; onUpload: (visibility?: 'Private') => void; searching: boolean;
}): JSX.Element {
  const [menu, setMenu] = useState<MenuAnchor | null>(null);
  const more = useRef<HTMLButtonElement>(null);
  return (
    <div class="toolbar">
      <div class="toolbar-crumbs">{props.breadcrumbs}</div>
      <div class="toolbar-actions">
        <button type="button" class="btn" onClick={props.onNewFolder} aria-label="New folder" title="New folder">
          <FolderPlusIcon /><span class="hide-narrow">New folder</span>
        </button>
        <div class="split">
          <button type="button" class="btn btn-primary split-main" onClick={() => props.onUpload()} aria-label="Upload files" title="Upload files">
            <UploadIcon /><span class="hide-narrow">Upload</span>
          </button>
          <button ref={more} type="button" class="btn btn-primary split-more" aria-label="More upload options" aria-haspopup="menu" aria-expanded={menu !== null}
            onClick={() => {
              const r = more.current!.getBoundingClientRect();
              setMenu({ x: r.right, y: r.bottom + 4, returnTo: more.current });
            }}>
            <ChevronDownIcon size={16} />
          </button>
        </div>
        {menu && (
          <Menu label="Upload options" anchor={menu} onClose={() => setMenu(null)} items={[
            { id: 'upload-public', label: 'Upload files', icon: <UploadIcon />, run: () => props.onUpload() },
            { id: 'upload-private', label: 'Upload as Private', icon: <LockIcon />, run: () => props.onUpload('Private') },
          ]} />
        )}
        <label class="sort-select" title={props.searching ? 'Search results are sorted among those found' : 'Sort'}>
          <span class="sr-only">Sort by</span>
          <select class="select" value={`${props.sort.field}:${props.sort.order}`} data-testid="sort"
            onChange={(e) => {
              const [field, order] = e.currentTarget.value.split(':') as [Sort['field'], Sort['order']];
              props.setSort({ field, order });
            }}>
            {SORTS.map((s) => <option key={s.value} value={s.value}>{s.label}</option>)}
          </select>
          <ChevronDownIcon size={14} class="select-chevron" />
        </label>
        <div class="segmented view-toggle" role="group" aria-label="View">
          <button type="button" class={'seg' + (props.view === 'grid' ? ' checked' : '')} aria-pressed={props.view === 'grid'} aria-label="Grid view" title="Grid view"
            onClick={() => props.setView('grid')} data-testid="view-grid">
            <GridIcon />
          </button>
          <button type="button" class={'seg' + (props.view === 'list' ? ' checked' : '')} aria-pressed={props.view === 'list'} aria-label="List view" title="List view"
            onClick={() => props.setView('list')} data-testid="view-list">
            <ListIcon />
          </button>
        </div>
      </div>
    </div>
  );
}
