/**
 * The typed client of the programmatic interface (contract §2–§6). It runs wherever
 * `fetch` does: Node ≥ 20, browsers and Web Workers.
 */
import type {
  CreateFolderRequest, CreateLinkRequest, CreateLinkResponse, DeleteFolderRequest, DeleteFolderResponse,
  DownloadRequest, DownloadResponse, FileRecord, FolderRecord, InitiateUploadRequest, ListRequest,
  ListResponse, SearchRequest, SearchResponse, UpdateFileRequest, UpdateFolderRequest, UploadPartRequest,
  UploadPartResponse, UploadSession, UploadStatusResponse,
} from '../core/api.js';
import type {
  CreateGrantRequest, CreateGrantResponse, CreateKeyRequest, CreateKeyResponse, ListKeysResponse, RevokeKeyResponse, RevokeLinksResponse,
} from '../core/api-access.js';
import type { EdgesResponse } from '../core/api-edges.js';
import type { FileWithUsage, UsageRequest, UsageResponse } from '../core/api-usage.js';
import type { CreateWebhookRequest, CreateWebhookResponse, DeliveriesRequest, DeliveriesResponse, DeliveryRecord, ListWebhooksResponse } from '../core/api-webhooks.js';
import { CofferError, clientError } from '../core/errors.js';
import { base64Length, encodeBase64Into } from './base64.js';
import { DEFAULT_RETRY, backoffDelay, sleep, type RetryOptions } from './retry.js';
import { uploadFile, type UploadOptions, type UploadSource } from './upload.js';

export interface ClientOptions {
  /** The origin's `{base_url}`, e.g. `http://127.0.0.1:8080`; `''` for the page's own origin. */
  url: string;
  /** The access key, sent as `Authorization: Bearer …`. Leave it out where a session cookie authenticates. */
  accessKey?: string;
  /** An upload grant instead of a key (a browser's uploads), sent as `Authorization: Grant …`: the upload calls only. */
  grant?: string;
  /** Extra headers for every call, or a function returning them (e.g. a CSRF token). */
  headers?: Record<string, string> | (() => Record<string, string>);
  /** `fetch`'s credentials mode; `'same-origin'` sends a session cookie. */
  credentials?: RequestCredentials;
  /** Another `fetch`, for tests or instrumentation. */
  fetch?: typeof fetch;
  /** How repeatable calls are retried; `false` never retries. */
  retry?: RetryOptions | false;
  /** Told about each retry before its wait. */
  onRetry?: (info: RetryInfo) => void;
}

export interface RetryInfo {
  path: string;
  /** The attempt that failed, from 1. */
  attempt: number;
  delayMs: number;
  error: CofferError;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the client's retry settings for this call. */
  retry?: RetryOptions | false;
}

export interface AbortUploadResponse {
  file_id: string;
  aborted: true;
}

export interface DeleteFileResponse {
  file_id: string;
  deleted: true;
}

/** How parts go on the wire: `raw` bytes (the default) or base64 in `json` (servers before raw parts). */
export type PartEncoding = 'raw' | 'json';

/** The four values that name an open upload's parts. */
export interface PartTarget {
  fileId: string;
  bucket: string;
  key: string;
  uploadId: string;
}

const encoder = new TextEncoder();

const NO_RETRY: Required<RetryOptions> = { ...DEFAULT_RETRY, attempts: 1 };

function retrySettings(value: RetryOptions | false | undefined, fallback: Required<RetryOptions>): Required<RetryOptions> {
  if (value === false) return NO_RETRY;
  if (value === undefined) return fallback;
  return { ...fallback, ...value };
}

/** An error body of contract §2 becomes a CofferError; anything else says what came back. */
async function errorFrom(res: Response): Promise<CofferError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    const e = body.error;
    if (e && typeof e.code === 'string' && typeof e.message === 'string') {
      const details = e.details && typeof e.details === 'object' ? (e.details as Record<string, unknown>) : {};
      return new CofferError(res.status, e.code, e.message, details);
    }
  } catch {
    // Not JSON: a proxy or something else answered.
  }
  return clientError('http_error', `The server answered ${res.status} ${res.statusText || ''}`.trim() + ' without a Coffer error body; check the URL.', res.status);
}

/**
 * The JSON body of a successful answer. A body that is not JSON means something other than
 * Coffer answered (a web server, a proxy's page): that is an `http_error`, not a network
 * failure, and repeating the call would not help.
 */
