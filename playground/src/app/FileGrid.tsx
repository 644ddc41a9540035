/**
 * The grid view: cards with a thumbnail or type icon, a visibility badge, size and date.
 * Rows of N cards (N from the width), virtualized like the list.
 */
import type { JSX } from 'preact';
import { useRef } from 'preact/hooks';
import { domId, pathText, type Entry } from './entries.js';
import { formatSize } from './format.js';
import { CloseIcon, FolderIcon, MoreIcon, TypeIcon } from './icons.js';
import { ListFooter } from './FileList.js';
import { fileTypeFor } from '../../../src/sdk/index.js';
import { NameText, ProgressBar, progressWords, RelTime, Thumb, VisibilityBadge } from './parts.js';
import { useGridKeys } from './useGridKeys.js';
import { clickPick, dragSource, folderDropTarget, type ViewProps } from './views.js';
import { useNearEnd, useViewport, windowOf } from './virtual.js';

/** Card sizes: a compact grid below this width (phones). */
const COMPACT_BELOW = 560;
interface Metrics { cardMin: number; gap: number; pad: number; rowH: number; compact: boolean }
const metricsFor = (width: number): Metrics => (width < COMPACT_BELOW
  ? { cardMin: 136, gap: 10, pad: 10, rowH: 184 + 10, compact: true }
  : { cardMin: 172, gap: 14, pad: 16, rowH: 216 + 14, compact: false });

export const columnsFor = (width: number, m: Metrics = metricsFor(width)): number => Math.max(1, Math.floor((width - 2 * m.pad + m.gap) / (m.cardMin + m.gap)));

export function FileGrid(props: ViewProps): JSX.Element {
  const scroller = useRef<HTMLDivElement>(null);
  const grid = useRef<HTMLDivElement>(null);
  const vp = useViewport(scroller);
  const m = metricsFor(vp.width);
  const cols = columnsFor(vp.width, m);
  const GRID_ROW_H = m.rowH;
  const PAD = m.pad;
  const count = props.entries.length;
  const rowCount = Math.ceil(count / cols);
  const win = windowOf(vp, rowCount, GRID_ROW_H, PAD, 3);
  useNearEnd({ ...win, end: win.end * cols }, count, props.hasMore, props.loadingMore || props.moreError !== null, props.loadMore, 30);
  const { activeIndex, onKeyDown } = useGridKeys(props, scroller, grid, { cols, rowH: GRID_ROW_H, top: 0, margin: PAD, height: vp.height });

  const rows: JSX.Element[] = [];
  for (let r = win.start; r < win.end; r++) {
    const cards: JSX.Element[] = [];
    for (let c = 0; c < cols; c++) {
      const i = r * cols + c;
      const entry = props.entries[i];
      if (!entry) break;
      cards.push(<Card key={entry.key} entry={entry} active={i === activeIndex} props={props} grid={grid} root={scroller.current} colIndex={c + 1} />);
    }
    rows.push(
      <div role="row" class="card-row" key={r} aria-rowindex={r + 1} style={{ transform: `translateY(${PAD + r * GRID_ROW_H}px)`, '--cols': String(cols) }}>
        {cards}
      </div>,
    );
  }

  const activeVisible = activeIndex >= 0 && Math.floor(activeIndex / cols) >= win.start && Math.floor(activeIndex / cols) < win.end;
  return (
    <div ref={scroller} class="scroller grid-scroller" data-testid="scroller">
      <div
        ref={grid} role="grid" class={'cards' + (m.compact ? ' compact' : '')} tabIndex={0} data-focus-home aria-label={props.label}
        aria-rowcount={props.hasMore ? -1 : rowCount} aria-colcount={cols} aria-multiselectable="true"
        aria-activedescendant={activeVisible ? domId(props.entries[activeIndex]!.key) : undefined}
        style={{ height: `${win.total + 2 * PAD}px` }}
        onKeyDown={onKeyDown}
        onFocus={() => { if (activeIndex < 0 && count > 0 && win.start === 0) props.setActive(props.entries[0]!.key); }}
      >
        {rows}
      </div>
      <ListFooter {...props} />
    </div>
  );
}

