/**
 * The SDK (src/sdk) against a running service: a real origin in this process (real HTTP,
 * SQLite and blob directory), and for signed links a real edge in this process that
 * follows it. Nothing of the service is mocked; where a failure must be injected, or the
 * requests counted, the client's `fetch` option wraps the real fetch.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHUNK_SIZE, CofferClient, CofferError, Limiter, signLink,
  type ClientOptions, type FileRecord, type ResumeHandle, type RetryInfo, type UploadProgress,
} from '../../src/sdk/index.js';
import { fileFromPath } from '../../src/sdk/node.js';
import type { RunningEdge } from '../../src/edge/server.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { startOldServer } from '../helpers/old-server.js';
import { sha256, sleep } from '../kit/index.js';

const CDN = 'http://cdn.test';
const MiB = 1024 * 1024;
const nowSeconds = () => Math.floor(Date.now() / 1000);
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// ---------------------------------------------------------------- instrumentation

interface Sent {
  /** The path of the call, e.g. /collections/upload/file-progress. */
  path: string;
  /** The partNumber of an upload part, else null. */
  part: number | null;
  /** How an upload part went: raw bytes with the fields in the query, or JSON; null for other calls. */
  encoding: 'raw' | 'json' | null;
  /** The parsed JSON body, for calls other than parts (whose bodies are megabytes). */
  body: any;
}

type Handler = (sent: Sent, real: () => Promise<Response>, init: RequestInit | undefined) => Promise<Response>;

/** A fetch that records every request and lets `handler` answer, fail or delay it. */
function tap(handler?: Handler): { fetch: typeof fetch; sent: Sent[]; parts: () => number[]; encodings: () => Set<string>; count: (path: string) => number } {
  const sent: Sent[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    // A raw part names itself in the query; a JSON part in its head (the session fields and partNumber).
    const inQuery = url.searchParams.get('partNumber');
    const raw = init?.body;
    const text = inQuery !== null ? '' : typeof raw === 'string' ? raw : raw instanceof Uint8Array ? new TextDecoder().decode(raw.subarray(0, 400)) : '';
    const m = /"partNumber":(\d+)/.exec(text);
    const part = inQuery !== null ? Number(inQuery) : m ? Number(m[1]) : null;
    const s: Sent = { path: url.pathname, part, encoding: inQuery !== null ? 'raw' : m ? 'json' : null, body: part === null && text ? JSON.parse(text) : null };
    sent.push(s);
    const real = () => fetch(input, init);
    return handler ? handler(s, real, init) : real();
  };
  return {
    fetch: wrapped,
    sent,
    parts: () => sent.filter((s) => s.part !== null).map((s) => s.part!),
    encodings: () => new Set(sent.filter((s) => s.encoding !== null).map((s) => s.encoding!)),
    count: (path) => sent.filter((s) => s.path === path).length,
  };
}

/** What a failed connection looks like to fetch's caller: thrown before anything is sent. */
const networkFailure = () => new TypeError('fetch failed', { cause: { code: 'ECONNRESET', message: 'injected' } });

const errorResponse = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ error: { code, message: `injected ${status}`, details: {} } }), {
    status, headers: { 'content-type': 'application/json', ...headers },
  });

/** The error a promise rejects with, checked to be a CofferError of the SDK with every field. */
async function failure(p: Promise<unknown>, status: number, code: string): Promise<CofferError> {
  const err = await p.then((v) => { throw new Error(`expected ${status} ${code}, got ${JSON.stringify(v)}`); }, (e: unknown) => e);
  expect(err).toBeInstanceOf(CofferError);
  const e = err as CofferError;
  expect({ status: e.status, code: e.code }, e.message).toEqual({ status, code });
  expect(e.name).toBe('CofferError');
  expect(typeof e.message).toBe('string');
  expect(e.message.length).toBeGreaterThan(0);
  expect(e.details).toBeTypeOf('object');
  expect(e.details).not.toBeNull();
  return e;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}


// ---------------------------------------------------------------- the service

let o: TestOrigin;
const FAST = { baseDelayMs: 10 } as const;
const client = (extra: Partial<ClientOptions> = {}) => new CofferClient({ url: o.url, accessKey: o.key, retry: FAST, ...extra });

beforeAll(async () => {
  o = await startTestOrigin({ COFFER_LOG_LEVEL: 'warn' });
});
afterAll(async () => {
  await o?.close();
});

// ---------------------------------------------------------------- 1. every call

