/**
 * The list view: an ARIA grid of name, size, modified time, type and visibility, sortable
 * by its column headers, virtualized (only the rows in view are in the page).
 */
import type { JSX } from 'preact';
import { useRef } from 'preact/hooks';
import { fileTypeFor } from '../../../src/sdk/index.js';
import { domId, pathText, type Entry } from './entries.js';
import { formatSize, TYPE_LABELS } from './format.js';
import { ArrowDownIcon, ArrowUpIcon, CloseIcon, MoreIcon } from './icons.js';
import { EntryIcon, NameText, RelTime, UploadProgress, VisibilityBadge } from './parts.js';
import type { SortField } from './state/prefs.js';
import { useGridKeys } from './useGridKeys.js';
import { clickPick, dragSource, folderDropTarget, type ViewProps } from './views.js';
import { useNearEnd, useViewport, windowOf } from './virtual.js';

export const ROW_H = 52;
const HEAD_H = 40;

interface Column { id: string; label: string; sort: SortField | null; class: string }
const COLUMNS: Column[] = [
  { id: 'name', label: 'Name', sort: 'name', class: 'col-name' },
  { id: 'size', label: 'Size', sort: 'size', class: 'col-size' },
  { id: 'modified', label: 'Modified', sort: 'updated_at', class: 'col-modified' },
  { id: 'type', label: 'Type', sort: null, class: 'col-type' },
  { id: 'visibility', label: 'Visibility', sort: null, class: 'col-visibility' },
];

export function FileList(props: ViewProps): JSX.Element {
  const scroller = useRef<HTMLDivElement>(null);
  const grid = useRef<HTMLDivElement>(null);
  const vp = useViewport(scroller);
  const count = props.entries.length;
  const win = windowOf(vp, count, ROW_H, HEAD_H);
  useNearEnd(win, count, props.hasMore, props.loadingMore || props.moreError !== null, props.loadMore);
  const { activeIndex, onKeyDown } = useGridKeys(props, scroller, grid, { cols: 1, rowH: ROW_H, top: HEAD_H, margin: HEAD_H, height: vp.height });

  const rows: JSX.Element[] = [];
  for (let i = win.start; i < win.end; i++) {
    const entry = props.entries[i]!;
    rows.push(<Row key={entry.key} entry={entry} index={i} active={i === activeIndex} props={props} grid={grid} />);
  }

  const sortHeader = (c: Column) => {
    const on = c.sort !== null && props.sort.field === c.sort;
    const ariaSort = on ? (props.sort.order === 'asc' ? 'ascending' : 'descending') : c.sort ? 'none' : undefined;
    return (
      <div role="columnheader" class={`cell head ${c.class}`} aria-sort={ariaSort} key={c.id}>
        {c.sort ? (
          <button type="button" class={'sort-btn' + (on ? ' on' : '')} tabIndex={-1} onClick={() => props.onSort(c.sort!)}
            title={`Sort by ${c.label.toLowerCase()}`}>
            <span>{c.label}</span>
            {on && (props.sort.order === 'asc' ? <ArrowUpIcon size={14} /> : <ArrowDownIcon size={14} />)}
          </button>
        ) : (
          <span class="head-label" title={`Sorting by ${c.label.toLowerCase()} is not available`}>{c.label}</span>
        )}
      </div>
    );
  };

  return (
    <div ref={scroller} class="scroller list-scroller" data-testid="scroller">
      <div
        ref={grid} role="grid" class="list" tabIndex={0} data-focus-home aria-label={props.label}
        aria-rowcount={props.hasMore ? -1 : count + 1} aria-colcount={7} aria-multiselectable="true"
        aria-activedescendant={activeIndex >= 0 && activeIndex >= win.start && activeIndex < win.end ? domId(props.entries[activeIndex]!.key) : undefined}
        onKeyDown={onKeyDown}
        onFocus={() => { if (activeIndex < 0 && count > 0 && win.start === 0) props.setActive(props.entries[0]!.key); }}
      >
        <div role="rowgroup" class="list-head">
          <div role="row" class="list-row head-row" aria-rowindex={1}>
            <SelectAllHeader {...props} />
            {COLUMNS.map(sortHeader)}
            <div role="columnheader" class="cell head col-actions"><span class="sr-only">Actions</span></div>
          </div>
        </div>
        <div role="rowgroup" class="list-body" style={{ height: `${win.total}px` }}>
          {rows}
        </div>
      </div>
      <ListFooter {...props} />
    </div>
  );
}

export function ListFooter(props: Pick<ViewProps, 'hasMore' | 'loadingMore' | 'moreError' | 'loadMore' | 'entries'>): JSX.Element | null {
  if (props.moreError) {
    return (
      <div class="list-footer error" role="alert">
        <span>{props.moreError}</span>
        <button type="button" class="btn btn-small" onClick={props.loadMore}>Try again</button>
      </div>
    );
  }
  if (props.hasMore || props.loadingMore) {
    return <div class="list-footer" aria-live="polite"><span class="spinner" aria-hidden="true" /> Loading more…</div>;
  }
  return null;
}

/** The check box above the check box column: selects every entry shown, or none. */
function SelectAllHeader(props: ViewProps): JSX.Element {
  const selectable = props.entries.filter((e) => e.kind !== 'upload');
  const chosen = selectable.filter((e) => props.selected.has(e.key)).length;
  const all = selectable.length > 0 && chosen === selectable.length;
  return (
    <div role="columnheader" class="cell head col-check">
      <input type="checkbox" class="check" tabIndex={-1} checked={all} aria-label="Select all"
        ref={(el) => { if (el) el.indeterminate = !all && chosen > 1; }}
        onClick={(e) => { e.stopPropagation(); if (all) props.clearSelection(); else props.selectAll(); }} />
    </div>
  );
}

