/**
 * The Playground's upload queue. The page only keeps the list: every upload runs in a
 * Web Worker (upload-worker.ts) that reads and sends the chunks, so the page stays
 * responsive however large the files are.
 *
 * Workers: a pool of at most MAX_FILES dedicated workers, each running one file at a time
 * with 4 parts in flight (so at most 2 × 4 part requests at once). One worker per running
 * file rather than one for all: reading 5 MiB parts (and base64-encoding them for a server
 * without raw parts) is work, and two workers use two cores for it; a file's failure or a
 * crash of its worker touches no other file.
 * Workers are reused for the next file in the queue, and ended after a minute idle.
 */
import type { FileRecord } from '../../../src/sdk/index.js';
import type { FromWorker, ToWorker, Visibility } from './protocol.js';
import { resumeKey } from './resume-db.js';

export type UploadStatus = 'queued' | 'uploading' | 'done' | 'failed' | 'canceled';

export interface UploadItem {
  id: string;
  name: string;
  size: number;
  folderId: string | null;
  status: UploadStatus;
  /** Bytes sent so far (parts the service had from before a reload included). */
  loaded: number;
  bytesPerSecond: number;
  secondsLeft: number | null;
  /** The service's message when it answered with an error. */
  error: string | null;
  /** The stored file once done. */
  record: FileRecord | null;
  /** This upload continued one the service already had parts of. */
  resumed: boolean;
}

export interface UploadManager {
  add(files: File[], opts: { folderId: string | null; visibility?: 'Public' | 'Private' }): void;
  cancel(id: string): void;
  retry(id: string): void;
  clearFinished(): void;
  items(): UploadItem[];
  subscribe(fn: (items: UploadItem[]) => void): () => void;
}

/** Files uploading at once. */
export const MAX_FILES = 2;
/** An idle worker is ended after this long. */
const IDLE_MS = 60_000;
/** Speed is measured over this much recent progress. */
const SPEED_WINDOW_MS = 4_000;

interface Entry {
  item: UploadItem;
  file: File;
  visibility: Visibility;
  key: string;
  /** Bumped on every start, so messages from an earlier attempt are told apart. */
  attempt: number;
  slot: Slot | null;
  samples: Array<{ t: number; loaded: number }>;
}

interface Slot {
  worker: Worker;
  /** The job (`entryId#attempt`) running in it, or null when idle. */
  job: string | null;
  idle: ReturnType<typeof setTimeout> | null;
}

let seq = 0;
// crypto.randomUUID needs a secure context; a Playground served over plain HTTP on a LAN is not one.
const newId = () => `u${Date.now().toString(36)}${(seq++).toString(36)}${Math.random().toString(36).slice(2, 8)}`;