describe('every call against a running origin', () => {
  it('health answers {status: "ok"}', async () => {
    expect(await client().health()).toEqual({ status: 'ok' });
    // A trailing slash on the URL is harmless.
    expect(await new CofferClient({ url: `${o.url}//`, accessKey: o.key }).health()).toEqual({ status: 'ok' });
  });

  it('initiateUpload, uploadPart, uploadStatus, completeUpload, abortUpload', async () => {
    const c = client();
    const bytes = randomBytes(CHUNK_SIZE + 1234);
    const s = await c.initiateUpload({ name: ' two.bin ', visibility: 'private', size: bytes.length, file_type: 'other' });
    expect(s).toMatchObject({
      file_id: s.fileId, name: 'two.bin', visibility: 'Private', size: bytes.length, file_type: 'other', status: 'uploading',
      sha256: null, delivery_url: null, folder_id: null, chunk_size: CHUNK_SIZE, part_count: 2,
    });
    expect(s.created_at).toMatch(ISO_MS);
    for (const v of [s.bucket, s.key, s.uploadId]) expect(v).toMatch(/\S/);
    const session = { bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId };

    const p2 = await c.uploadPart({ ...session, partNumber: 2, body: bytes.subarray(CHUNK_SIZE).toString('base64') });
    expect(p2).toMatchObject({ file_id: s.fileId, partNumber: 2, size: 1234, received_parts: 1, part_count: 2 });
    expect(p2.etag).toMatch(/\S/);
    expect(await c.uploadStatus(s.fileId)).toMatchObject({ file_id: s.fileId, status: 'uploading', part_count: 2, received: [2], missing: [1] });

    const missing = await failure(c.completeUpload(s.fileId), 409, 'missing_parts');
    expect(missing.details.missing).toEqual([1]);

    const p1 = await c.uploadPart({ ...session, partNumber: 1, body: bytes.subarray(0, CHUNK_SIZE).toString('base64') });
    expect(p1).toMatchObject({ partNumber: 1, size: CHUNK_SIZE, received_parts: 2, part_count: 2 });
    const done = await c.completeUpload(s.fileId);
    expect(done).toMatchObject({ file_id: s.fileId, status: 'ready', size: bytes.length, sha256: sha256(bytes), delivery_url: `${CDN}/files/${s.fileId}` });
    expect(await c.uploadStatus(s.fileId)).toMatchObject({ status: 'ready', part_count: 2, received: [1, 2], missing: [] });
    // Completing again answers the same record.
    expect(await c.completeUpload(s.fileId)).toEqual(done);
    await failure(c.uploadPart({ ...session, partNumber: 1, body: bytes.subarray(0, CHUNK_SIZE).toString('base64') }), 409, 'upload_completed');
    await failure(c.abortUpload(s.fileId), 409, 'upload_completed');

    // Abort discards an open upload.
    const t = await c.initiateUpload({ name: 'gone.bin', visibility: 'Public', size: 10, file_type: 'other' });
    expect(await c.abortUpload(t.fileId)).toEqual({ file_id: t.fileId, aborted: true });
    expect((await failure(c.uploadStatus(t.fileId), 404, 'file_not_found')).details.file_id).toBe(t.fileId);
    await failure(c.uploadPart({ bucket: t.bucket, key: t.key, uploadId: t.uploadId, fileId: t.fileId, partNumber: 1, body: 'AAAAAAAAAAAAAA==' }), 404, 'upload_not_found');
  });

  it('createFolder, getFolder, updateFolder, deleteFolder', async () => {
    const c = client();
    const top = await c.createFolder({ name: ' sdk-photos ', visibility: 'Public' });
    expect(top).toMatchObject({ name: 'sdk-photos', visibility: 'Public', effective_visibility: 'Public', parent_id: null, path: '/sdk-photos' });
    expect(top.created_at).toMatch(ISO_MS);
    const sub = await c.createFolder({ name: '2026', visibility: 'PRIVATE', parent_id: top.folder_id });
    expect(sub).toMatchObject({ name: '2026', visibility: 'Private', effective_visibility: 'Private', parent_id: top.folder_id, path: '/sdk-photos/2026' });
    expect(await c.getFolder(sub.folder_id)).toEqual(sub);
    const dup = await failure(c.createFolder({ name: '2026', visibility: 'Public', parent_id: top.folder_id }), 409, 'folder_exists');
    expect(dup.details.folder_id).toBe(sub.folder_id);

    const renamed = await c.updateFolder({ folder_id: sub.folder_id, name: 'y2026', visibility: 'public' });
    expect(renamed).toMatchObject({ folder_id: sub.folder_id, name: 'y2026', visibility: 'Public', path: '/sdk-photos/y2026' });
    await failure(c.updateFolder({ folder_id: top.folder_id, parent_id: sub.folder_id }), 409, 'cycle');
    const moved = await c.updateFolder({ folder_id: sub.folder_id, parent_id: null });
    expect(moved).toMatchObject({ parent_id: null, path: '/y2026' });
    await c.updateFolder({ folder_id: sub.folder_id, parent_id: top.folder_id });

    await c.uploadFile(new Uint8Array([1, 2, 3]), { name: 'inside.bin', folderId: sub.folder_id });
    const notEmpty = await failure(c.deleteFolder({ folder_id: top.folder_id }), 409, 'folder_not_empty');
    expect(notEmpty.details.folder_id).toBe(top.folder_id);
    expect(await c.deleteFolder({ folder_id: top.folder_id, recursive: true })).toEqual({ folder_id: top.folder_id, deleted_files: 1, deleted_folders: 2 });
    const gone = await failure(c.getFolder(sub.folder_id), 404, 'folder_not_found');
    expect(gone.details.folder_id).toBe(sub.folder_id);
  });

  it('list, listPages (small pages, no skip or repeat, cursor followed) and search', async () => {
    const c = client();
    const box = await c.createFolder({ name: 'sdk-paging', visibility: 'Public' });
    const folderNames = ['b-reports', 'a-sub', 'c-sub'];
    const fileNames = ['report-a.txt', 'Quarterly REPORT.pdf', 'notes.md', 'zeta.bin', 'alpha.bin'];
    const [folders, files] = await Promise.all([
      Promise.all(folderNames.map((name) => c.createFolder({ name, visibility: 'Public', parent_id: box.folder_id }))),
      Promise.all(fileNames.map((name, i) => c.uploadFile(randomBytes(10 + i * 7), { name, folderId: box.folder_id }))),
    ]);
    // An unfinished upload is not listed.
    await c.initiateUpload({ name: 'unfinished-report.txt', visibility: 'Public', size: 5, file_type: 'document', folder_id: box.folder_id });

    const all = await c.list({ folder_id: box.folder_id });
    expect(all.folder).toEqual(box);
    expect(all.breadcrumbs).toEqual([box]);
    expect(all.folders.map((f) => f.name)).toEqual(['a-sub', 'b-reports', 'c-sub']);
    // Names sort without regard to case.
    expect(all.files.map((f) => f.name)).toEqual(['alpha.bin', 'notes.md', 'Quarterly REPORT.pdf', 'report-a.txt', 'zeta.bin']);
    expect(all.next_cursor).toBeNull();
    const root = await c.list();
    expect(root.folder).toBeNull();
    expect(root.breadcrumbs).toEqual([]);
    expect(root.folders.map((f) => f.folder_id)).toContain(box.folder_id);

    const t = tap();
    const paged = client({ fetch: t.fetch });
    const pages = [];
    for await (const page of paged.listPages({ folder_id: box.folder_id, limit: 2 })) pages.push(page);
    expect(pages.length).toBeGreaterThanOrEqual(4);
    const ids: string[] = [];
    for (const [i, page] of pages.entries()) {
      expect(page.folders.length + page.files.length).toBeLessThanOrEqual(2);
      if (i < pages.length - 1) {
        expect(page.folders.length + page.files.length).toBe(2);
        expect(page.next_cursor).toEqual(expect.any(String));
      }
      ids.push(...page.folders.map((f) => f.folder_id), ...page.files.map((f) => f.file_id));
    }
    expect(pages.at(-1)!.next_cursor).toBeNull();
    // Folders first, then files, each in name order, every entry exactly once.
    expect(ids).toEqual([...all.folders.map((f) => f.folder_id), ...all.files.map((f) => f.file_id)]);
    expect(new Set(ids).size).toBe(folders.length + files.length);
    // One request per page, each sending the previous page's cursor.
    const calls = t.sent.filter((s) => s.path === '/collections/list');
    expect(calls).toHaveLength(pages.length);
    expect(calls.map((s) => s.body.cursor)).toEqual([null, ...pages.slice(0, -1).map((p) => p.next_cursor)]);
    expect(calls.every((s) => s.body.limit === 2 && s.body.folder_id === box.folder_id)).toBe(true);

    const bySize: FileRecord[] = [];
    for await (const page of c.listPages({ folder_id: box.folder_id, limit: 3, sort: 'size', order: 'desc' })) bySize.push(...page.files);
    expect(bySize.map((f) => f.size)).toEqual(files.map((f) => f.size).sort((a, b) => b - a));

    const found = await c.search({ folder_id: box.folder_id, query: 'REPORT' });
    expect(found.folders.map((f) => f.name)).toEqual(['b-reports']);
    expect(found.files.map((f) => f.name).sort()).toEqual(['Quarterly REPORT.pdf', 'report-a.txt']);
    expect(found.next_cursor).toBeNull();
    expect((await c.search({ query: 'report-a' })).files).toEqual([]); // direct children of the root only
    expect((await failure(c.search({ query: '  ' }), 400, 'invalid_query')).details.field).toBe('query');
  });

  it('getFile, updateFile, downloadUrl, createLink, deleteFile', async () => {
    const c = client();
    const bytes = randomBytes(321);
    const f = await c.uploadFile(bytes, { name: 'pic.png' });
    expect(f).toMatchObject({ name: 'pic.png', file_type: 'image', content_type: 'image/png', visibility: 'Public', status: 'ready', size: 321, sha256: sha256(bytes) });
    expect(await c.getFile(f.file_id)).toEqual({ ...f, downloads: 0, bytes_served: 0 });

    const pub = await c.downloadUrl({ file_id: f.file_id });
    expect(pub).toEqual({ file_id: f.file_id, download_url: `${f.delivery_url}?download=1`, expires_at: null });

    const folder = await c.createFolder({ name: 'sdk-vault', visibility: 'Private' });
    const moved = await c.updateFile({ file_id: f.file_id, name: 'renamed.png', folder_id: folder.folder_id });
    expect(moved).toMatchObject({ file_id: f.file_id, name: 'renamed.png', folder_id: folder.folder_id, visibility: 'Public', effective_visibility: 'Private', delivery_url: f.delivery_url });
    const priv = await c.updateFile({ file_id: f.file_id, visibility: 'private', folder_id: null });
    expect(priv).toMatchObject({ visibility: 'Private', effective_visibility: 'Private', folder_id: null });

    const before = nowSeconds();
    const dl = await c.downloadUrl({ file_id: f.file_id, expiry: 120 });
    const m = /^http:\/\/cdn\.test\/files\/([^?]+)\?X-Expires=(\d+)&X-Issued=\d+&download=1&X-Sig=[A-Za-z0-9_-]{43}$/.exec(dl.download_url);
    expect(m, dl.download_url).not.toBeNull();
    expect(m![1]).toBe(f.file_id);
    expect(Number(m![2]) - before).toBeGreaterThanOrEqual(119);
    expect(dl.expires_at).toBe(new Date(Number(m![2]) * 1000).toISOString());

    const link = await c.createLink({ file_id: f.file_id, file_type: 'image', expiry: 60 });
    expect(link).toMatchObject({ file_id: f.file_id, file_type: 'image', expiry: 60 });
    expect(link.presigned_url.startsWith(`${f.delivery_url}?X-Expires=`)).toBe(true);
    expect(Date.parse(link.expires_at) / 1000).toBe(Number(/X-Expires=(\d+)/.exec(link.presigned_url)![1]));
    expect((await failure(c.createLink({ file_id: f.file_id, file_type: 'video' }), 400, 'file_type_mismatch')).details.field).toBe('file_type');

    expect(await c.deleteFile(f.file_id)).toEqual({ file_id: f.file_id, deleted: true });
    expect((await failure(c.getFile(f.file_id), 404, 'file_not_found')).details.file_id).toBe(f.file_id);
  });

  it('uploadFile takes a File from fileFromPath, a 0-byte source and a Uint8Array view', async () => {
    const c = client();
    const dir = await mkdtemp(join(tmpdir(), 'coffer-sdk-'));
    try {
      const bytes = randomBytes(4096);
      await writeFile(join(dir, 'notes.txt'), bytes);
      const file = await fileFromPath(join(dir, 'notes.txt'));
      expect(file.name).toBe('notes.txt');
      const rec = await c.uploadFile(file);
      expect(rec).toMatchObject({ name: 'notes.txt', size: 4096, file_type: 'document', content_type: 'text/plain', sha256: sha256(bytes) });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    const t = tap();
    const empty = await client({ fetch: t.fetch }).uploadFile(new Uint8Array(0), { name: 'empty.bin' });
    expect(empty).toMatchObject({ size: 0, status: 'ready', sha256: sha256(new Uint8Array(0)) });
    expect(t.parts()).toEqual([1]);

    const backing = randomBytes(1000);
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 100, 500);
    const v = await c.uploadFile(view, { name: 'view.bin', visibility: 'Private', fileType: 'archive', contentType: 'application/zip' });
    expect(v).toMatchObject({ size: 500, sha256: sha256(view), visibility: 'Private', file_type: 'archive', content_type: 'application/zip' });

    await failure(c.uploadFile(new Uint8Array(3)), 0, 'invalid_argument'); // no name
    await failure(c.uploadFile(new Uint8Array(3), { name: 'x', concurrency: 0 }), 0, 'invalid_argument');
  });
});

