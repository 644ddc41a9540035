/**
 * The upload worker: every byte of an upload is read and sent here, never on the page.
 * It runs the SDK's uploader (raw parts, JSON for a server without them; parts in parallel, retries with backoff for network
 * errors, 5xx and 429 and never for other 4xx, resume from the upload's status) against
 * the page's own origin with the session cookie and the CSRF header, keeps each open
 * upload's resume handle in IndexedDB, and reports progress about ten times a second.
 *
 * One worker runs one upload at a time; the manager keeps a small pool of them.
 */
import { CHUNK_SIZE, CofferClient, CofferError, uploadFile, type ResumeHandle } from '../../../src/sdk/index.js';
import type { FromWorker, ToWorker } from './protocol.js';
import { forgetHandle, loadHandle, resumeKey, saveHandle } from './resume-db.js';
import { xhrFetch } from './xhr-fetch.js';

/** The parts of DedicatedWorkerGlobalScope used here (the project's lib is DOM, not WebWorker). */
interface WorkerScope {
  readonly location: { readonly origin: string };
  postMessage(message: FromWorker): void;
  addEventListener(type: 'message', listener: (event: MessageEvent<ToWorker>) => void): void;
}
const scope = self as unknown as WorkerScope;

/** Parts in flight per upload (issue 5: up to 4). */
const CONCURRENCY = 4;
/** Progress reports at most this often… */
const PROGRESS_EVERY_MS = 100;
/** …and at least this often while an upload runs. */
const HEARTBEAT_MS = 500;
const PART_PATH = '/collections/upload/file-progress';

interface Job {
  controller: AbortController;
  canceled: boolean;
  fileId: string | null;
}

const jobs = new Map<string, Job>();

scope.addEventListener('message', (event) => {
  const msg = event.data;
  if (msg.type === 'start') void run(msg);
  else if (msg.type === 'cancel') {
    const job = jobs.get(msg.id);
    if (job && !job.canceled) {
      job.canceled = true;
      job.controller.abort(new DOMException('The upload was canceled.', 'AbortError'));
    }
  }
});

async function run(msg: Extract<ToWorker, { type: 'start' }>): Promise<void> {
  const { id, file } = msg;
  const post = (m: FromWorker) => scope.postMessage(m);
  const job: Job = { controller: new AbortController(), canceled: false, fileId: null };
  jobs.set(id, job);
  const key = resumeKey({ name: file.name, size: file.size, lastModified: file.lastModified, folderId: msg.folderId, visibility: msg.visibility });
  // Handle writes happen in order, so a late save can never outlive the removal after completion.
  let db: Promise<void> = Promise.resolve();
  const queueDb = (op: () => Promise<void>) => (db = db.then(op, op));

  let handle: ResumeHandle | null = null;
  let opened = false;
  let started = false;

  // Progress: bytes of acknowledged parts plus the bytes of parts still going out (a raw
  // part is its bytes; a JSON part's base64 is 4/3 of them). Shown never to go back, even
  // when a part is re-sent.
  let acked = 0;
  let shown = 0;
  let lastPost = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const inFlight = new Map<object, number>();
  const flush = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    lastPost = performance.now();
    post({ type: 'progress', id, loaded: shown });
  };
  const update = () => {
    let estimate = acked;
    for (const bytes of inFlight.values()) estimate += bytes;
    estimate = Math.min(file.size, estimate);
    if (estimate <= shown) return;
    shown = estimate;
    const wait = PROGRESS_EVERY_MS - (performance.now() - lastPost);
    if (wait <= 0) flush();
    else timer ??= setTimeout(flush, wait);
  };

  // While nothing moves (a slow or stalled connection), a report still goes out twice a
  // second, so the page's speed falls and its time left gives way instead of freezing.
  const heartbeat = setInterval(() => {
    if (started && performance.now() - lastPost >= HEARTBEAT_MS) flush();
  }, HEARTBEAT_MS);

  const client = new CofferClient({
    url: scope.location.origin,
    credentials: 'same-origin',
    headers: (): Record<string, string> => (msg.csrf ? { 'x-csrf-token': msg.csrf } : {}),
    fetch: xhrFetch((request, sent, _total, done) => {
      // A raw part names itself in the query string; a JSON part has the bare path.
      const raw = request.url.includes(`${PART_PATH}?`);
      if (!raw && !request.url.endsWith(PART_PATH)) return;
      if (done) inFlight.delete(request);
      else inFlight.set(request, Math.min(CHUNK_SIZE, raw ? sent : Math.floor((Math.max(0, sent - 256) * 3) / 4)));
      update();
    }),
  });

  const announce = (fileId: string, loaded: number) => {
    if (started) return;
    started = true;
    post({ type: 'started', id, fileId, resumed: handle !== null && !opened, loaded });
  };
  try {
    handle = msg.resumable ? await loadHandle(key) : null;
    job.fileId = handle?.fileId ?? null;
    job.controller.signal.throwIfAborted();
    const record = await uploadFile(client, file, {
      name: file.name,
      folderId: msg.folderId,
      visibility: msg.visibility,
      concurrency: CONCURRENCY,
      signal: job.controller.signal,
      ...(handle ? { resume: handle } : {}),
      onSession: (session) => {
        opened = true;
        job.fileId = session.fileId;
        if (msg.resumable) queueDb(() => saveHandle(key, session));
      },
      onProgress: (p) => {
        announce(p.fileId, p.loaded);
        acked = p.loaded;
        shown = Math.max(shown, p.loaded);
        update();
      },
    });
    if (msg.resumable) queueDb(() => forgetHandle(key));
    await db;
    announce(record.file_id, record.size);
    shown = record.size;
    flush();
    post({ type: 'done', id, record });
  } catch (err) {
    if (timer !== null) clearTimeout(timer);
    if (job.canceled) {
      // Discard it on the service too, and forget it here: choosing the file again starts afresh.
      if (job.fileId) await client.abortUpload(job.fileId, { retry: { attempts: 3 } }).catch(() => undefined);
      if (msg.resumable) queueDb(() => forgetHandle(key));
      await db;
      post({ type: 'canceled', id });
    } else {
      // The handle stays: Retry, or choosing the file again after a reload, continues it.
      // A handle the SDK refused as another file's is dropped, so that Retry starts afresh.
      if (handle && err instanceof CofferError && err.code === 'invalid_argument' && msg.resumable) queueDb(() => forgetHandle(key));
      await db;
      post({ type: 'failed', id, ...describe(err) });
    }
  } finally {
    clearInterval(heartbeat);
    jobs.delete(id);
  }
}

function describe(err: unknown): { message: string; code: string; status: number } {
  if (err instanceof CofferError) return { message: err.message, code: err.code, status: err.status };
  const e = err as { name?: string; message?: string } | null;
  if (e?.name === 'NotReadableError' || e?.name === 'NotFoundError') {
    return { message: 'The file could not be read: it may have been moved or changed since it was chosen. Choose it again.', code: 'file_unreadable', status: 0 };
  }
  return { message: e?.message || String(err), code: 'upload_error', status: 0 };
}