function Row({ entry, index, active, props, grid }: { entry: Entry; index: number; active: boolean; props: ViewProps; grid: { current: HTMLDivElement | null } }): JSX.Element {
  const select = (e: MouseEvent) => {
    clickPick(e, entry, props);
    grid.current?.focus({ preventScroll: true });
  };
  const selected = props.selected.has(entry.key);
  const menuAt = (x: number, y: number) => props.showMenu(entry, { x, y, returnTo: grid.current });
  const isDrop = props.dropKey === entry.key;
  const drop = folderDropTarget(entry, props);

  let name: JSX.Element;
  let size = '—';
  let modified: JSX.Element | string = '—';
  let type = '';
  let badge: JSX.Element | null = null;
  let sub: JSX.Element | null = null;
  if (entry.kind === 'folder') {
    const f = entry.folder;
    name = (
      <a class="row-name link" href={props.folderHref(f.folder_id)} tabIndex={-1} draggable={false}
        onClick={(e) => { if (e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey) { e.preventDefault(); props.open(entry); } }}>
        <NameText name={f.name} />
      </a>
    );
    modified = <RelTime iso={f.updated_at} now={props.now} />;
    type = 'Folder';
    badge = <VisibilityBadge visibility={f.visibility} effective={f.effective_visibility} />;
    sub = <span class="row-sub">Folder · <RelTime iso={f.updated_at} now={props.now} /></span>;
  } else if (entry.kind === 'file') {
    const f = entry.file;
    name = (
      <button type="button" class="row-name link" tabIndex={-1} onClick={(e) => { if (!e.ctrlKey && !e.metaKey && !e.shiftKey) props.open(entry); }}>
        <NameText name={f.name} />
      </button>
    );
    size = formatSize(f.size);
    modified = <RelTime iso={f.updated_at} now={props.now} />;
    type = TYPE_LABELS[f.file_type] ?? 'Other';
    badge = <VisibilityBadge visibility={f.visibility} effective={f.effective_visibility} />;
    sub = <span class="row-sub">{formatSize(f.size)} · <RelTime iso={f.updated_at} now={props.now} /></span>;
  } else {
    const u = entry.upload;
    name = <span class="row-name"><NameText name={u.name} /></span>;
    size = formatSize(u.size);
    modified = u.status === 'queued' ? 'Waiting' : 'Uploading';
    type = 'Upload';
  }

  return (
    <div
      role="row" id={domId(entry.key)} aria-rowindex={index + 2} aria-selected={selected}
      class={`list-row${active ? ' active' : ''}${selected ? ' selected' : ''}${isDrop ? ' drop-target' : ''} kind-${entry.kind}`}
      style={{ transform: `translateY(${index * ROW_H}px)` }}
      data-testid="row" data-kind={entry.kind} data-name={entry.name}
      onClick={select}
      onDblClick={() => props.open(entry)}
      onContextMenu={(e) => { if (entry.kind === 'upload') return; e.preventDefault(); if (!selected) props.setActive(entry.key); menuAt(e.clientX, e.clientY); }}
      {...dragSource(entry, props)}
      {...drop}
    >
      <div role="gridcell" class="cell col-check">
        {entry.kind !== 'upload' && (
          <input type="checkbox" class="check" tabIndex={-1} checked={selected} aria-label={`Select ${entry.name}`}
            onClick={(e) => { e.stopPropagation(); props.pick(entry.key, { toggle: true, range: e.shiftKey }); grid.current?.focus({ preventScroll: true }); }} />
        )}
      </div>
      <div role="gridcell" class="cell col-name">
        <EntryIcon kind={entry.kind === 'folder' ? 'folder' : 'file'} type={entry.kind === 'file' ? entry.file.file_type : entry.kind === 'upload' ? fileTypeFor(entry.name) : 'other'} />
        <div class="name-stack">
          {name}
          {entry.kind === 'upload' ? <UploadProgress item={entry.upload} compact /> : sub}
          {entry.kind !== 'upload' && entry.where && <span class="row-path" data-testid="hit-path">in {pathText(entry.where)}</span>}
        </div>
      </div>
      <div role="gridcell" class="cell col-size num">{size}</div>
      <div role="gridcell" class="cell col-modified">{modified}</div>
      <div role="gridcell" class="cell col-type">{type}</div>
      <div role="gridcell" class="cell col-visibility">{badge}</div>
      <div role="gridcell" class="cell col-actions">
        {entry.kind === 'upload' ? (
          <button type="button" class="icon-btn more-btn" tabIndex={-1} aria-label={`Cancel upload of ${entry.name}`} title="Cancel upload"
            onClick={(e) => { e.stopPropagation(); props.cancelUpload(entry.upload.id); }}>
            <CloseIcon />
          </button>
        ) : (
          <button type="button" class="icon-btn more-btn" tabIndex={-1} aria-label={`Actions for ${entry.name}`} aria-haspopup="menu" title="Actions"
            onClick={(e) => {
              e.stopPropagation();
              if (!selected) props.setActive(entry.key);
              const r = (e.currentTarget as HTMLElement).getBoundingClientRect();
              menuAt(r.right - 4, r.bottom + 4);
            }}>
            <MoreIcon />
          </button>
        )}
      </div>
    </div>
  );
}
