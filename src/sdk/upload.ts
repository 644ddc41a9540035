/**
 * The uploader: the three-step flow of contract §4 with parts in parallel, retries with
 * backoff, resume from the upload's status, and cancellation. One implementation for
 * servers, the command line and the Playground's worker.
 */
import type { FileRecord, UploadSession } from '../core/api.js';
import type { FileWithUsage } from '../core/api-usage.js';
import { CofferError, clientError } from '../core/errors.js';
import { fileTypeFor } from '../core/file-types.js';
import type { FileType } from '../core/records.js';
import { CHUNK_SIZE, partCount } from '../core/upload.js';
import type { CofferClient, PartEncoding } from './client.js';
import type { RetryOptions } from './retry.js';

/** What can be uploaded: a Blob or File (Node's `fs.openAsBlob` gives one without reading the file), or bytes. */
export type UploadSource = Blob | ArrayBuffer | Uint8Array;

/** The values that identify an open upload: keep them to resume it later. */
export interface ResumeHandle {
  fileId: string;
  bucket: string;
  key: string;
  uploadId: string;
}

export interface UploadProgress {
  fileId: string;
  name: string;
  /** Bytes the service has acknowledged, parts kept from an earlier attempt included. */
  loaded: number;
  total: number;
  partsDone: number;
  partCount: number;
}

export interface UploadOptions {
  /** The stored name; defaults to the File's name. Required for a Blob or bytes. */
  name?: string;
  /** Folder to upload into; null or absent is the root. */
  folderId?: string | null;
  /** `Public` (default) or `Private`, in any letter case. */
  visibility?: string;
  /** Defaults to the type the media type or the extension suggests, else `other`. */
  fileType?: FileType;
  /** Defaults to the Blob's type when it has one, else the service guesses from the name. */
  contentType?: string;
  /** Parts in flight at once (default 4). */
  concurrency?: number;
  /** Shares one bound on parts in flight among several uploads; `concurrency` still caps this one. */
  limiter?: Limiter;
  /** Called after each acknowledged part, and once at the start. */
  onProgress?: (progress: UploadProgress) => void;
  /** Called with the session as soon as the upload is open: store it to resume after a crash or reload. */
  onSession?: (session: ResumeHandle) => void;
  /**
   * Continue this upload: only the parts its status reports missing are sent. When the
   * service no longer knows it (aborted or expired), a new upload starts instead.
   */
  resume?: ResumeHandle;
  /**
   * Stops sending and rejects with the signal's reason. The upload stays open on the
   * service, so it can be resumed; call `abortUpload` to discard it.
   */
  signal?: AbortSignal;
  /** Retries for each part and for completion (default: the client's). */
  retry?: RetryOptions;
  /**
   * `raw` (default): each part's bytes as the body. `json`: base64 in a JSON body, the form
   * every Coffer server takes. A server that refuses raw parts (415) gets JSON automatically.
   */
  partEncoding?: PartEncoding;
}

/** A bound on concurrent work, shared across uploads. */
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError('A limiter needs a size of at least 1.');
  }

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.active >= this.size) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const i = this.waiting.indexOf(go);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(signal!.reason);
        };
        const go = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        this.waiting.push(go);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    } else {
      this.active++;
    }
    try {
      signal?.throwIfAborted();
      return await fn();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, or is freed.
      if (next) next();
      else this.active--;
    }
  }
}

function toBlob(source: UploadSource): Blob {
  if (source instanceof Blob) return source;
  const bytes = source instanceof Uint8Array ? source : new Uint8Array(source);
  return new Blob([bytes as Uint8Array<ArrayBuffer>]);
}

const usage = (message: string) => clientError('invalid_argument', message);