// ---------------------------------------------------------------- 2. error mapping

describe('errors are CofferErrors with status, code, message and details', () => {
  let html: http.Server;
  let htmlUrl = '';
  let htmlStatus = 200;
  beforeAll(async () => {
    html = http.createServer((req, res) => {
      req.resume();
      const status = Number(new URL(req.url!, 'http://x').searchParams.get('status') ?? htmlStatus);
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html><body>Welcome to nginx!</body></html>');
    });
    await new Promise<void>((r) => html.listen(0, '127.0.0.1', () => r()));
    htmlUrl = `http://127.0.0.1:${(html.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => html.close(() => r()));
  });

  it('404 file_not_found carries details.file_id', async () => {
    const e = await failure(client().getFile('no-such-file'), 404, 'file_not_found');
    expect(e.details).toEqual({ file_id: 'no-such-file' });
    expect(e.message).toContain('no-such-file');
  });

  it('400 names the field in details.field', async () => {
    const c = client();
    expect((await failure(c.createFolder({ name: 'a/b', visibility: 'Public' }), 400, 'invalid_name')).details.field).toBe('name');
    const f = await c.uploadFile(new Uint8Array([9]), { name: 'one.bin' });
    expect((await failure(c.createLink({ file_id: f.file_id, file_type: 'other', expiry: 0 }), 400, 'invalid_expiry')).details.field).toBe('expiry');
    expect((await failure(c.initiateUpload({ name: 'x', visibility: 'Public', size: 1.5, file_type: 'other' }), 400, 'invalid_size')).details.field).toBe('size');
  });

  it('409 missing_parts lists details.missing', async () => {
    const c = client();
    const s = await c.initiateUpload({ name: 'three.bin', visibility: 'Public', size: 2 * CHUNK_SIZE + 3, file_type: 'other' });
    await c.uploadPart({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 3, body: 'AAAA' });
    expect((await failure(c.completeUpload(s.fileId), 409, 'missing_parts')).details.missing).toEqual([1, 2]);
    await c.abortUpload(s.fileId);
  });

  it('401 unauthorized with a wrong key, and without one; never retried', async () => {
    const t = tap();
    await failure(client({ accessKey: 'wrong-key', fetch: t.fetch }).getFile('x'), 401, 'unauthorized');
    await failure(new CofferClient({ url: o.url, fetch: t.fetch }).list(), 401, 'unauthorized');
    expect(t.sent).toHaveLength(2);
  });

  it('a server answering HTML gives http_error with its status; a 2xx HTML page is not retried', async () => {
    const t = tap();
    const c = new CofferClient({ url: htmlUrl, accessKey: 'k', retry: FAST, fetch: t.fetch });
    htmlStatus = 200;
    const ok = await failure(c.getFile('x'), 200, 'http_error');
    expect(ok.message).toMatch(/text\/html/);
    expect(t.sent).toHaveLength(1);
    htmlStatus = 404;
    await failure(c.getFile('x'), 404, 'http_error');
    await failure(c.createFolder({ name: 'x', visibility: 'Public' }), 404, 'http_error');
    expect(t.sent).toHaveLength(3);
    htmlStatus = 200;
    await failure(c.health(), 200, 'http_error');
    htmlStatus = 502;
    await failure(c.health(), 502, 'http_error');
    // A 5xx page is a server failure: an idempotent call tries again (default 5 attempts).
    t.sent.length = 0;
    await failure(c.getFile('x'), 502, 'http_error');
    expect(t.sent).toHaveLength(5);
  });

  it('an unreachable URL gives status 0 network_error naming the URL', async () => {
    const port = await closedPort();
    const t = tap();
    const c = new CofferClient({ url: `http://127.0.0.1:${port}`, accessKey: 'k', retry: { baseDelayMs: 1 }, fetch: t.fetch });
    const e = await failure(c.getFile('x'), 0, 'network_error');
    expect(e.message).toContain(`127.0.0.1:${port}`);
    expect(e.details).toEqual({});
    expect(t.sent).toHaveLength(5); // idempotent: retried up to the attempts
    await failure(c.health(), 0, 'network_error');
    await failure(c.createFolder({ name: 'x', visibility: 'Public' }), 0, 'network_error');
    expect(t.sent).toHaveLength(7);
  });
});

