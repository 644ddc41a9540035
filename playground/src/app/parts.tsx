/** Small pieces shared by the list and the grid. */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { FileRecord } from '../../../src/sdk/index.js';
import type { UploadItem } from '../uploads/manager.js';
import { formatEta, formatExact, formatRelative, formatSize, splitName } from './format.js';
import { FolderIcon, GlobeIcon, LockIcon, TypeIcon } from './icons.js';
import { GRID_THUMB_WIDTH, cachedThumb, thumbUrl } from './thumbs.js';

/**
 * A name shortened in the middle by CSS when it does not fit; the full name on hover. Its two
 * visible halves are laid out as separate boxes, which screen readers would read as two words,
 * so they hear the whole name from a hidden copy instead.
 */
export function NameText(props: { name: string; class?: string }): JSX.Element {
  // The S3 object of a key ending in "/" (`a/` with bytes) is the file of the empty name in `a`.
  if (props.name === '') {
    const why = 'The S3 object at this folder\'s own key (ending in "/"); rename it to give it a name';
    return (
      <span class={'name name-folder-key' + (props.class ? ' ' + props.class : '')} title={why}>
        <span class="name-shown" aria-hidden="true"><span class="name-head">/</span></span>
        <span class="sr-only">{why}</span>
      </span>
    );
  }
  const [head, tail] = splitName(props.name);
  return (
    <span class={'name' + (props.class ? ' ' + props.class : '')} title={props.name}>
      <span class="name-shown" aria-hidden="true">
        <span class="name-head">{head}</span>
        {tail && <span class="name-tail">{tail}</span>}
      </span>
      <span class="sr-only">{props.name}</span>
    </span>
  );
}

/** A time relative to now, with the exact time on hover and for screen readers. */
export function RelTime(props: { iso: string; now: number; prefix?: string }): JSX.Element {
  const exact = formatExact(props.iso);
  return (
    <time dateTime={props.iso} title={exact} class="reltime">
      <span aria-hidden="true">{props.prefix}{formatRelative(props.iso, props.now)}</span>
      <span class="sr-only">{props.prefix}{formatRelative(props.iso, props.now)}, {exact}</span>
    </time>
  );
}

/** Public or Private: what counts for access is the effective visibility. */
export function VisibilityBadge(props: { visibility: 'Public' | 'Private'; effective: 'Public' | 'Private'; compact?: boolean }): JSX.Element {
  const priv = props.effective === 'Private';
  const inherited = props.visibility === 'Public' && priv;
  const title = inherited
    ? 'Private: it is inside a Private folder, so its files need a signed link'
    : priv ? 'Private: files need a signed link' : 'Public: anyone with the delivery URL can download';
  return (
    <span class={`badge ${priv ? 'badge-private' : 'badge-public'}${props.compact ? ' badge-compact' : ''}`} title={title}>
      {priv ? <LockIcon size={12} /> : <GlobeIcon size={12} />}
      <span class={props.compact ? 'sr-only' : ''}>{priv ? 'Private' : 'Public'}</span>
      {inherited && !props.compact && <span class="badge-note">(folder)</span>}
    </span>
  );
}

export function EntryIcon(props: { kind: 'folder' | 'file'; type?: string; size?: number }): JSX.Element {
  return props.kind === 'folder'
    ? <span class="type-icon type-folder"><FolderIcon size={props.size ?? 20} /></span>
    : <span class={`type-icon type-${props.type ?? 'other'}`}><TypeIcon type={props.type ?? 'other'} size={props.size ?? 20} /></span>;
}

const percentOf = (item: UploadItem): number =>
  item.size > 0 ? Math.min(100, Math.floor((item.loaded / item.size) * 100)) : item.status === 'done' ? 100 : 0;

/** An upload's progress in words: "Waiting…", "42% · 5 MiB of 12 MiB · 9 s left". */
export function progressWords(item: UploadItem, short = false): string {
  if (item.status === 'queued') return 'Waiting…';
  const eta = item.secondsLeft !== null ? ' · ' + formatEta(item.secondsLeft) : '';
  return short ? `${percentOf(item)}%${eta}` : `${percentOf(item)}% · ${formatSize(item.loaded)} of ${formatSize(item.size)}${eta}`;
}

export function ProgressBar(props: { item: UploadItem }): JSX.Element {
  const pct = percentOf(props.item);
  return (
    <div class="progress" role="progressbar" aria-label={`Uploading ${props.item.name}`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct}>
      <div class="progress-fill" style={{ width: `${pct}%` }} />
    </div>
  );
}

/** Progress of an upload, as a bar and words. */
export function UploadProgress(props: { item: UploadItem; compact?: boolean }): JSX.Element {
  return (
    <div class={'inline-progress' + (props.compact ? ' compact' : '')}>
      <ProgressBar item={props.item} />
      <span class="progress-words">{progressWords(props.item)}</span>
    </div>
  );
}

/**
 * An image's thumbnail, fetched only once its card is in view; the type icon until it
 * loads, or when it cannot (an SVG is never shown inline by the delivery network).
 */
export function Thumb(props: { file: FileRecord; root: HTMLElement | null; width?: number }): JSX.Element {
  const { file } = props;
  const width = props.width ?? GRID_THUMB_WIDTH;
  const ref = useRef<HTMLDivElement>(null);
  const [url, setUrl] = useState<string | null>(() => cachedThumb(file, width));
  const [loaded, setLoaded] = useState(false);
  const [failed, setFailed] = useState(false);
  const isImage = file.file_type === 'image' && file.status === 'ready' && !/svg/i.test(file.content_type);

  // Callers key a Thumb by the file's id, visibility and version: a new one starts afresh.
  useEffect(() => {
    if (!isImage || url) return;
    const el = ref.current;
    if (!el) return;
    let live = true;
    const io = new IntersectionObserver((seen) => {
      if (!seen.some((e) => e.isIntersecting)) return;
      io.disconnect();
      void thumbUrl(file, width).then((u) => { if (live) setUrl(u); });
    }, { root: props.root, rootMargin: '100px' });
    io.observe(el);
    return () => { live = false; io.disconnect(); };
  }, []);

  return (
    <div ref={ref} class={`thumb type-${file.file_type}${loaded ? ' thumb-loaded' : ''}`}>
      <span class="thumb-icon"><TypeIcon type={file.file_type} size={40} /></span>
      {isImage && url && !failed && (
        <img src={url} alt="" loading="lazy" decoding="async" draggable={false}
          onLoad={() => setLoaded(true)} onError={() => setFailed(true)} />
      )}
    </div>
  );
}

/** A file's record, as short words: "Image · 7 MiB". */
export const fileSummary = (f: FileRecord): string => `${f.file_type[0]!.toUpperCase()}${f.file_type.slice(1)} · ${formatSize(f.size)}`;
