/**
 * Chooses a folder from the tree, one level at a time: a click selects a folder, Enter, →
 * or a double click opens it, ← or Backspace goes up; "Choose" takes the selected folder,
 * or the open one when none is selected. Any dialog that needs a folder can use it.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { FolderRecord } from '../../../../src/sdk/index.js';
import { CofferError } from '../../../../src/sdk/index.js';
import { client } from '../../api.js';
import { domId } from '../entries.js';
import { errorMessage, middleEllipsis } from '../format.js';
import { ChevronRightIcon, FolderIcon, HomeIcon, LockIcon } from '../icons.js';
import { Modal } from './Modal.js';
import './picker.css';

const PAGE = 200;

/** A folder and the folders above it, outermost first; the root is an empty path. */
export type FolderPath = FolderRecord[];

interface Level {
  status: 'loading' | 'ready' | 'error';
  error: unknown;
  path: FolderPath;
  folders: FolderRecord[];
  /** More folders may follow (a page held nothing but folders). */
  cursor: string | null;
}

export function FolderPickerDialog(props: {
  /** Where the picker opens: a folder's id, or null for All files. */
  start: string | null;
  /** A folder inside `start` to select at first (the one chosen before). */
  select?: string | null;
  title?: string;
  /** What choosing the folder (or nothing: null) will mean, under the list. */
  hint?: (chosen: FolderRecord | null) => ComponentChildren;
  /** The choose button's words for the folder it would choose (default "Choose “name”"). */
  chooseLabel?: (chosen: FolderRecord | null) => string;
  onChoose: (path: FolderPath) => void;
  onClose: () => void;
}): JSX.Element {
  const [at, setAt] = useState<string | null>(props.start);
  const [level, setLevel] = useState<Level>({ status: 'loading', error: null, path: [], folders: [], cursor: null });
  const [selected, setSelected] = useState<string | null>(null);
  const [moreBusy, setMoreBusy] = useState(false);
  const [reloads, setReloads] = useState(0);
  const listRef = useRef<HTMLDivElement>(null);
  const cameFrom = useRef<string | null>(props.select ?? null);

  useEffect(() => {
    const ac = new AbortController();
    setLevel((l) => ({ ...l, status: 'loading', folders: [], cursor: null }));
    client.list({ folder_id: at, limit: PAGE, sort: 'name', order: 'asc' }, { signal: ac.signal }).then(
      (page) => {
        setLevel({ status: 'ready', error: null, path: page.breadcrumbs, folders: page.folders, cursor: page.files.length === 0 ? page.next_cursor : null });
        // Going up selects the folder we came from, so the way back is one key away (at first: the one chosen before).
        const back = cameFrom.current;
        cameFrom.current = null;
        setSelected(back && page.folders.some((f) => f.folder_id === back) ? back : null);
      },
      (err: unknown) => { if (!ac.signal.aborted) setLevel((l) => ({ ...l, status: 'error', error: err })); },
    );
    return () => ac.abort();
  }, [at, reloads]);

  const loadMore = async () => {
    if (!level.cursor || moreBusy) return;
    setMoreBusy(true);
    try {
      const page = await client.list({ folder_id: at, limit: PAGE, cursor: level.cursor, sort: 'name', order: 'asc' });
      setLevel((l) => ({ ...l, folders: [...l.folders, ...page.folders], cursor: page.files.length === 0 ? page.next_cursor : null }));
    } catch (err) {
      setLevel((l) => ({ ...l, status: 'error', error: err }));
    } finally {
      setMoreBusy(false);
    }
  };

  const go = (folderId: string | null) => {
    setSelected(null);
    setAt(folderId);
    listRef.current?.focus();
  };
  const up = () => {
    if (at === null) return;
    cameFrom.current = at;
    go(level.path.length > 1 ? level.path[level.path.length - 2]!.folder_id : null);
  };

  const chosenChild = level.folders.find((f) => f.folder_id === selected) ?? null;
  const here = level.path[level.path.length - 1] ?? null;
  const chosen = chosenChild ?? here;
  const choose = () => {
    if (level.status !== 'ready') return;
    props.onChoose(chosenChild ? [...level.path, chosenChild] : level.path);
  };

  const onKeyDown = (e: KeyboardEvent) => {
    const ids = level.folders.map((f) => f.folder_id);
    const i = selected ? ids.indexOf(selected) : -1;
    const pick = (n: number) => {
      const id = ids[Math.max(0, Math.min(ids.length - 1, n))];
      if (id === undefined) return;
      setSelected(id);
      document.getElementById(domId('pick-' + id))?.scrollIntoView({ block: 'nearest' });
    };
    if (e.key === 'ArrowDown') pick(i + 1);
    else if (e.key === 'ArrowUp') pick(i < 0 ? ids.length - 1 : i - 1);
    else if (e.key === 'Home') pick(0);
    else if (e.key === 'End') pick(ids.length - 1);
    else if ((e.key === 'Enter' || e.key === 'ArrowRight') && selected) go(selected);
    else if (e.key === 'ArrowLeft' || e.key === 'Backspace' || (e.altKey && e.key === 'ArrowUp')) up();
    else return;
    e.preventDefault();
    e.stopPropagation();
  };

  const notFound = level.error instanceof CofferError && level.error.code === 'folder_not_found';
  const whereName = here ? here.name : 'All files';
  return (
    <Modal
      title={props.title ?? 'Choose a folder'} icon={<FolderIcon />} size="medium" testId="folder-picker"
      description="Open a folder to see what is inside; select one and choose it."
      onClose={props.onClose}
      footer={<>
        <button type="button" class="btn" onClick={props.onClose}>Cancel</button>
        <button type="button" class="btn btn-primary" onClick={choose} disabled={level.status !== 'ready'} data-testid="picker-choose">
          {props.chooseLabel ? props.chooseLabel(chosen) : chosen ? `Choose “${middleEllipsis(chosen.name, 28)}”` : 'Choose All files'}
        </button>
      </>}
    >
      <nav class="picker-crumbs" aria-label="Folder path">
        <button type="button" class="picker-crumb" onClick={() => go(null)} aria-current={at === null ? 'location' : undefined}>
          <HomeIcon size={15} /><span>All files</span>
        </button>
        {level.path.map((f, i) => (
          <span key={f.folder_id} class="picker-step">
            <ChevronRightIcon size={13} class="crumb-sep" />
            <button type="button" class="picker-crumb" onClick={() => go(f.folder_id)} title={f.name}
              aria-current={i === level.path.length - 1 ? 'location' : undefined}>
              <span class="picker-crumb-text">{f.name}</span>
            </button>
          </span>
        ))}
      </nav>
      <div
        ref={listRef} class="picker-list" role="listbox" tabIndex={0} data-autofocus aria-label={`Folders in ${whereName}`}
        aria-activedescendant={selected ? domId('pick-' + selected) : undefined} aria-busy={level.status === 'loading'}
        onKeyDown={onKeyDown}
      >
        {level.status === 'loading' && <p class="picker-note muted"><span class="spinner" aria-hidden="true" /> Loading folders…</p>}
        {level.status === 'error' && (
          <div class="picker-note" role="alert">
            <p class="form-error">{notFound ? 'This folder no longer exists.' : errorMessage(level.error)}</p>
            <button type="button" class="btn btn-small" onClick={() => (notFound ? go(null) : setReloads((n) => n + 1))}>
              {notFound ? 'Go to All files' : 'Try again'}
            </button>
          </div>
        )}
        {level.status === 'ready' && level.folders.length === 0 && (
          <p class="picker-note muted">No folders inside “{whereName}”. You can choose it as it is.</p>
        )}
        {level.status === 'ready' && level.folders.map((f) => (
          <div
            key={f.folder_id} id={domId('pick-' + f.folder_id)} role="option" aria-selected={f.folder_id === selected}
            class={'picker-row' + (f.folder_id === selected ? ' selected' : '')} data-name={f.name}
            onClick={() => { setSelected(f.folder_id); listRef.current?.focus(); }} onDblClick={() => go(f.folder_id)}
          >
            <span class="type-icon type-folder"><FolderIcon size={18} /></span>
            <span class="picker-name" title={f.name}>{f.name}</span>
            {f.effective_visibility === 'Private' && <span class="picker-private" title="Private"><LockIcon size={13} /><span class="sr-only">Private</span></span>}
            {/* For the mouse; the keyboard opens with Enter or →. */}
            <span class="picker-open" title="Open" aria-hidden="true" onClick={(e) => { e.stopPropagation(); go(f.folder_id); }}>
              <ChevronRightIcon size={16} />
            </span>
          </div>
        ))}
        {level.status === 'ready' && level.cursor && (
          <button type="button" class="btn btn-small picker-more" onClick={() => void loadMore()} disabled={moreBusy}>
            {moreBusy ? 'Loading…' : 'Show more folders'}
          </button>
        )}
      </div>
      {props.hint && <p class="hint" aria-live="polite">{props.hint(chosen)}</p>}
    </Modal>
  );
}