export function createUploadManager(getCsrf: () => string | null): UploadManager {
  const entries: Entry[] = [];
  const slots: Slot[] = [];
  const listeners = new Set<(items: UploadItem[]) => void>();
  let snapshot: UploadItem[] = [];
  let scheduled = false;

  const emit = () => {
    snapshot = entries.map((e) => e.item);
    if (scheduled) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      for (const fn of listeners) fn(snapshot);
    });
  };
  /** Items are replaced, never changed in place, so a view can compare them by identity. */
  const patch = (e: Entry, changes: Partial<UploadItem>) => {
    e.item = { ...e.item, ...changes };
    emit();
  };
  const byJob = (job: string): Entry | undefined => {
    const [id, attempt] = job.split('#');
    const e = entries.find((x) => x.item.id === id);
    return e && String(e.attempt) === attempt ? e : undefined;
  };

  const release = (slot: Slot) => {
    slot.job = null;
    for (const e of entries) if (e.slot === slot) e.slot = null;
    pump();
    if (slot.job === null && slots.includes(slot)) {
      if (slot.idle !== null) clearTimeout(slot.idle);
      slot.idle = setTimeout(() => {
        if (slot.job !== null) return;
        slot.worker.terminate();
        slots.splice(slots.indexOf(slot), 1);
      }, IDLE_MS);
    }
  };

  const onMessage = (slot: Slot, msg: FromWorker) => {
    const e = byJob(msg.id);
    if (e) apply(e, msg);
    // The slot takes the next file once this one's end is recorded.
    const finished = msg.type === 'done' || msg.type === 'failed' || msg.type === 'canceled';
    if (finished && slot.job === msg.id) release(slot);
  };

  const apply = (e: Entry, msg: FromWorker) => {
    const now = performance.now();
    switch (msg.type) {
      case 'started':
        if (e.item.status !== 'uploading') return;
        e.samples = [{ t: now, loaded: msg.loaded }];
        patch(e, { resumed: msg.resumed, loaded: msg.loaded });
        return;
      case 'progress': {
        if (e.item.status !== 'uploading') return;
        e.samples.push({ t: now, loaded: msg.loaded });
        while (e.samples.length > 2 && now - e.samples[1]!.t >= SPEED_WINDOW_MS) e.samples.shift();
        const first = e.samples[0]!;
        const span = (now - first.t) / 1000;
        let bytesPerSecond = e.item.bytesPerSecond;
        if (span >= 0.25) bytesPerSecond = Math.max(0, (msg.loaded - first.loaded) / span);
        const secondsLeft = bytesPerSecond > 0 ? Math.ceil((e.item.size - msg.loaded) / bytesPerSecond) : null;
        patch(e, { loaded: msg.loaded, bytesPerSecond, secondsLeft });
        return;
      }
      case 'done':
        // Even after Cancel was pressed: the file did arrive, so that is what is shown.
        patch(e, { status: 'done', loaded: e.item.size, record: msg.record, bytesPerSecond: 0, secondsLeft: 0, error: null });
        return;
      case 'failed':
        if (e.item.status === 'canceled') return;
        patch(e, { status: 'failed', error: msg.message, bytesPerSecond: 0, secondsLeft: null });
        return;
      case 'canceled':
        patch(e, { status: 'canceled', bytesPerSecond: 0, secondsLeft: null });
        return;
    }
  };

  const makeSlot = (): Slot => {
    // The literal `new Worker(new URL(…), …)` form is what Vite bundles as a worker.
    const worker = new Worker(new URL('./upload-worker.ts', import.meta.url), { type: 'module', name: 'coffer-upload' });
    const slot: Slot = { worker, job: null, idle: null };
    worker.onmessage = (ev: MessageEvent<FromWorker>) => onMessage(slot, ev.data);
    const crashed = (why: string) => {
      const e = slot.job ? byJob(slot.job) : undefined;
      worker.terminate();
      if (slots.includes(slot)) slots.splice(slots.indexOf(slot), 1);
      if (e && e.item.status === 'uploading') patch(e, { status: 'failed', error: `The upload stopped unexpectedly (${why}). Retry to continue it.`, bytesPerSecond: 0, secondsLeft: null });
      release(slot);
    };
    worker.onerror = (ev) => {
      ev.preventDefault();
      crashed(ev.message || 'worker error');
    };
    worker.onmessageerror = () => crashed('a message could not be read');
    slots.push(slot);
    return slot;
  };

  const start = (e: Entry, slot: Slot) => {
    if (slot.idle !== null) clearTimeout(slot.idle);
    slot.idle = null;
    e.attempt++;
    const job = `${e.item.id}#${e.attempt}`;
    slot.job = job;
    e.slot = slot;
    e.samples = [];
    // The same file already going to the same place on this page: this copy neither uses
    // nor keeps the resume handle, so the two never send parts into one upload.
    const resumable = !entries.some((o) => o !== e && o.key === e.key && o.item.status === 'uploading');
    patch(e, { status: 'uploading', loaded: 0, bytesPerSecond: 0, secondsLeft: null, error: null, record: null, resumed: false });
    const msg: ToWorker = { type: 'start', id: job, file: e.file, folderId: e.item.folderId, visibility: e.visibility, csrf: getCsrf(), resumable };
    slot.worker.postMessage(msg);
  };

  function pump() {
    for (;;) {
      const busy = slots.filter((s) => s.job !== null).length;
      if (busy >= MAX_FILES) return;
      // An entry still bound to a slot is retried only once its earlier attempt has wound
      // down (a canceled upload is being discarded), so the two never overlap.
      const next = entries.find((e) => e.item.status === 'queued' && e.slot === null);
      if (!next) return;
      const slot = slots.find((s) => s.job === null) ?? makeSlot();
      start(next, slot);
    }
  }

  return {
    add(files, opts) {
      const visibility: Visibility = opts.visibility ?? 'Public';
      for (const file of files) {
        entries.push({
          item: {
            id: newId(), name: file.name, size: file.size, folderId: opts.folderId, status: 'queued',
            loaded: 0, bytesPerSecond: 0, secondsLeft: null, error: null, record: null, resumed: false,
          },
          file,
          visibility,
          key: resumeKey({ name: file.name, size: file.size, lastModified: file.lastModified, folderId: opts.folderId, visibility }),
          attempt: 0,
          slot: null,
          samples: [],
        });
      }
      emit();
      pump();
    },
    cancel(id) {
      const e = entries.find((x) => x.item.id === id);
      if (!e) return;
      if (e.item.status === 'queued') {
        patch(e, { status: 'canceled' });
      } else if (e.item.status === 'uploading') {
        // Shown at once; the worker stops sending, discards the upload on the service and
        // then frees its slot for the next file.
        patch(e, { status: 'canceled', bytesPerSecond: 0, secondsLeft: null });
        const msg: ToWorker = { type: 'cancel', id: `${e.item.id}#${e.attempt}` };
        e.slot?.worker.postMessage(msg);
      }
    },
    retry(id) {
      const e = entries.find((x) => x.item.id === id);
      if (!e || (e.item.status !== 'failed' && e.item.status !== 'canceled')) return;
      // A failed upload keeps its resume handle, so only the parts the service lacks are sent again.
      patch(e, { status: 'queued', error: null, bytesPerSecond: 0, secondsLeft: null, resumed: false });
      pump();
    },
    clearFinished() {
      for (let i = entries.length - 1; i >= 0; i--) {
        const s = entries[i]!.item.status;
        if (s === 'done' || s === 'failed' || s === 'canceled') entries.splice(i, 1);
      }
      emit();
    },
    items: () => snapshot,
    subscribe(fn) {
      listeners.add(fn);
      return () => {
        listeners.delete(fn);
      };
    },
  };
}
