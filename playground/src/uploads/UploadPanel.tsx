/**
 * The upload panel: bottom right (full width on a phone), collapsible, one row per file
 * with a progress bar, percent, speed, time left, status, and Cancel / Retry. Failures
 * show the service's own message. Styles are in uploads.css (the CSP allows no inline
 * <style>; the bar's width is set through the CSSOM, which it does allow).
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { formatBytes, formatSpeed, formatTimeLeft, percent, splitName } from './format.js';
import type { UploadItem, UploadManager, UploadStatus } from './manager.js';
import './uploads.css';

const STATUS_LABEL: Record<UploadStatus, string> = {
  queued: 'Waiting',
  uploading: 'Uploading',
  done: 'Done',
  failed: 'Failed',
  canceled: 'Canceled',
};

const active = (i: UploadItem) => i.status === 'queued' || i.status === 'uploading';

function summary(items: UploadItem[]): string {
  const running = items.filter(active);
  const failed = items.filter((i) => i.status === 'failed').length;
  const done = items.filter((i) => i.status === 'done').length;
  const parts: string[] = [];
  if (running.length > 0) {
    const size = running.reduce((n, i) => n + i.size, 0);
    const loaded = running.reduce((n, i) => n + i.loaded, 0);
    parts.push(`Uploading ${running.length} ${running.length === 1 ? 'file' : 'files'} · ${percent(loaded, size)}%`);
  } else if (done > 0) {
    parts.push(`${done} ${done === 1 ? 'upload' : 'uploads'} done`);
  }
  if (failed > 0) parts.push(`${failed} failed`);
  if (parts.length === 0) parts.push('Uploads');
  return parts.join(' · ');
}

function Row({ item, manager }: { item: UploadItem; manager: UploadManager }): JSX.Element {
  const pct = percent(item.loaded, item.size);
  const [head, tail] = splitName(item.name);
  const details: string[] = [];
  if (item.status === 'uploading') {
    details.push(`${formatBytes(item.loaded)} of ${formatBytes(item.size)}`);
    const speed = formatSpeed(item.bytesPerSecond);
    if (speed) details.push(speed);
    const left = formatTimeLeft(item.secondsLeft);
    if (left) details.push(left);
  } else {
    details.push(formatBytes(item.size));
  }
  return (
    <li class="upl-item" data-status={item.status} data-upload-id={item.id}>
      <div class="upl-line">
        <span class="upl-name" title={item.name}>
          <span class="upl-name-head">{head}</span>
          {tail && <span class="upl-name-tail">{tail}</span>}
        </span>
        <span class="upl-status">
          {item.resumed && <span class="upl-badge" title="Continued from where it stopped: only the missing parts were sent">resumed</span>}
          <span class="upl-status-text">{STATUS_LABEL[item.status]}</span>
        </span>
      </div>
      <div
        class="upl-bar"
        role="progressbar"
        aria-label={`Upload of ${item.name}`}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={pct}
        aria-valuetext={`${pct}%, ${STATUS_LABEL[item.status].toLowerCase()}`}
      >
        <div class="upl-fill" style={{ width: `${pct}%` }} />
      </div>
      <div class="upl-line upl-meta">
        <span class="upl-pct">{pct}%</span>
        <span class="upl-details">{details.join(' · ')}</span>
        <span class="upl-actions">
          {active(item) && (
            <button type="button" class="upl-btn" aria-label={`Cancel upload of ${item.name}`} onClick={() => manager.cancel(item.id)}>
              Cancel
            </button>
          )}
          {(item.status === 'failed' || item.status === 'canceled') && (
            <button type="button" class="upl-btn" aria-label={`Retry upload of ${item.name}`} onClick={() => manager.retry(item.id)}>
              Retry
            </button>
          )}
        </span>
      </div>
      {item.error && <p class="upl-error">{item.error}</p>}
    </li>
  );
}

export function UploadPanel(props: { manager: UploadManager }): JSX.Element {
  const { manager } = props;
  const [items, setItems] = useState<UploadItem[]>(() => manager.items());
  const [collapsed, setCollapsed] = useState(false);
  const [announcement, setAnnouncement] = useState('');
  const seen = useRef(new Map<string, UploadStatus>());

  useEffect(() => {
    setItems(manager.items());
    return manager.subscribe(setItems);
  }, [manager]);

  // Screen readers hear each file's end (not every percent).
  useEffect(() => {
    const said: string[] = [];
    const next = new Map<string, UploadStatus>();
    for (const i of items) {
      const before = seen.current.get(i.id);
      next.set(i.id, i.status);
      if (before === i.status) continue;
      if (i.status === 'done') said.push(`${i.name} uploaded.`);
      else if (i.status === 'failed') said.push(`Upload of ${i.name} failed: ${i.error ?? ''}`);
      else if (i.status === 'canceled' && before) said.push(`Upload of ${i.name} canceled.`);
    }
    seen.current = next;
    if (said.length > 0) setAnnouncement(said.join(' '));
  }, [items]);

  // New files open a collapsed panel again.
  const queued = items.filter((i) => i.status === 'queued').length;
  useEffect(() => {
    if (queued > 0) setCollapsed(false);
  }, [queued]);

  const finished = items.some((i) => !active(i));
  return (
    <div class="upl-root">
      <div class="upl-sr" aria-live="polite" role="status">{announcement}</div>
      {items.length > 0 && (
        <section class={collapsed ? 'upl upl-collapsed' : 'upl'} aria-labelledby="upl-title">
          <header class="upl-head">
            <h2 id="upl-title" class="upl-title">{summary(items)}</h2>
            {finished && (
              <button type="button" class="upl-btn" onClick={() => manager.clearFinished()}>
                Clear finished
              </button>
            )}
            <button
              type="button"
              class="upl-btn upl-toggle"
              aria-expanded={!collapsed}
              aria-controls="upl-list"
              aria-label={collapsed ? 'Show uploads' : 'Hide uploads'}
              title={collapsed ? 'Show uploads' : 'Hide uploads'}
              onClick={() => setCollapsed(!collapsed)}
            >
              <span aria-hidden="true" class="upl-chevron" />
            </button>
          </header>
          <ul id="upl-list" class="upl-list" hidden={collapsed}>
            {items.map((item) => <Row key={item.id} item={item} manager={manager} />)}
          </ul>
        </section>
      )}
    </div>
  );
}