// ---------------------------------------------------------------- 3. retry policy

describe('retry policy', () => {
  it('429 is retried for any call after Retry-After seconds, and the call then succeeds once', async () => {
    let injected = 0;
    const retries: RetryInfo[] = [];
    const t = tap((s, real) => (s.path === '/collections/folder/create' && injected++ === 0 ? Promise.resolve(errorResponse(429, 'rate_limited', { 'retry-after': '1' })) : real()));
    const c = client({ fetch: t.fetch, onRetry: (i) => retries.push(i) });
    const t0 = performance.now();
    const f = await c.createFolder({ name: 'sdk-after-429', visibility: 'Public' });
    const elapsed = performance.now() - t0;
    expect(f.name).toBe('sdk-after-429');
    expect(t.count('/collections/folder/create')).toBe(2);
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ path: '/collections/folder/create', attempt: 1, delayMs: 1000 });
    expect(retries[0]!.error).toBeInstanceOf(CofferError);
    expect(retries[0]!.error.code).toBe('rate_limited');
    expect(elapsed).toBeGreaterThanOrEqual(950);
    const listed = await client().list();
    expect(listed.folders.filter((x) => x.name === 'sdk-after-429')).toHaveLength(1);
  });

  it('503 is retried for a non-idempotent call too, honouring Retry-After: 0', async () => {
    let injected = 0;
    const retries: RetryInfo[] = [];
    const t = tap((s, real) => (s.path === '/collections/file/delete' && injected++ < 2 ? Promise.resolve(errorResponse(503, 'unavailable', { 'retry-after': '0' })) : real()));
    const f = await client().uploadFile(new Uint8Array([1]), { name: 'del.bin' });
    expect(await client({ fetch: t.fetch, onRetry: (i) => retries.push(i) }).deleteFile(f.file_id)).toEqual({ file_id: f.file_id, deleted: true });
    expect(t.count('/collections/file/delete')).toBe(3);
    expect(retries.map((r) => [r.attempt, r.delayMs, r.error.status])).toEqual([[1, 0, 503], [2, 0, 503]]);
  });

  it('without Retry-After the backoff starts from baseDelayMs', async () => {
    let injected = 0;
    const retries: RetryInfo[] = [];
    const t = tap((s, real) => (injected++ < 3 ? Promise.resolve(errorResponse(503, 'unavailable')) : real()));
    await client({ fetch: t.fetch, retry: { baseDelayMs: 20, maxDelayMs: 40 }, onRetry: (i) => retries.push(i) }).list();
    expect(retries.map((r) => r.attempt)).toEqual([1, 2, 3]);
    const [d1, d2, d3] = retries.map((r) => r.delayMs);
    expect(d1).toBeGreaterThanOrEqual(10);
    expect(d1).toBeLessThanOrEqual(20);
    expect(d2).toBeGreaterThanOrEqual(20);
    expect(d2).toBeLessThanOrEqual(40);
    expect(d3).toBeGreaterThanOrEqual(20); // capped at maxDelayMs
    expect(d3).toBeLessThanOrEqual(40);
  });

  it('network errors and 5xx are retried for idempotent calls only', async () => {
    const c0 = client();
    const folder = await c0.createFolder({ name: 'sdk-retry-target', visibility: 'Public' });
    const file = await c0.uploadFile(new Uint8Array([1, 2]), { name: 'r.bin' });

    type Call = { name: string; path: string; run: (c: CofferClient) => Promise<unknown> };
    const idempotent: Call[] = [
      { name: 'getFile', path: '/collections/file/get', run: (c) => c.getFile(file.file_id) },
      { name: 'getFolder', path: '/collections/folder/get', run: (c) => c.getFolder(folder.folder_id) },
      { name: 'list', path: '/collections/list', run: (c) => c.list({ folder_id: folder.folder_id }) },
      { name: 'search', path: '/collections/search', run: (c) => c.search({ query: 'r.bin' }) },
      { name: 'updateFile', path: '/collections/file/update', run: (c) => c.updateFile({ file_id: file.file_id, name: 'r2.bin' }) },
      { name: 'downloadUrl', path: '/collections/file/download', run: (c) => c.downloadUrl({ file_id: file.file_id }) },
      { name: 'createLink', path: '/collections/create-link', run: (c) => c.createLink({ file_id: file.file_id, file_type: 'other' }) },
      { name: 'uploadStatus', path: '/collections/upload/status', run: (c) => c.uploadStatus(file.file_id) },
      { name: 'completeUpload', path: '/collections/upload/complete-upload', run: (c) => c.completeUpload(file.file_id) },
    ];
    const notIdempotent: Call[] = [
      { name: 'createFolder', path: '/collections/folder/create', run: (c) => c.createFolder({ name: 'sdk-never-made', visibility: 'Public' }) },
      { name: 'initiateUpload', path: '/collections/upload/file', run: (c) => c.initiateUpload({ name: 'never.bin', visibility: 'Public', size: 1, file_type: 'other' }) },
      { name: 'deleteFile', path: '/collections/file/delete', run: (c) => c.deleteFile(file.file_id) },
      { name: 'deleteFolder', path: '/collections/folder/delete', run: (c) => c.deleteFolder({ folder_id: folder.folder_id }) },
    ];
    const faults = [
      { kind: 'network', make: (): Promise<Response> => Promise.reject(networkFailure()), status: 0, code: 'network_error' },
      { kind: '500', make: () => Promise.resolve(errorResponse(500, 'internal_error')), status: 500, code: 'internal_error' },
      { kind: '502', make: () => Promise.resolve(errorResponse(502, 'bad_gateway')), status: 502, code: 'bad_gateway' },
    ];
    await Promise.all(faults.flatMap((fault) => [
      ...idempotent.map(async (call) => {
        let n = 0;
        const t = tap((s, real) => (s.path === call.path && n++ === 0 ? fault.make() : real()));
        await expect(call.run(client({ fetch: t.fetch })), `${call.name} after ${fault.kind}`).resolves.toBeDefined();
        expect(t.count(call.path), `${call.name} after ${fault.kind}`).toBe(2);
      }),
      ...notIdempotent.map(async (call) => {
        const t = tap((s, real) => (s.path === call.path ? fault.make() : real()));
        await failure(call.run(client({ fetch: t.fetch })), fault.status, fault.code);
        expect(t.count(call.path), `${call.name} after ${fault.kind}`).toBe(1);
      }),
    ]));
    // Nothing the non-idempotent calls were refused reached the service.
    expect((await c0.getFolder(folder.folder_id)).folder_id).toBe(folder.folder_id);
    expect((await c0.getFile(file.file_id)).status).toBe('ready');
    expect((await c0.list()).folders.filter((f) => f.name === 'sdk-never-made')).toEqual([]);
  });

  it('createFolder whose answer is lost is not repeated: the folder exists once', async () => {
    const t = tap(async (s, real) => {
      const res = await real();
      await res.arrayBuffer();
      throw networkFailure();
    });
    await failure(client({ fetch: t.fetch }).createFolder({ name: 'sdk-lost-answer', visibility: 'Public' }), 0, 'network_error');
    expect(t.sent).toHaveLength(1);
    expect((await client().list()).folders.filter((f) => f.name === 'sdk-lost-answer')).toHaveLength(1);
  });

  it('4xx other than 429 is never retried', async () => {
    const c0 = client();
    const t = tap();
    const c = client({ fetch: t.fetch });
    await failure(c.getFile('nope'), 404, 'file_not_found');
    await failure(c.getFolder('nope'), 404, 'folder_not_found');
    await failure(c.createFolder({ name: '..', visibility: 'Public' }), 400, 'invalid_name');
    await failure(c.list({ limit: 0 }), 400, 'invalid_limit');
    const a = await c0.createFolder({ name: 'sdk-4xx', visibility: 'Public' });
    await failure(c.createFolder({ name: 'sdk-4xx', visibility: 'Public' }), 409, 'folder_exists');
    await failure(c.deleteFolder({ folder_id: a.folder_id, recursive: 'yes' as unknown as boolean }), 400, 'invalid_request');
    expect(t.sent).toHaveLength(6);

    // Injected client errors on an idempotent call: one request each.
    for (const [status, code] of [[400, 'invalid_request'], [403, 'forbidden'], [404, 'file_not_found'], [409, 'cycle'], [413, 'payload_too_large'], [415, 'unsupported_media_type']] as const) {
      const t2 = tap(() => Promise.resolve(errorResponse(status, code)));
      await failure(client({ fetch: t2.fetch }).getFile('x'), status, code);
      expect(t2.sent, `${status}`).toHaveLength(1);
    }
  });

  it('retries stop after `attempts`; retry: false (client or call) never retries', async () => {
    const always503 = () => tap(() => Promise.resolve(errorResponse(503, 'unavailable', { 'retry-after': '0' })));
    let t = always503();
    await failure(client({ fetch: t.fetch, retry: { attempts: 3, baseDelayMs: 1 } }).createFolder({ name: 'x', visibility: 'Public' }), 503, 'unavailable');
    expect(t.sent).toHaveLength(3);
    t = always503();
    await failure(client({ fetch: t.fetch, retry: false }).getFile('x'), 503, 'unavailable');
    expect(t.sent).toHaveLength(1);
    t = always503();
    await failure(client({ fetch: t.fetch }).getFile('x', { retry: false }), 503, 'unavailable');
    expect(t.sent).toHaveLength(1);
    t = tap(() => Promise.reject(networkFailure()));
    await failure(client({ fetch: t.fetch }).getFile('x', { retry: { attempts: 2 } }), 0, 'network_error');
    expect(t.sent).toHaveLength(2);
  });

  it('an abort during the wait between attempts rejects at once with the abort reason', async () => {
    const t = tap(() => Promise.resolve(errorResponse(429, 'rate_limited', { 'retry-after': '30' })));
    const ctl = new AbortController();
    const p = client({ fetch: t.fetch }).getFile('x', { signal: ctl.signal });
    setTimeout(() => ctl.abort(), 50);
    const t0 = performance.now();
    await expect(p).rejects.toMatchObject({ name: 'AbortError' });
    // Real time: the SDK waits on the system's timers; 2 s against the 30 s Retry-After.
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(t.sent).toHaveLength(1);
  });
});