async function jsonFrom<T>(res: Response): Promise<T> {
  const text = await res.text();
  try {
    return JSON.parse(text) as T;
  } catch {
    const type = res.headers.get('content-type');
    throw clientError('http_error', `The server answered ${res.status}${type ? ` with ${type.split(';')[0]}` : ''} instead of JSON; check the URL.`, res.status);
  }
}

function networkError(url: string, err: unknown): CofferError {
  const cause = err as { message?: string; cause?: { code?: string; message?: string } };
  const why = cause?.cause?.code ?? cause?.cause?.message ?? cause?.message ?? String(err);
  const e = clientError('network_error', `Could not reach ${url} (${why}); check the URL and that the service is running.`);
  (e as { cause?: unknown }).cause = err;
  return e;
}

function retryAfterMs(res: Response | null): number | null {
  const value = res?.headers.get('retry-after');
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

export class CofferClient {
  readonly url: string;
  private readonly opts: ClientOptions;
  private readonly retry: Required<RetryOptions>;
  private readonly fetchFn: typeof fetch;
  /** Set once the server refused a raw part with 415: this client sends parts as JSON from then on. */
  private rawPartsRefused = false;

  constructor(opts: ClientOptions) {
    this.opts = opts;
    this.url = opts.url.replace(/\/+$/, '');
    this.retry = retrySettings(opts.retry, DEFAULT_RETRY);
    this.fetchFn = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  private headers(contentType: string | null): Record<string, string> {
    const extra = typeof this.opts.headers === 'function' ? this.opts.headers() : this.opts.headers;
    const h: Record<string, string> = { ...extra };
    if (contentType) h['content-type'] = contentType;
    if (this.opts.accessKey) h.authorization = `Bearer ${this.opts.accessKey}`;
    else if (this.opts.grant) h.authorization = `Grant ${this.opts.grant}`;
    return h;
  }

  /**
   * POSTs one call. Answers 429 and 503 mean the call was not handled, so every call is
   * retried on them (after `Retry-After` when given); network errors and other 5xx are
   * retried only for calls that are safe to repeat.
   */
  call<T>(path: string, body: unknown, opts: CallOptions & { idempotent?: boolean } = {}): Promise<T> {
    return this.send<T>(path, JSON.stringify(body), opts);
  }

  private async send<T>(path: string, payload: string | Uint8Array<ArrayBuffer>, opts: CallOptions & { idempotent?: boolean; contentType?: string }): Promise<T> {
    const retry = retrySettings(opts.retry, this.retry);
    const url = this.url + path;
    for (let attempt = 1; ; attempt++) {
      let res: Response | null = null;
      let error: CofferError;
      try {
        res = await this.fetchFn(url, {
          method: 'POST', headers: this.headers(opts.contentType ?? 'application/json'), body: payload, signal: opts.signal,
          ...(this.opts.credentials ? { credentials: this.opts.credentials } : {}),
        });
        if (res.ok) return await jsonFrom<T>(res);
        error = await errorFrom(res);
      } catch (err) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        error = err instanceof CofferError ? err : networkError(url, err);
      }
      const retryable = error.status === 429 || error.status === 503 || (opts.idempotent === true && (error.status === 0 || error.status >= 500));
      if (!retryable || attempt >= retry.attempts) throw error;
      const delayMs = Math.min(retryAfterMs(res) ?? backoffDelay(attempt, retry), 60_000);
      this.opts.onRetry?.({ path, attempt, delayMs, error });
      await sleep(delayMs, opts.signal);
    }
  }

  // Upload (contract §4)
  initiateUpload(req: InitiateUploadRequest, opts?: CallOptions): Promise<UploadSession> {
    return this.call('/collections/upload/file', req, opts);
  }
  uploadPart(req: UploadPartRequest, opts?: CallOptions): Promise<UploadPartResponse> {
    return this.call('/collections/upload/file-progress', req, { ...opts, idempotent: true });
  }
  /**
   * One chunk given as bytes: the JSON body is built as bytes around the base64, which
   * spares scanning and re-encoding a multi-megabyte string. The uploader sends parts this way.
   */
  uploadPartBytes(session: PartTarget, partNumber: number, bytes: Uint8Array, opts?: CallOptions): Promise<UploadPartResponse> {
    // Session fields first and the chunk last, so the origin can stream the chunk as it arrives.
    const head = encoder.encode(`{"bucket":${JSON.stringify(session.bucket)},"key":${JSON.stringify(session.key)},"uploadId":${JSON.stringify(session.uploadId)},"fileId":${JSON.stringify(session.fileId)},"partNumber":${partNumber},"body":"`);
    const body = new Uint8Array(head.length + base64Length(bytes.length) + 2);
    body.set(head, 0);
    const end = head.length + encodeBase64Into(bytes, body, head.length);
    body[end] = 0x22; // "
    body[end + 1] = 0x7d; // }
    return this.send('/collections/upload/file-progress', body, { ...opts, idempotent: true });
  }
  /**
   * One chunk as raw bytes (contract §9): the four session values and the part number go in
   * the query string, the bytes are the body as they are. A third fewer bytes than the JSON
   * form and nothing to encode. A server older than raw parts answers 415.
   */
  uploadPartRaw(session: PartTarget, partNumber: number, bytes: Uint8Array, opts?: CallOptions): Promise<UploadPartResponse> {
    const query = new URLSearchParams({ bucket: session.bucket, key: session.key, uploadId: session.uploadId, fileId: session.fileId, partNumber: String(partNumber) });
    return this.send(`/collections/upload/file-progress?${query}`, bytes as Uint8Array<ArrayBuffer>, { ...opts, idempotent: true, contentType: 'application/octet-stream' });
  }
  /**
   * One chunk in the encoding asked for: raw unless `encoding` is `'json'`. A raw part the
   * server refuses with 415 (a server older than raw parts) is sent again as JSON, and so
   * is every later part through this client.
   */
  async sendPart(session: PartTarget, partNumber: number, bytes: Uint8Array, opts: CallOptions & { encoding?: PartEncoding } = {}): Promise<UploadPartResponse> {
    const { encoding, ...callOpts } = opts;
    if (encoding !== 'json' && !this.rawPartsRefused) {
      try {
        return await this.uploadPartRaw(session, partNumber, bytes, callOpts);
      } catch (err) {
        if (!(err instanceof CofferError) || err.status !== 415) throw err;
        this.rawPartsRefused = true;
      }
    }
    return this.uploadPartBytes(session, partNumber, bytes, callOpts);
  }
  completeUpload(fileId: string, opts?: CallOptions): Promise<FileRecord> {
    return this.call('/collections/upload/complete-upload', { file_id: fileId }, { ...opts, idempotent: true });
  }
  uploadStatus(fileId: string, opts?: CallOptions): Promise<UploadStatusResponse> {
    return this.call('/collections/upload/status', { file_id: fileId }, { ...opts, idempotent: true });
  }
  abortUpload(fileId: string, opts?: CallOptions): Promise<AbortUploadResponse> {
    return this.call('/collections/upload/abort', { file_id: fileId }, { ...opts, idempotent: true });
  }

  /** Initiates, sends the parts in parallel with retries, completes: see UploadOptions. */
  uploadFile(source: UploadSource, opts: UploadOptions = {}): Promise<FileRecord> {
    return uploadFile(this, source, opts);
  }

  // Folders (contract §5)
  createFolder(req: CreateFolderRequest, opts?: CallOptions): Promise<FolderRecord> {
    return this.call('/collections/folder/create', req, opts);
  }
  getFolder(folderId: string, opts?: CallOptions): Promise<FolderRecord> {
    return this.call('/collections/folder/get', { folder_id: folderId }, { ...opts, idempotent: true });
  }
  updateFolder(req: UpdateFolderRequest, opts?: CallOptions): Promise<FolderRecord> {
    return this.call('/collections/folder/update', req, { ...opts, idempotent: true });
  }
  deleteFolder(req: DeleteFolderRequest, opts?: CallOptions): Promise<DeleteFolderResponse> {
    return this.call('/collections/folder/delete', req, opts);
  }

  // Listing (contract §5)
  list(req: ListRequest = {}, opts?: CallOptions): Promise<ListResponse> {
    return this.call('/collections/list', req, { ...opts, idempotent: true });
  }
  /** Every page of a folder, following `next_cursor` to the end. */
  async *listPages(req: Omit<ListRequest, 'cursor'> = {}, opts?: CallOptions): AsyncGenerator<ListResponse> {
    let cursor: string | null = null;
    do {
      const page: ListResponse = await this.list({ ...req, cursor }, opts);
      yield page;
      cursor = page.next_cursor;
    } while (cursor !== null);
  }
  search(req: SearchRequest, opts?: CallOptions): Promise<SearchResponse> {
    return this.call('/collections/search', req, { ...opts, idempotent: true });
  }

  // Files (contract §5)
  /** The record, with `downloads` and `bytes_served` as edges have reported them. */
  getFile(fileId: string, opts?: CallOptions): Promise<FileWithUsage> {
    return this.call('/collections/file/get', { file_id: fileId }, { ...opts, idempotent: true });
  }
  /** Bytes and downloads per UTC day over the last `days` days (default 30), zeros included, as edges have reported them. */
  usage(req: UsageRequest = {}, opts?: CallOptions): Promise<UsageResponse> {
    return this.call('/collections/usage', req, { ...opts, idempotent: true });
  }
  /** Every edge the origin knows, with its state and what it last reported (root key only; docs/api.md "Edges"). */
  edges(opts?: CallOptions): Promise<EdgesResponse> {
    return this.call('/collections/edges', {}, { ...opts, idempotent: true });
  }
  updateFile(req: UpdateFileRequest, opts?: CallOptions): Promise<FileRecord> {
    return this.call('/collections/file/update', req, { ...opts, idempotent: true });
  }
  deleteFile(fileId: string, opts?: CallOptions): Promise<DeleteFileResponse> {
    return this.call('/collections/file/delete', { file_id: fileId }, opts);
  }
  /** A URL that makes a browser save the file under its name; signed when the file is Private. */
  downloadUrl(req: DownloadRequest, opts?: CallOptions): Promise<DownloadResponse> {
    return this.call('/collections/file/download', req, { ...opts, idempotent: true });
  }

  // Signed links (contract §6)
  createLink(req: CreateLinkRequest, opts?: CallOptions): Promise<CreateLinkResponse> {
    return this.call('/collections/create-link', req, { ...opts, idempotent: true });
  }

  /** Every link issued for the file so far stops working at every edge (403 link_revoked); later ones work. */
  revokeLinks(fileId: string, opts?: CallOptions): Promise<RevokeLinksResponse> {
    return this.call('/collections/file/revoke-links', { file_id: fileId }, { ...opts, idempotent: true });
  }

  // Keys and upload grants (contract §10)
  /** Makes a key; its secret (`key`) is in this answer only. Needs "admin". */
  createKey(req: CreateKeyRequest, opts?: CallOptions): Promise<CreateKeyResponse> {
    return this.call('/collections/keys/create', req, opts);
  }
  listKeys(opts?: CallOptions): Promise<ListKeysResponse> {
    return this.call('/collections/keys/list', {}, { ...opts, idempotent: true });
  }
  revokeKey(keyId: string, opts?: CallOptions): Promise<RevokeKeyResponse> {
    return this.call('/collections/keys/revoke', { key_id: keyId }, { ...opts, idempotent: true });
  }
  /** A grant a browser can upload with (`new CofferClient({ url, grant })`), within the limits given. Needs "write". */
  createGrant(req: CreateGrantRequest, opts?: CallOptions): Promise<CreateGrantResponse> {
    return this.call('/collections/upload/grant', req, opts);
  }

  // Webhooks (contract §11)
  /** The secret is in this answer only: keep it to check deliveries with verifyWebhook. Needs "admin". */
  createWebhook(req: CreateWebhookRequest, opts?: CallOptions): Promise<CreateWebhookResponse> {
    return this.call('/collections/webhooks/create', req, opts);
  }
  listWebhooks(opts?: CallOptions): Promise<ListWebhooksResponse> {
    return this.call('/collections/webhooks/list', {}, { ...opts, idempotent: true });
  }
  deleteWebhook(webhookId: string, opts?: CallOptions): Promise<{ webhook_id: string; deleted: true }> {
    return this.call('/collections/webhooks/delete', { webhook_id: webhookId }, { ...opts, idempotent: true });
  }
  webhookDeliveries(req: DeliveriesRequest, opts?: CallOptions): Promise<DeliveriesResponse> {
    return this.call('/collections/webhooks/deliveries', req, { ...opts, idempotent: true });
  }
  /** Sends a `webhook.test` event to the receiver at once. */
  testWebhook(webhookId: string, opts?: CallOptions): Promise<DeliveryRecord> {
    return this.call('/collections/webhooks/test', { webhook_id: webhookId }, opts);
  }
  redeliver(deliveryId: string, opts?: CallOptions): Promise<DeliveryRecord> {
    return this.call('/collections/webhooks/redeliver', { delivery_id: deliveryId }, opts);
  }

  /** GET /healthz: resolves when the origin answers ok. */
  async health(opts: { signal?: AbortSignal } = {}): Promise<{ status: string }> {
    const url = `${this.url}/healthz`;
    try {
      const res = await this.fetchFn(url, {
        headers: this.headers(null), signal: opts.signal,
        ...(this.opts.credentials ? { credentials: this.opts.credentials } : {}),
      });
      if (!res.ok) throw await errorFrom(res);
      return await jsonFrom<{ status: string }>(res);
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw err instanceof CofferError ? err : networkError(url, err);
    }
  }
}

export const createClient = (opts: ClientOptions): CofferClient => new CofferClient(opts);