function Card({ entry, active, props, grid, root, colIndex }: {
  entry: Entry; active: boolean; props: ViewProps; grid: { current: HTMLDivElement | null }; root: HTMLElement | null; colIndex: number;
}): JSX.Element {
  const select = (e: MouseEvent) => {
    clickPick(e, entry, props);
    grid.current?.focus({ preventScroll: true });
  };
  const selected = props.selected.has(entry.key);
  const menuAt = (x: number, y: number) => props.showMenu(entry, { x, y, returnTo: grid.current });
  const isDrop = props.dropKey === entry.key;
  const drop = folderDropTarget(entry, props);

  let visual: JSX.Element;
  let title: JSX.Element;
  let meta: JSX.Element;
  if (entry.kind === 'folder') {
    const f = entry.folder;
    visual = <div class="thumb type-folder"><span class="thumb-icon"><FolderIcon size={48} /></span></div>;
    title = (
      <a class="card-name link" href={props.folderHref(f.folder_id)} tabIndex={-1} draggable={false}
        onClick={(e) => { if (e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey) { e.preventDefault(); props.open(entry); } }}>
        <NameText name={f.name} />
      </a>
    );
    meta = <><VisibilityBadge compact visibility={f.visibility} effective={f.effective_visibility} /><span>Folder</span><span aria-hidden="true">·</span><RelTime iso={f.updated_at} now={props.now} /></>;
  } else if (entry.kind === 'file') {
    const f = entry.file;
    visual = <Thumb key={`${f.file_id}|${f.effective_visibility}|${f.updated_at}`} file={f} root={root} />;
    title = (
      <button type="button" class="card-name link" tabIndex={-1} onClick={(e) => { if (!e.ctrlKey && !e.metaKey && !e.shiftKey) props.open(entry); }}>
        <NameText name={f.name} />
      </button>
    );
    meta = <><VisibilityBadge compact visibility={f.visibility} effective={f.effective_visibility} /><span>{formatSize(f.size)}</span><span aria-hidden="true">·</span><RelTime iso={f.updated_at} now={props.now} /></>;
  } else {
    const u = entry.upload;
    const type = fileTypeFor(u.name);
    visual = (
      <div class={`thumb type-${type} uploading`}>
        <span class="thumb-icon"><TypeIcon type={type} size={40} /></span>
        <div class="thumb-progress"><ProgressBar item={u} /></div>
      </div>
    );
    title = <span class="card-name"><NameText name={u.name} /></span>;
    meta = u.status === 'queued'
      ? <><span class="upload-label">Waiting</span><span aria-hidden="true">·</span><span>{formatSize(u.size)}</span></>
      : <><span class="upload-label">Uploading</span><span aria-hidden="true">·</span><span>{progressWords(u, true)}</span></>;
  }

  return (
    <div
      role="gridcell" id={domId(entry.key)} aria-selected={selected} aria-colindex={colIndex}
      class={`card${active ? ' active' : ''}${selected ? ' selected' : ''}${isDrop ? ' drop-target' : ''} kind-${entry.kind}`}
      data-testid="card" data-kind={entry.kind} data-name={entry.name}
      onClick={select}
      onDblClick={() => props.open(entry)}
      onContextMenu={(e) => { if (entry.kind === 'upload') return; e.preventDefault(); if (!selected) props.setActive(entry.key); menuAt(e.clientX, e.clientY); }}
      {...dragSource(entry, props)}
      {...drop}
    >
      {visual}
      <div class="card-info">
        <div class="card-title">
          {title}
          {entry.kind === 'upload' ? (
            <button type="button" class="icon-btn more-btn" tabIndex={-1} aria-label={`Cancel upload of ${entry.name}`} title="Cancel upload"
              onClick={(e) => { e.stopPropagation(); props.cancelUpload(entry.upload.id); }}>
              <CloseIcon size={16} />
            </button>
          ) : (
            <button type="button" class="icon-btn more-btn" tabIndex={-1} aria-label={`Actions for ${entry.name}`} aria-haspopup="menu" title="Actions"
              onClick={(e) => {
                e.stopPropagation();
                if (!selected) props.setActive(entry.key);
                const r = (e.currentTarget as HTMLElement).getBoundingClientRect();
                menuAt(r.right - 4, r.bottom + 4);
              }}>
              <MoreIcon size={16} />
            </button>
          )}
        </div>
        {entry.kind !== 'upload' && entry.where
          ? <div class="card-meta"><span class="card-path" data-testid="hit-path" title={pathText(entry.where)}>in {pathText(entry.where)}</span></div>
          : <div class="card-meta">{meta}</div>}
      </div>
    </div>
  );
}