// ---------------------------------------------------------------- 4–6. the uploader

describe('uploadFile', () => {
  it('30 MiB with one part failing by network error and one by a 500: both sent again, bytes whole', async () => {
    const bytes = randomBytes(30 * MiB);
    const want = sha256(bytes);
    const failed = new Map<number, string>([[2, 'network'], [5, '500']]);
    const injected: number[] = [];
    const t = tap((s, real) => {
      const fault = s.part !== null ? failed.get(s.part) : undefined;
      if (fault) {
        failed.delete(s.part!);
        injected.push(s.part!);
        return fault === 'network' ? Promise.reject(networkFailure()) : Promise.resolve(errorResponse(500, 'internal_error'));
      }
      return real();
    });
    const progress: UploadProgress[] = [];
    const rec = await client({ fetch: t.fetch }).uploadFile(bytes, { name: 'big.bin', concurrency: 3, onProgress: (p) => progress.push({ ...p }) });

    expect(injected.sort()).toEqual([2, 5]);
    const sends = new Map<number, number>();
    for (const n of t.parts()) sends.set(n, (sends.get(n) ?? 0) + 1);
    expect(Object.fromEntries(sends)).toEqual({ 1: 1, 2: 2, 3: 1, 4: 1, 5: 2, 6: 1 });
    expect(t.count('/collections/upload/file')).toBe(1);
    expect(t.count('/collections/upload/complete-upload')).toBe(1);

    expect(rec).toMatchObject({ status: 'ready', size: bytes.length, sha256: want, name: 'big.bin' });
    expect(await client().getFile(rec.file_id)).toMatchObject({ sha256: want, size: 30 * MiB, status: 'ready' });

    expect(progress[0]).toMatchObject({ loaded: 0, partsDone: 0, total: 30 * MiB, partCount: 6, fileId: rec.file_id, name: 'big.bin' });
    for (let i = 1; i < progress.length; i++) {
      expect(progress[i]!.loaded).toBeGreaterThanOrEqual(progress[i - 1]!.loaded);
      expect(progress[i]!.partsDone).toBe(progress[i - 1]!.partsDone + 1);
    }
    expect(progress).toHaveLength(7);
    expect(progress.at(-1)).toMatchObject({ loaded: 30 * MiB, total: 30 * MiB, partsDone: 6 });
  });

  it('abort midway rejects with AbortError and leaves the upload open; resume sends only the missing parts', async () => {
    const bytes = randomBytes(30 * MiB);
    const blob = new Blob([bytes]);
    const ctl = new AbortController();
    let handle: ResumeHandle | undefined;
    // The first two parts go through; every later one waits, unsent, until its request is
    // aborted: the abort comes while they are in flight and must reach them by the signal.
    let passed = 0;
    const gate = tap((s, real, init) => {
      if (s.part === null) return real();
      if (passed++ < 2) return real();
      return new Promise<Response>((_, reject) => {
        const signal = init?.signal;
        if (!signal) return reject(new Error('uploadPart was sent without a signal'));
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    });
    const firstProgress: UploadProgress[] = [];
    const first = client({ fetch: gate.fetch }).uploadFile(blob, {
      name: 'resumable.bin', concurrency: 2, signal: ctl.signal,
      onSession: (s) => { handle = s; },
      onProgress: (p) => {
        firstProgress.push({ ...p });
        if (p.partsDone === 2) ctl.abort();
      },
    });
    const err = await first.then(() => null, (e: unknown) => e as Error);
    expect(err).not.toBeNull();
    expect(err!.name).toBe('AbortError');
    expect(handle).toBeDefined();
    expect(firstProgress.at(-1)).toMatchObject({ loaded: 2 * CHUNK_SIZE, partsDone: 2, total: 30 * MiB });
    const sentFirst = gate.parts();
    expect(sentFirst.slice(0, 2).sort()).toEqual([1, 2]);
    expect(sentFirst.length).toBeLessThanOrEqual(4); // two acknowledged, at most two held when aborted
    expect(gate.count('/collections/upload/complete-upload')).toBe(0);

    const c = client();
    const status = await c.uploadStatus(handle!.fileId);
    expect(status).toMatchObject({ file_id: handle!.fileId, status: 'uploading', part_count: 6, received: [1, 2], missing: [3, 4, 5, 6] });
    expect((await c.getFile(handle!.fileId)).status).toBe('uploading');

    const second = tap();
    const progress: UploadProgress[] = [];
    let newSession = false;
    const rec = await client({ fetch: second.fetch }).uploadFile(blob, {
      name: 'resumable.bin', concurrency: 2, resume: handle, onSession: () => { newSession = true; }, onProgress: (p) => progress.push({ ...p }),
    });
    expect(new Set(second.parts())).toEqual(new Set(status.missing));
    expect(second.parts()).toHaveLength(status.missing.length);
    expect(second.count('/collections/upload/file')).toBe(0);
    expect(newSession).toBe(false);
    expect(rec).toMatchObject({ file_id: handle!.fileId, status: 'ready', size: 30 * MiB, sha256: sha256(bytes) });
    // Progress starts from the parts kept, and ends whole.
    expect(progress[0]).toMatchObject({ loaded: 2 * CHUNK_SIZE, partsDone: 2, partCount: 6 });
    expect(progress.at(-1)).toMatchObject({ loaded: 30 * MiB, partsDone: 6 });
  });

  it('resume of an aborted or unknown upload starts a new one', async () => {
    const c = client();
    const bytes = randomBytes(2000);
    const s = await c.initiateUpload({ name: 'r.bin', visibility: 'Public', size: bytes.length, file_type: 'other' });
    await c.abortUpload(s.fileId);
    for (const resume of [
      { fileId: s.fileId, bucket: s.bucket, key: s.key, uploadId: s.uploadId },
      { fileId: 'never-existed', bucket: 'b', key: 'k', uploadId: 'u' },
    ]) {
      const t = tap();
      const sessions: ResumeHandle[] = [];
      const rec = await client({ fetch: t.fetch }).uploadFile(bytes, { name: 'fresh.bin', resume, onSession: (h) => sessions.push(h) });
      expect(rec.file_id).not.toBe(resume.fileId);
      expect(rec).toMatchObject({ name: 'fresh.bin', status: 'ready', sha256: sha256(bytes) });
      expect(t.count('/collections/upload/file')).toBe(1);
      expect(sessions).toHaveLength(1);
      expect(sessions[0]!.fileId).toBe(rec.file_id);
    }
  });

  it('resume of a ready file returns its record without sending anything', async () => {
    const bytes = randomBytes(3000);
    let handle: ResumeHandle | undefined;
    const done = await client().uploadFile(bytes, { name: 'done.bin', onSession: (h) => { handle = h; } });
    const t = tap();
    const again = await client({ fetch: t.fetch }).uploadFile(bytes, { name: 'done.bin', resume: handle });
    expect(again).toEqual(done);
    expect(t.parts()).toEqual([]);
    expect(t.count('/collections/upload/file')).toBe(0);
    expect(t.count('/collections/upload/complete-upload')).toBe(0);
  });

  it('resume with a source of another size throws and sends nothing, even with the same part count', async () => {
    const c = client();
    const s = await c.initiateUpload({ name: 'sized.bin', visibility: 'Public', size: CHUNK_SIZE + 100, file_type: 'other' });
    const handle = { fileId: s.fileId, bucket: s.bucket, key: s.key, uploadId: s.uploadId };
    // The last part is already there: a same-count source would otherwise complete a mixed file.
    await c.uploadPart({ ...handle, partNumber: 2, body: randomBytes(100).toString('base64') });
    for (const size of [100, CHUNK_SIZE + 200, 3 * CHUNK_SIZE]) {
      const t = tap();
      const e = await failure(client({ fetch: t.fetch }).uploadFile(new Uint8Array(size), { name: 'sized.bin', resume: handle }), 0, 'invalid_argument');
      expect(e.message).toMatch(/not the same file/);
      expect(t.parts(), `size ${size}`).toEqual([]);
      expect(t.count('/collections/upload/file')).toBe(0);
      expect(t.count('/collections/upload/complete-upload')).toBe(0);
    }
    expect(await c.uploadStatus(s.fileId)).toMatchObject({ status: 'uploading', received: [2], missing: [1] });
    await c.abortUpload(s.fileId);
  });

  it('sends raw parts by default and JSON parts with partEncoding: "json"; both store the bytes', async () => {
    const bytes = randomBytes(2 * CHUNK_SIZE + 77);
    const raw = tap();
    const a = await client({ fetch: raw.fetch }).uploadFile(bytes, { name: 'raw.bin' });
    expect(raw.encodings()).toEqual(new Set(['raw']));
    expect(raw.parts().sort()).toEqual([1, 2, 3]);
    const json = tap();
    const b = await client({ fetch: json.fetch }).uploadFile(bytes, { name: 'json.bin', partEncoding: 'json' });
    expect(json.encodings()).toEqual(new Set(['json']));
    expect(json.parts().sort()).toEqual([1, 2, 3]);
    for (const rec of [a, b]) expect(rec).toMatchObject({ status: 'ready', size: bytes.length, sha256: sha256(bytes) });
    await failure(client().uploadFile(bytes, { name: 'x.bin', partEncoding: 'base64' as 'json' }), 0, 'invalid_argument');
  });

  it('falls back to JSON when a server older than raw parts answers 415, and keeps to JSON on that client', async () => {
    const old = await startOldServer(o.url);
    try {
      const c = client({ url: old.url });
      const bytes = randomBytes(3 * CHUNK_SIZE + 5);
      const rec = await c.uploadFile(bytes, { name: 'old-server.bin', concurrency: 1 });
      expect(rec).toMatchObject({ status: 'ready', size: bytes.length, sha256: sha256(bytes) });
      // One raw part was refused; it and every later part went as JSON.
      expect(old.refused).toEqual([1]);
      expect(old.forwarded.sort()).toEqual([1, 2, 3, 4]);
      // The next upload through the same client does not try raw again.
      const more = randomBytes(100);
      expect((await c.uploadFile(more, { name: 'old-server-2.bin' })).sha256).toBe(sha256(more));
      expect(old.refused).toEqual([1]);
      // With four parts in flight, each one refused is sent again as JSON.
      const fresh = client({ url: old.url });
      const rec4 = await fresh.uploadFile(bytes, { name: 'old-server-4.bin', concurrency: 4 });
      expect(rec4.sha256).toBe(sha256(bytes));
      expect(old.refused.length).toBeGreaterThan(1);
      expect(old.refused.length).toBeLessThanOrEqual(5);
    } finally {
      await old.close();
    }
  });

  it('a shared Limiter(2) keeps at most 2 part requests in flight across 4 uploads', async () => {
    const inFlight = (holdMs: number) => {
      let now = 0;
      let peak = 0;
      const t = tap(async (s, real) => {
        if (s.part === null) return real();
        now++;
        peak = Math.max(peak, now);
        try {
          await sleep(holdMs); // long enough that unbounded requests overlap
          return await real();
        } finally {
          now--;
        }
      });
      return { t, peak: () => peak };
    };

    // Without the limiter, the same instrumentation sees more than 2 at once.
    const control = inFlight(150);
    const cc = client({ fetch: control.t.fetch });
    await Promise.all([0, 1, 2, 3].map((i) => cc.uploadFile(randomBytes(100), { name: `free-${i}.bin` })));
    expect(control.peak()).toBeGreaterThan(2);

    const limited = inFlight(25);
    const c = client({ fetch: limited.t.fetch });
    const limiter = new Limiter(2);
    const sources = [0, 1, 2, 3].map(() => randomBytes(CHUNK_SIZE + 10));
    const recs = await Promise.all(sources.map((bytes, i) => c.uploadFile(bytes, { name: `shared-${i}.bin`, limiter, concurrency: 4 })));
    expect(limited.peak()).toBe(2);
    expect(limited.t.parts()).toHaveLength(8);
    recs.forEach((rec, i) => expect(rec.sha256).toBe(sha256(sources[i]!)));
  });
});

// ---------------------------------------------------------------- 7. offline links at a real edge

describe('signLink: links an edge accepts', () => {
  const SECRET_A = 'sdk-secret-a-' + randomBytes(6).toString('hex');
  const SECRET_B = 'sdk-secret-b-' + randomBytes(6).toString('hex');
  const SECRETS = `${SECRET_A},${SECRET_B}`;
  let lo: TestOrigin;
  let running: TestEdge;
  let edge: RunningEdge;
  let lc: CofferClient;
  let file: FileRecord;
  let other: FileRecord;
  const bytes = randomBytes(5000);

  /** GET at the edge with the path and query of a link (the host is not signed). */
  const atEdge = async (link: string) => {
    const u = new URL(link, CDN);
    const res = await fetch(`${edge.url}${u.pathname}${u.search}`);
    const body = Buffer.from(await res.arrayBuffer());
    let json: any;
    try {
      json = JSON.parse(body.toString());
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, body, json };
  };

  beforeAll(async () => {
    lo = await startTestOrigin({ COFFER_SIGNING_SECRET: SECRETS, COFFER_LOG_LEVEL: 'warn' });
    running = await startTestEdge(lo, () => ({ COFFER_SIGNING_SECRET: SECRETS }));
    edge = running.edge;
    lc = new CofferClient({ url: lo.url, accessKey: lo.key, retry: FAST });
    [file, other] = await Promise.all([
      lc.uploadFile(bytes, { name: 'secret report.txt', visibility: 'Private' }),
      lc.uploadFile(randomBytes(10), { name: 'other.txt', visibility: 'Private' }),
    ]);
  });
  afterAll(async () => {
    await running?.close();
    await lo?.close();
  });

  it('a Private file is refused unsigned and served with a link signed from its delivery_url', async () => {
    expect(file.delivery_url).toBe(`${CDN}/files/${file.file_id}`);
    const unsigned = await atEdge(file.delivery_url!);
    expect(unsigned.status).toBe(403);
    expect(unsigned.json.error.code).toBe('signature_required');

    const link = await signLink(file.delivery_url!, { expiresIn: 60, secret: SECRETS });
    expect(link.startsWith(`${file.delivery_url}?X-Expires=`)).toBe(true);
    const r = await atEdge(link);
    expect(r.status, r.body.toString()).toBe(200);
    expect(r.body.equals(bytes)).toBe(true);
    expect(r.headers.get('cache-control')).toBe('private, no-store');
    expect(r.headers.get('content-disposition')).toMatch(/^inline;/);
    expect(r.headers.get('etag')).toBe(`"${file.sha256}"`);
  });

  it('a bare path signs the same and works too', async () => {
    const now = nowSeconds();
    const path = `/files/${file.file_id}`;
    const bare = await signLink(path, { expiresIn: 60, secret: SECRETS, now });
    expect(bare.startsWith(`${path}?X-Expires=${now + 60}&X-Issued=${now * 1000}&X-Sig=`)).toBe(true);
    expect(await signLink(file.delivery_url!, { expiresIn: 60, secret: SECRETS, now })).toBe(`${CDN}${bare}`);
    const r = await atEdge(bare);
    expect(r.status).toBe(200);
    expect(r.body.equals(bytes)).toBe(true);
  });

  it('download: true makes the edge answer Content-Disposition: attachment', async () => {
    const link = await signLink(file.delivery_url!, { expiresIn: 60, secret: SECRETS, download: true });
    expect(link).toMatch(/\?X-Expires=\d+&X-Issued=\d+&download=1&X-Sig=/);
    const r = await atEdge(link);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(r.headers.get('content-disposition')).toContain("filename*=UTF-8''secret%20report.txt");
    expect(r.body.equals(bytes)).toBe(true);
  });

  it('a tampered link is 403 invalid_signature', async () => {
    const link = await signLink(file.delivery_url!, { expiresIn: 60, secret: SECRETS });
    const u = new URL(link);
    const sig = u.searchParams.get('X-Sig')!;
    const flipped = sig.slice(0, 10) + (sig[10] === 'A' ? 'B' : 'A') + sig.slice(11);
    const expires = Number(u.searchParams.get('X-Expires'));
    const tampered = [
      link.replace(`X-Sig=${sig}`, `X-Sig=${flipped}`),
      link.replace(`X-Expires=${expires}`, `X-Expires=${expires + 1}`),
      `${link}&download=1`,
      link.replace(file.file_id, other.file_id),
      (await signLink(file.delivery_url!, { expiresIn: 60, secret: 'not-the-secret' })),
    ];
    for (const t of tampered) {
      const r = await atEdge(t);
      expect(r.status, t).toBe(403);
      expect(r.json.error.code, t).toBe('invalid_signature');
    }
  });

  it('a link whose expiry has passed (now in the past) is 403 link_expired', async () => {
    const link = await signLink(file.delivery_url!, { expiresIn: 60, secret: SECRETS, now: nowSeconds() - 120 });
    const r = await atEdge(link);
    expect(r.status).toBe(403);
    expect(r.json.error.code).toBe('link_expired');
  });

  it('a comma-separated secret list signs with the first; the edge verifies with all', async () => {
    const now = nowSeconds();
    const withList = await signLink(file.delivery_url!, { expiresIn: 60, secret: SECRETS, now });
    expect(withList).toBe(await signLink(file.delivery_url!, { expiresIn: 60, secret: SECRET_A, now }));
    const withB = await signLink(file.delivery_url!, { expiresIn: 60, secret: SECRET_B, now });
    expect(withB).not.toBe(withList);
    expect((await atEdge(withB)).status).toBe(200);
  });

  it('equals the origin\'s create-link and download links for the same expiry time', async () => {
    for (const expiry of [1, 600, 86_400]) {
      const made = await lc.createLink({ file_id: file.file_id, file_type: 'document', expiry });
      const expires = Number(new URL(made.presigned_url).searchParams.get('X-Expires'));
      expect(await signLink(file.delivery_url!, { expiresIn: expiry, secret: SECRETS, now: expires - expiry, issuedAt: issuedOf(made.presigned_url) })).toBe(made.presigned_url);
    }
    const dl = await lc.downloadUrl({ file_id: file.file_id, expiry: 300 });
    const expires = Number(new URL(dl.download_url).searchParams.get('X-Expires'));
    expect(await signLink(file.delivery_url!, { expiresIn: 300, secret: SECRETS, now: expires - 300, issuedAt: issuedOf(dl.download_url), download: true })).toBe(dl.download_url);
  });

  it('equals create-link also when {cdn_url} has a path of its own', async () => {
    const po = await startTestOrigin({ COFFER_CDN_URL: 'https://example.com/cdn', COFFER_SIGNING_SECRET: SECRETS, COFFER_LOG_LEVEL: 'warn' });
    try {
      const pc = new CofferClient({ url: po.url, accessKey: po.key });
      const f = await pc.uploadFile(new Uint8Array([1, 2, 3]), { name: 'p.bin', visibility: 'Private' });
      expect(f.delivery_url).toBe(`https://example.com/cdn/files/${f.file_id}`);
      const made = await pc.createLink({ file_id: f.file_id, file_type: 'other', expiry: 100 });
      const expires = Number(new URL(made.presigned_url).searchParams.get('X-Expires'));
      expect(await signLink(f.delivery_url!, { expiresIn: 100, secret: SECRETS, now: expires - 100, issuedAt: issuedOf(made.presigned_url) })).toBe(made.presigned_url);
    } finally {
      await po.close();
    }
  });

  it('refuses expiresIn 0, 86401 and 1.5', async () => {
    for (const expiresIn of [0, 86_401, 1.5]) {
      await failure(signLink(file.delivery_url!, { expiresIn, secret: SECRETS }), 0, 'invalid_argument');
    }
  });
});

/** The X-Issued of a link the origin made, so an offline signature can be compared with it. */
function issuedOf(url: string): number {
  return Number(new URL(url).searchParams.get('X-Issued'));
}