export async function uploadFile(client: CofferClient, source: UploadSource, opts: UploadOptions = {}): Promise<FileRecord> {
  const blob = toBlob(source);
  const name = opts.name ?? (typeof (source as File).name === 'string' ? (source as File).name : undefined);
  if (name === undefined) throw usage('uploadFile needs a name: pass { name } or a File.');
  const concurrency = opts.concurrency ?? 4;
  const partEncoding = opts.partEncoding ?? 'raw';
  if (partEncoding !== 'raw' && partEncoding !== 'json') throw usage('"partEncoding" must be "raw" or "json".');
  if (!Number.isInteger(concurrency) || concurrency < 1) throw usage('"concurrency" must be a whole number of at least 1.');
  const signal = opts.signal;
  signal?.throwIfAborted();
  const callOpts = { ...(signal ? { signal } : {}), ...(opts.retry ? { retry: opts.retry } : {}) };

  const count = partCount(blob.size);
  let session: ResumeHandle | null = null;
  let chunkSize = CHUNK_SIZE;
  let received: number[] = [];

  if (opts.resume) {
    try {
      // The declared size, not just the part count, must match: a source of another size
      // with the same number of parts would otherwise be joined with the parts already sent.
      const file = await client.getFile(opts.resume.fileId, callOpts);
      if (file.size !== blob.size) {
        throw usage(`This upload is of ${file.size} bytes but the source has ${blob.size}: it is not the same file.`);
      }
      if (file.status === 'ready') return fileRecord(file);
      const status = await client.uploadStatus(opts.resume.fileId, callOpts);
      if (status.status === 'ready') return fileRecord(await client.getFile(opts.resume.fileId, callOpts));
      if (status.part_count !== count) {
        throw usage(`This upload has ${status.part_count} part(s) but the source makes ${count}: it is not the same file.`);
      }
      session = opts.resume;
      received = status.received;
    } catch (err) {
      // Gone (aborted, expired, deleted): start afresh below.
      if (!(err instanceof CofferError) || err.status !== 404) throw err;
    }
  }
  if (session === null) {
    const contentType = opts.contentType ?? (blob.type || undefined);
    const opened: UploadSession = await client.initiateUpload({
      name,
      visibility: opts.visibility ?? 'Public',
      size: blob.size,
      file_type: opts.fileType ?? fileTypeFor(name, contentType),
      ...(opts.folderId !== undefined ? { folder_id: opts.folderId } : {}),
      ...(contentType ? { content_type: contentType } : {}),
    }, signal ? { signal } : {});
    session = { fileId: opened.fileId, bucket: opened.bucket, key: opened.key, uploadId: opened.uploadId };
    chunkSize = opened.chunk_size;
    opts.onSession?.(session);
  }
  const s = session;

  const partSize = (n: number) => Math.min(chunkSize, blob.size - (n - 1) * chunkSize);
  const have = new Set(received);
  const queue: number[] = [];
  for (let n = 1; n <= count; n++) if (!have.has(n)) queue.push(n);
  let loaded = 0;
  for (const n of have) loaded += partSize(n);
  let partsDone = have.size;
  const report = () => opts.onProgress?.({ fileId: s.fileId, name, loaded, total: blob.size, partsDone, partCount: count });
  report();

  // One failure stops the other workers' requests at once.
  const stop = new AbortController();
  const onOuterAbort = () => stop.abort(signal!.reason);
  signal?.addEventListener('abort', onOuterAbort, { once: true });
  const limiter = opts.limiter ?? new Limiter(concurrency);

  const sendPart = async (n: number, partSignal: AbortSignal | undefined) => {
    const start = (n - 1) * chunkSize;
    const bytes = new Uint8Array(await blob.slice(start, start + partSize(n)).arrayBuffer());
    await client.sendPart(s, n, bytes, { encoding: partEncoding, ...(partSignal ? { signal: partSignal } : {}), ...(opts.retry ? { retry: opts.retry } : {}) });
    loaded = Math.min(blob.size, loaded + bytes.length);
    partsDone = Math.min(count, partsDone + 1);
    report();
  };
  const worker = async () => {
    while (queue.length > 0 && !stop.signal.aborted) {
      const n = queue.shift()!;
      await limiter.run(() => sendPart(n, stop.signal), stop.signal);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(1, queue.length)) }, () =>
      worker().catch((err: unknown) => {
        if (!stop.signal.aborted) stop.abort(err);
        throw err;
      })));
  } catch (err) {
    // The first failure is the one to report, not the aborts it caused.
    throw stop.signal.reason ?? err;
  } finally {
    signal?.removeEventListener('abort', onOuterAbort);
  }

  try {
    return await client.completeUpload(s.fileId, callOpts);
  } catch (err) {
    // Parts the service lost track of are sent once more, then completion is tried again.
    if (!(err instanceof CofferError) || err.code !== 'missing_parts') throw err;
    const missing = Array.isArray(err.details.missing) ? (err.details.missing as number[]) : [];
    for (const n of missing) await limiter.run(() => sendPart(n, signal), signal);
    return await client.completeUpload(s.fileId, callOpts);
  }
}

/** uploadFile answers the record complete-upload answers, whichever way the file became ready. */
function fileRecord(file: FileWithUsage): FileRecord {
  const { downloads: _downloads, bytes_served: _served, ...record } = file;
  return record;
}
