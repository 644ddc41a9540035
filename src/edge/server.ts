/**
 * One edge location: a plain Node HTTP server (no framework on the hot path) answering
 * from its cache while its lease on the origin's feed holds, and re-checking each
 * request with the origin, or answering 503, while it does not.
 */
import http from 'node:http';
import { open, statfs, writeFile, rename as renameFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import type { Config } from '../config/config.js';
import { ConfigError } from '../config/config.js';
import { MISSING_EDGE_TOKEN } from '../config/credentials.js';
import { nodeHmac } from '../core/hmac-node.js';
import type { Visibility } from '../core/records.js';
import { EdgeCache, type BlobSource, type CachedBytes } from './cache.js';
import { fetchBlobRaw } from './blob-fetch.js';
import { LinkChecker, contentDisposition, decide, isActiveContent, notModified, sendableType, parseRange, parseTarget, type ByteRange } from './delivery.js';
import { FeedFollower } from './follower.js';
import { originClient } from './origin-client.js';
import { EdgeState, type EdgeFile, type EdgeFolder } from './state.js';

export interface RunningEdge {
  url: string;
  port: number;
  state: EdgeState;
  follower: FeedFollower;
  cache: EdgeCache;
  close(): Promise<void>;
}

const PREWARM_CONCURRENCY = 4;
const STREAM_BUFFER = 1 << 20;
const spareBuffers: Buffer[] = [];
const takeBuffer = (): Buffer => spareBuffers.pop() ?? Buffer.allocUnsafeSlow(STREAM_BUFFER);
const returnBuffer = (b: Buffer): void => {
  if (spareBuffers.length < 32) spareBuffers.push(b);
};
const GIB = 1024 ** 3;

async function defaultCapacity(dir: string): Promise<number> {
  try {
    const s = await statfs(dir);
    // A quarter of the free space, within sensible bounds.
    return Math.max(256 * 1024 ** 2, Math.min(64 * GIB, Math.floor((s.bavail * s.bsize) / 4)));
  } catch {
    return 10 * GIB;
  }
}

function errorBody(code: string, message: string): string {
  return JSON.stringify({ error: { code, message, details: {} } });
}

export async function startEdge(config: Config, originUrl: string, opts: { cacheDir?: string; logStream?: NodeJS.WritableStream } = {}): Promise<RunningEdge> {
  if (config.signingSecrets.length === 0) {
    throw new ConfigError('An edge needs COFFER_SIGNING_SECRET (the same list as the origin) to check signed links.');
  }
  const secrets = config.signingSecrets;
  const originConn = originClient(originUrl, config.originCa);
  const origin = originConn.url;
  const token = config.edgeTokens[0];
  if (!token) throw new ConfigError(MISSING_EDGE_TOKEN);
  const dir = opts.cacheDir ?? config.dataDir;
  await mkdir(dir, { recursive: true });
  const log = pino({ level: config.logLevel, base: { role: 'edge' } }, opts.logStream ?? pino.destination(1));
  const capacity = config.edgeCacheBytes ?? (await defaultCapacity(dir));
  const agent = originConn.agent({ keepAlive: true, maxSockets: 16 });
  const recheckAgent = originConn.agent({ keepAlive: true, maxSockets: 64 });
  const fetchBlob = (id: string) => new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = originConn.get(`/_edge/blob/${id}`, { agent, headers: { authorization: `Bearer ${token}` }, timeout: 30_000 }, resolve);
    req.on('timeout', () => req.destroy(new Error('the origin did not send the bytes in time')));
    req.on('error', reject);
  });
  const source: BlobSource = (id, onChunk) => fetchBlobRaw(originConn, token, id, onChunk);
  const cache = new EdgeCache(dir, capacity, Math.min(256 * 1024 ** 2, Math.floor(capacity / 8)), source);
  await cache.open();

  // Completion events prefetch the bytes, a few at a time.
  const queue: EdgeFile[] = [];
  /** Files whose completion asked for a prefetch that has not started yet. */
  const queued = new Set<string>();
  let warming = 0;
  const isCurrent = (file: EdgeFile) => state.files.get(file.file_id)?.sha256 === file.sha256;
  const pump = () => {
    while (warming < PREWARM_CONCURRENCY && queue.length > 0) {
      const file = queue.shift()!;
      queued.delete(file.file_id);
      if (!isCurrent(file)) continue;
      warming++;
      cache.ensure(file, () => isCurrent(file))
        .catch((err) => log.warn({ err, file_id: file.file_id }, 'prefetch failed'))
        .finally(() => {
          warming--;
          pump();
        });
    }
  };
  const state: EdgeState = new EdgeState({
    fileReady: (file) => {
      queue.push(file);
      queued.add(file.file_id);
      pump();
    },
    fileGone: (id) => cache.drop(id),
  });
  const follower = new FeedFollower({
    origin: originConn, token, leaseMs: config.edgeLeaseMs, state,
    onError: (what, err) => log.warn({ err: (err as Error).message }, `${what} failed`),
  });
  await follower.start();
  // Bytes kept from an earlier run stay only if their file is still current.
  cache.retain(state.files);

  // The last applied sequence, for operators and the next start.
  let savedSeq = -1;
  const stateFile = join(dir, 'edge-state.json');
  const saver = setInterval(() => {
    if (state.seq === savedSeq) return;
    const seq = state.seq;
    const tmp = `${stateFile}.tmp`;
    writeFile(tmp, JSON.stringify({ origin, seq }) + '\n').then(() => renameFile(tmp, stateFile)).then(() => {
      savedSeq = seq;
    }, () => {});
  }, 1000);
  saver.unref();

  const links = new LinkChecker(secrets, nodeHmac);
  const publicCache = config.publicMaxAge !== undefined ? `public, max-age=${config.publicMaxAge}` : 'public, no-cache';
  const headerCache = new WeakMap<EdgeFile, Map<string, string[]>>();

  function baseHeaders(file: EdgeFile, signed: boolean, download: boolean): string[] {
    const key = `${signed ? 1 : 0}${download ? 1 : 0}`;
    let byVariant = headerCache.get(file);
    const cached = byVariant?.get(key);
    if (cached) return cached;
    const active = isActiveContent(file.content_type);
    const headers = [
      'Content-Type', sendableType(file.content_type),
      'ETag', `"${file.sha256}"`,
      'Last-Modified', new Date(file.completed_at).toUTCString(),
      'Accept-Ranges', 'bytes',
      'X-Content-Type-Options', 'nosniff',
      'Content-Disposition', contentDisposition(file.name, download || active),
      'Cache-Control', signed ? 'private, no-store' : publicCache,
    ];
    if (active) headers.push('Content-Security-Policy', "sandbox; default-src 'none'");
    if (!byVariant) {
      byVariant = new Map();
      headerCache.set(file, byVariant);
    }
    byVariant.set(key, headers);
    return headers;
  }

  // The complete header list of the commonest answer, built once per file and variant.
  const hitHeaders = new WeakMap<string[], string[]>();
  function fullHitHeaders(headers: string[], size: number): string[] {
    let full = hitHeaders.get(headers);
    if (!full) {
      full = [...headers, 'Content-Length', String(size), 'X-Cache', 'HIT'];
      hitHeaders.set(headers, full);
    }
    return full;
  }

  function sendError(res: http.ServerResponse, status: number, code: string, message: string, extra: string[] = []): void {
    const body = errorBody(code, message);
    res.writeHead(status, ['Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(Buffer.byteLength(body)), 'Cache-Control', 'no-store', 'X-Content-Type-Options', 'nosniff', ...extra]);
    res.end(body);
  }

  // After a failed re-check, requests are refused at once for a moment instead of each waiting.
  let originDownUntil = 0;
  const recheckTimeout = Math.max(100, Math.min(1000, Math.floor(config.edgeLeaseMs / 3)));

  /** Without a lease: the origin's word for this one request, or 503 when it cannot be had. */
  async function recheck(id: string): Promise<{ file: EdgeFile; visibility: Visibility } | null | 'unavailable'> {
    if (performance.now() < originDownUntil) return 'unavailable';
    try {
      const answer = await follower.getJson<{ file: EdgeFile; folders: EdgeFolder[] }>(`/_edge/file/${id}`, recheckTimeout, recheckAgent);
      const priv = answer.file.visibility === 'Private' || answer.folders.some((f) => f.visibility === 'Private');
      return { file: answer.file, visibility: priv ? 'Private' : 'Public' };
    } catch (err) {
      if ((err as { status?: number }).status === 404) return null;
      originDownUntil = performance.now() + 1000;
      return 'unavailable';
    }
  }

  function sendBytes(req: http.IncomingMessage, res: http.ServerResponse, file: EdgeFile, bytes: CachedBytes, headers: string[], range: ByteRange | null, xcache: string): void {
    const head = req.method === 'HEAD';
    if (range) {
      const length = range.end - range.start + 1;
      res.writeHead(206, [...headers, 'Content-Range', `bytes ${range.start}-${range.end}/${file.size}`, 'Content-Length', String(length), 'X-Cache', xcache]);
    } else if (xcache === 'HIT') {
      res.writeHead(200, fullHitHeaders(headers, file.size));
    } else {
      res.writeHead(200, [...headers, 'Content-Length', String(file.size), 'X-Cache', xcache]);
    }
    if (head) {
      res.end();
      return;
    }
    const start = range?.start ?? 0;
    const end = range?.end ?? file.size - 1;
    if (bytes.memory) {
      res.end(range ? bytes.memory.subarray(start, end + 1) : bytes.memory);
      return;
    }
    if (file.size === 0) {
      res.end();
      return;
    }
    streamFile(bytes.path!, start, end, res).catch(() => res.destroy());
  }

  /**
   * Sends a byte range of a cached file through two reused buffers: one is read while the
   * other is written, and nothing is allocated per chunk.
   */
  async function streamFile(path: string, start: number, end: number, res: http.ServerResponse): Promise<void> {
    // A client that goes away mid-file fails the write; that is the end of it, not a crash.
    res.on('error', () => {});
    const handle = await open(path, 'r');
    const buffers = [takeBuffer(), takeBuffer()];
    try {
      let writing: Promise<void> | null = null;
      let which = 0;
      for (let pos = start; pos <= end;) {
        const buf = buffers[which]!;
        which ^= 1;
        const { bytesRead } = await handle.read(buf, 0, Math.min(buf.length, end + 1 - pos), pos);
        if (bytesRead === 0) throw new Error('cached file shorter than its record');
        pos += bytesRead;
        if (writing) await writing;
        if (res.destroyed) return;
        const chunk = buf.subarray(0, bytesRead);
        // Never rejects: a failed write shows as a destroyed response on the next turn.
        writing = new Promise<void>((resolve) => res.write(chunk, () => resolve()));
      }
      if (writing) await writing;
      if (!res.destroyed) res.end();
    } finally {
      await handle.close();
      // A buffer still queued on a socket that closed early is not handed out again.
      if (!res.destroyed) for (const b of buffers) returnBuffer(b);
    }
  }

  /** Too large to cache: the bytes go straight through from the origin. */
  async function passThrough(req: http.IncomingMessage, res: http.ServerResponse, file: EdgeFile, headers: string[], range: ByteRange | null): Promise<void> {
    const upstream = await fetchBlob(file.file_id);
    if (upstream.statusCode !== 200) {
      upstream.resume();
      sendError(res, 502, 'bad_gateway', 'The origin could not send the file; try again.');
      return;
    }
    res.writeHead(range ? 206 : 200, [...headers, 'Content-Length', String(range ? range.end - range.start + 1 : file.size), 'X-Cache', 'MISS',
      ...(range ? ['Content-Range', `bytes ${range.start}-${range.end}/${file.size}`] : [])]);
    if (req.method === 'HEAD') {
      upstream.destroy();
      res.end();
      return;
    }
    let offset = 0;
    const start = range?.start ?? 0;
    const end = range?.end ?? file.size - 1;
    upstream.on('data', (chunk: Buffer) => {
      const from = Math.max(start, offset) - offset;
      const to = Math.min(end + 1, offset + chunk.length) - offset;
      offset += chunk.length;
      if (to > from && !res.write(chunk.subarray(from, to))) upstream.pause();
      if (offset > end) upstream.destroy();
    });
    res.on('drain', () => upstream.resume());
    upstream.on('end', () => res.end());
    upstream.on('close', () => res.end());
    upstream.on('error', () => res.destroy());
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendError(res, 405, 'method_not_allowed', 'Only GET and HEAD are answered here.', ['Allow', 'GET, HEAD']);
      return;
    }
    const target = parseTarget(req.url ?? '/');
    if ('error' in target) {
      sendError(res, 400, 'invalid_path', target.error);
      return;
    }
    if (target.path === '/healthz') {
      res.writeHead(200, ['Content-Type', 'application/json', 'Cache-Control', 'no-store']);
      res.end('{"status":"ok"}');
      return;
    }
    if (target.id === null) {
      sendError(res, 404, 'not_found', 'No file is at this address.');
      return;
    }
    let file: EdgeFile | undefined;
    let visibility: Visibility | undefined;
    const leased = follower.serving();
    if (leased) {
      file = state.files.get(target.id);
      visibility = file && state.visibilityOf(file);
    } else {
      const answer = await recheck(target.id);
      if (answer === 'unavailable') {
        sendError(res, 503, 'edge_unavailable', 'This edge cannot reach the origin right now; try again shortly.', ['Retry-After', '1']);
        return;
      }
      file = answer?.file;
      visibility = answer?.visibility;
    }
    const decision = decide(file, visibility, target.path, target.query, links, Math.floor(Date.now() / 1000));
    if (decision.kind === 'error') {
      sendError(res, decision.status, decision.code, decision.message);
      return;
    }
    const f = file!;
    const headers = baseHeaders(f, decision.signed, decision.download);
    const etag = `"${f.sha256}"`;
    if (notModified(req.headers['if-none-match'], req.headers['if-modified-since'], etag, f.completed_at)) {
      res.writeHead(304, ['ETag', etag, 'Last-Modified', new Date(f.completed_at).toUTCString(), 'Cache-Control', decision.signed ? 'private, no-store' : publicCache]);
      res.end();
      return;
    }
    let range = parseRange(req.headers.range, f.size);
    const ifRange = req.headers['if-range'] as string | undefined;
    if (range !== null && ifRange !== undefined && ifRange.trim() !== etag) range = null;
    if (range === 'unsatisfiable') {
      sendError(res, 416, 'range_not_satisfiable', 'The requested range lies outside the file.', ['Content-Range', `bytes */${f.size}`]);
      return;
    }
    let bytes = cache.lookup(f);
    let xcache = 'HIT';
    if (!bytes) {
      // A prefetch under way or queued was asked for by the completion, not by this request.
      if (!cache.fetching(f.file_id) && !queued.has(f.file_id)) xcache = 'MISS';
      bytes = await cache.ensure(f, () => (leased ? isCurrent(f) : true));
      // The file may have been deleted or changed while its bytes were on their way.
      if (leased && !isCurrent(f)) {
        sendError(res, 404, 'not_found', 'No file is at this address.');
        return;
      }
      if (!bytes) {
        await passThrough(req, res, f, headers, range);
        return;
      }
    }
    sendBytes(req, res, f, bytes, headers, range, xcache);
  }

  const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    handle(req, res).catch((err) => {
      log.error({ err }, 'delivery failed');
      if (!res.headersSent) sendError(res, 502, 'bad_gateway', 'The file could not be fetched from the origin; try again.');
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.edgePort, config.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.edgePort;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${host}:${port}`,
    port,
    state,
    follower,
    cache,
    close() {
      closing ??= (async () => {
        clearInterval(saver);
        follower.stop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        agent.destroy();
        recheckAgent.destroy();
      })();
      return closing;
    },
  };
}
