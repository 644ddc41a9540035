/**
 * One edge location: a plain Node HTTP server (listener.ts) answering
 * from its cache while its lease on the origin's feed holds, and re-checking each
 * request with the origin, or answering 503, while it does not.
 */
import http from 'node:http';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { lazyLog } from './lazy-log.js';
import type { Config } from '../config/config.js';
import { ConfigError } from '../config/config.js';
import { MISSING_EDGE_TOKEN } from '../config/credentials.js';
import { systemClock, type Clock } from '../core/clock.js';
import { nodeHmac } from '../core/hmac-node.js';
import type { Visibility } from '../core/records.js';
import { EdgeCache, defaultCapacity, type CachedBytes } from './cache.js';
import { fillSources } from './sources.js';
import { PARENT_HOT_FILES, tierRoute } from './tier-route.js';
import { HotBytes } from '../core/hot-bytes.js';
import { StatusReport } from './status.js';
import { LinkChecker, decide, notModified, originForm, parseRange, parseTarget, type ByteRange, type Judgement } from './delivery.js';
import { passThroughFromOrigin } from './pass-through.js';
import { FeedFollower } from './follower.js';
import { originClient } from './origin-client.js';
import { EdgeState, type EdgeFile, type EdgeFolder } from './state.js';
import { edgeMetrics } from './metrics.js';
import { watchUnhandledRejections } from '../metrics/unhandled.js';
import { UsageMeter } from './usage.js';
import { AccessLog } from './access-log.js';
import { VariantMaker } from './variants/maker.js';
import { variantReader, variantResponder } from './variants/serve.js';
import { variantOptions } from './variants/options.js';
import { InFlightResponses, type InFlight } from './in-flight.js';
import { streamFile } from './send.js';
import { Prefetcher } from './prefetch.js';
import { AnswerHeaders, sendError } from './answer-headers.js';
import { seqSaver } from './state-file.js';
import { listenEdge } from './listener.js';
import { askedHeaders } from './request-headers.js';

/** The route label of a request: a fixed set, never a file id. */
const routeOf = (target: string | undefined): string => {
  const url = target === undefined ? '' : originForm(target);
  return url.startsWith('/files/') ? '/files/:id' : url === '/healthz' || url === '/metrics' ? url : 'other';
};

export interface RunningEdge {
  url: string;
  port: number;
  state: EdgeState;
  follower: FeedFollower;
  cache: EdgeCache;
  /** Makes image variants (contract §13). */
  variants: VariantMaker;
  /** Files sent to child edges from one buffer (core/hot-bytes.ts). */
  childCopies: HotBytes;
  /** Sends what has been served since the last usage report now (tests; the edge reports every 10 s). */
  reportUsage(): Promise<void>;
  close(): Promise<void>;
}

const PREWARM_CONCURRENCY = 4;
/** How long a stopping edge lets answers under way finish. */
const CLOSE_GRACE_MS = 10_000;
/** A file whose content changed while its bytes were fetched is looked up again this often. */
const ATTEMPTS = 3;
export interface StartEdgeOptions {
  cacheDir?: string;
  logStream?: NodeJS.WritableStream;
  usageIntervalMs?: number;
  /** The lease, signed links' expiry and the re-check back-off run on it (default: the system's). */
  clock?: Clock;
}

export async function startEdge(config: Config, originUrl: string, opts: StartEdgeOptions = {}): Promise<RunningEdge> {
  if (config.signingSecrets.length === 0) {
    throw new ConfigError('An edge needs COFFER_SIGNING_SECRET (the same list as the origin) to check signed links.');
  }
  const secrets = config.signingSecrets;
  const clock = opts.clock ?? systemClock;
  const originConn = originClient(originUrl, config.originCa);
  const origin = originConn.url;
  const token = config.edgeTokens[0];
  if (!token) throw new ConfigError(MISSING_EDGE_TOKEN);
  const dir = opts.cacheDir ?? config.dataDir;
  await mkdir(dir, { recursive: true });
  // pino loads at the first line logged (lazy-log.ts).
  const log = lazyLog({ level: config.logLevel, base: { role: 'edge' } }, opts.logStream);
  const capacity = config.edgeCacheBytes ?? (await defaultCapacity(dir));
  const recheckAgent = originConn.agent({ keepAlive: true, maxSockets: 64 });
  // Fills come from the parents in order, then the origin (sources.ts); pass-through stays on the origin.
  const parents = config.edgeParents.map((p) => originClient(p, config.originCa));
  const sources = fillSources({ origin: originConn, parents, token, edgeId: () => follower.edgeId, seq: () => state.seq });
  const cache = new EdgeCache(dir, capacity, Math.min(256 * 1024 ** 2, Math.floor(capacity / 8)), sources);
  await cache.open();

  // Completion events prefetch the bytes, a few at a time.
  const isCurrent = (file: EdgeFile) => state.files.get(file.file_id)?.sha256 === file.sha256;
  const prefetch = new Prefetcher(PREWARM_CONCURRENCY, (file, stillCurrent) => cache.ensure(file, stillCurrent), isCurrent,
    (err, file) => log.warn({ err, file_id: file.file_id }, 'prefetch failed'));
  // Responses under way stop as soon as their file may no longer be served to them.
  const responses = new InFlightResponses({
    local: (e) => {
      if (!follower.serving()) return null;
      const file = state.files.get(e.fileId);
      if (!file || file.sha256 !== e.sha256) return false;
      return decide(file, state.visibilityOf(file), e.path, e.query, links, e.nowSeconds).kind === 'serve';
    },
    remote: async (e) => {
      const answer = await recheck(e.fileId);
      if (answer === 'unavailable' || answer === null || answer.file.sha256 !== e.sha256) return false;
      return decide(answer.file, answer.visibility, e.path, e.query, links, e.nowSeconds).kind === 'serve';
    },
  });
  const state: EdgeState = new EdgeState({
    // Bytes move once the completion is acknowledged fleet-wide (a completion waits for every
    // edge's acknowledgement, not for bytes); a file an update brought into view, after this edge's own.
    fileReady: (file, completedAt) => prefetch.add(file, (go) => (completedAt === null ? follower.afterAck(go) : follower.afterSettled(completedAt, go))),
    fileGone: (id) => cache.drop(id),
    changed: () => responses.narrowed(),
  });
  const follower = new FeedFollower({
    origin: originConn, token, leaseMs: config.edgeLeaseMs, state, clock,
    onError: (what, err) => log.warn({ err: (err as Error).message }, `${what} failed`),
  });
  await follower.start();
  // Bytes kept from an earlier run stay only if their file is still current.
  cache.retain(state.files);

  const saveSeq = seqSaver(join(dir, 'edge-state.json'), origin, state);
  await saveSeq.flush();
  follower.onTick(saveSeq);

  const links = new LinkChecker(secrets, nodeHmac);
  const publicCache = config.publicMaxAge !== undefined ? `public, max-age=${config.publicMaxAge}` : 'public, no-cache';
  const answerHeaders = new AnswerHeaders(publicCache);

  // After a failed re-check, requests are refused at once for a moment instead of each waiting.
  let originDownUntil = 0;
  const recheckTimeout = Math.max(100, Math.min(1000, Math.floor(config.edgeLeaseMs / 3)));

  /** Without a lease: the origin's word for this one request, or 503 when it cannot be had. */
  async function recheck(id: string): Promise<{ file: EdgeFile; visibility: Visibility } | null | 'unavailable'> {
    if (clock.monotonic() < originDownUntil) return 'unavailable';
    try {
      const answer = await follower.getJson<{ file: EdgeFile; folders: EdgeFolder[] }>(`/_edge/file/${id}`, recheckTimeout, recheckAgent);
      const priv = answer.file.visibility === 'Private' || answer.folders.some((f) => f.visibility === 'Private');
      return { file: answer.file, visibility: priv ? 'Private' : 'Public' };
    } catch (err) {
      if ((err as { status?: number }).status === 404) return null;
      originDownUntil = clock.monotonic() + 1000;
      return 'unavailable';
    }
  }

  function judgement(file: EdgeFile | undefined, visibility: Visibility | undefined, e: InFlight): Judgement {
    const decision = decide(file, visibility, e.path, e.query, links, e.nowSeconds);
    return decision.kind === 'error' ? { error: decision } : { file: file!, decision };
  }

  /** The delivery decision for this request as things stand now: at once under a lease, else from the origin. */
  function judge(e: InFlight): Judgement | Promise<Judgement> {
    if (follower.serving()) {
      const file = state.files.get(e.fileId);
      return judgement(file, file && state.visibilityOf(file), e);
    }
    return recheck(e.fileId).then((answer) => (answer === 'unavailable' ? answer : judgement(answer?.file, answer?.visibility, e)));
  }

  /** Answers a judgement that forbids serving; true when it did. */
  function refused(res: http.ServerResponse, judged: Judgement): judged is Exclude<Judgement, { file: EdgeFile }> {
    if (judged === 'unavailable') {
      sendError(res, 'edge_unavailable', 'This edge cannot reach the origin right now; try again shortly.', ['Retry-After', '1']);
      return true;
    }
    if ('error' in judged) {
      sendError(res, judged.error.code, judged.error.message);
      return true;
    }
    return false;
  }

  /** Answers from the cache. A body sent in one write needs no gate: it leaves while the decision holds. */
  function sendBytes(req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, file: EdgeFile, bytes: CachedBytes, headers: string[], range: ByteRange | null, xcache: string): void {
    metrics.body(res, xcache === 'HIT', range ? range.end - range.start + 1 : file.size);
    if (range) {
      const length = range.end - range.start + 1;
      res.writeHead(206, [...headers, 'Content-Range', `bytes ${range.start}-${range.end}/${file.size}`, 'Content-Length', String(length), 'X-Cache', xcache]);
    } else if (xcache === 'HIT') {
      res.writeHead(200, answerHeaders.hit(headers, file.size));
    } else {
      res.writeHead(200, [...headers, 'Content-Length', String(file.size), 'X-Cache', xcache]);
    }
    if (req.method === 'HEAD' || file.size === 0) {
      res.end();
      return;
    }
    const start = range?.start ?? 0;
    const end = range?.end ?? file.size - 1;
    if (bytes.memory) {
      res.end(range ? bytes.memory.subarray(start, end + 1) : bytes.memory);
      return;
    }
    void streamFile(bytes.path!, start, end, res, responses.track(entry), cache.dropBroken);
  }

  interface Miss {
    file: EdgeFile;
    headers: string[];
    range: ByteRange | null;
  }

  /**
   * Answers what can be answered at once: a refusal, 304, 416 or a cache hit. What is left
   * is a miss, returned to be fetched.
   */
  function respond(req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, judged: Judgement): Miss | null {
    if (refused(res, judged)) return null;
    const f = judged.file;
    entry.sha256 = f.sha256;
    const headers = answerHeaders.base(f, judged.decision.signed, judged.decision.download);
    // From rawHeaders: the hot path never makes Node build req.headers (request-headers.ts).
    const asked = askedHeaders(req.rawHeaders);
    const { ifNoneMatch, ifModifiedSince } = asked;
    // Most requests are not conditional: the ETag's text is made only for those that are.
    if ((ifNoneMatch !== undefined || ifModifiedSince !== undefined) && notModified(ifNoneMatch, ifModifiedSince, `"${f.sha256}"`, f.completed_at)) {
      res.writeHead(304, ['ETag', `"${f.sha256}"`, 'Last-Modified', new Date(f.completed_at).toUTCString(), 'Cache-Control', judged.decision.signed ? 'private, no-store' : publicCache]);
      res.end();
      return null;
    }
    let range = parseRange(asked.range, f.size);
    const ifRange = asked.ifRange;
    if (range !== null && ifRange !== undefined && ifRange.trim() !== `"${f.sha256}"`) range = null;
    if (range === 'unsatisfiable') {
      sendError(res, 'range_not_satisfiable', 'The requested range lies outside the file.', ['Content-Range', `bytes */${f.size}`]);
      return null;
    }
    const bytes = cache.lookup(f);
    if (!bytes) return { file: f, headers, range };
    sendBytes(req, res, entry, f, bytes, headers, range, 'HIT');
    return null;
  }

  /** Fetches a miss into the cache (or passes it through) and answers it if it may still be served. */
  async function fill(req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, miss: Miss): Promise<'done' | 'changed'> {
    const f = miss.file;
    // A prefetch under way or queued was asked for by the completion, not by this request.
    const joined = cache.fetching(f.file_id);
    const xcache = joined || prefetch.waiting(f.file_id) ? 'HIT' : 'MISS';
    const stillWanted = () => !follower.serving() || isCurrent(f);
    // A fetch this request only joined (a prefetch, another request's) failed: it gets one of its own.
    const bytes = await cache.ensure(f, stillWanted).catch((err: unknown) => {
      if (!joined) throw err;
      log.warn({ err, file_id: f.file_id }, 'a joined fetch failed; fetching again');
      return cache.ensure(f, stillWanted);
    });
    if (!bytes) return passThrough(req, res, entry, miss, miss.headers);
    // The file may have been deleted, switched or changed while its bytes were on their way.
    const again = await judge(entry);
    if (refused(res, again)) return 'done';
    if (again.file.sha256 !== f.sha256) return 'changed';
    sendBytes(req, res, entry, f, bytes, miss.headers, miss.range, xcache);
    return 'done';
  }

  const passThrough = passThroughFromOrigin({ origin: originConn, token, judge, refused, metrics: () => metrics, track: (e) => responses.track(e) });
  const status = new StatusReport({ id: follower.edgeId, name: config.edgeName, parents: parents.map((p) => p.url), startedAt: clock.now(), seq: () => state.seq, cache });
  const usage = new UsageMeter(originConn, () => ({ authorization: `Bearer ${token}` }), opts.usageIntervalMs ?? 10_000, (err) => log.warn({ err }, 'reporting usage failed'), () => status.now());
  const childCopies = new HotBytes({ ...PARENT_HOT_FILES, clock });
  const servePeer = tierRoute({ tokens: config.edgeTokens, follower, state, cache, hot: childCopies, onError: (err, id) => log.warn({ err, file_id: id }, 'a fill for a child edge failed') });
  const accessLog = config.edgeAccessLog ? AccessLog.open(config.edgeAccessLog) : null;
  const maker = new VariantMaker(cache, variantOptions(config));
  const metrics = edgeMetrics({ cache, state, follower, clock, variants: maker, token: config.metricsToken, onAnswered: [usage.answered, status.answered, ...(accessLog ? [accessLog.answered] : [])] });
  const readVariantOf = variantReader();
  const serveVariant = variantResponder({
    cache, maker, metrics, publicCache, judge, refused, sendError,
    track: (e) => responses.track(e),
    stillWanted: (f) => !follower.serving() || isCurrent(f),
  });

  /** Answers a request: a cache hit under a lease before it returns, with no promise made; anything that waits returns its promise. */
  function handle(req: http.IncomingMessage, res: http.ServerResponse, arrivedMs: number): Promise<void> | void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendError(res, 'method_not_allowed', 'Only GET and HEAD are answered here.', ['Allow', 'GET, HEAD']);
      return;
    }
    const target = parseTarget(req.url ?? '/');
    if ('error' in target) {
      sendError(res, 'invalid_path', target.error);
      return;
    }
    if (target.path === '/healthz') {
      res.writeHead(200, ['Content-Type', 'application/json', 'Cache-Control', 'no-store']);
      res.end('{"status":"ok"}');
      return;
    }
    if (target.path === '/metrics') return metrics.serve(req, res);
    if (target.id === null) {
      // Off the hot path: only an address that names no file reaches the edges' own route.
      if (target.path.startsWith('/_edge/')) return servePeer(req, res, target.path, target.query);
      sendError(res, 'not_found', 'No file is at this address.');
      return;
    }
    metrics.file(res, target.id);
    const entry: InFlight = { res, fileId: target.id, sha256: '', path: target.path, query: target.query, nowSeconds: Math.floor(arrivedMs / 1000) };
    // Most requests carry no query: only one that names a variant parameter asks for a variant.
    const variant = target.query === '' ? null : readVariantOf(target.query);
    // Under a lease a hit is answered without a single wait.
    const first = judge(entry);
    if (variant) return first instanceof Promise ? first.then((j) => serveVariant(req, res, entry, j, variant)) : serveVariant(req, res, entry, first, variant);
    if (first instanceof Promise) return first.then((j) => fillMisses(req, res, entry, respond(req, res, entry, j)));
    const miss = respond(req, res, entry, first);
    return miss ? fillMisses(req, res, entry, miss) : undefined;
  }

  /** Fetches what respond() could not answer, deciding again each time the file changed meanwhile. */
  async function fillMisses(req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, miss: Miss | null): Promise<void> {
    for (let attempt = 0; miss; attempt++) {
      if ((await fill(req, res, entry, miss)) === 'done') return;
      if (attempt + 1 === ATTEMPTS) {
        sendError(res, 'edge_unavailable', 'The file changed while this edge fetched it; try again.', ['Retry-After', '1']);
        return;
      }
      miss = respond(req, res, entry, await judge(entry));
    }
  }

  function failed(res: http.ServerResponse, err: unknown): void {
    log.error({ err }, 'delivery failed');
    if (!res.headersSent) sendError(res, 'bad_gateway', 'The file could not be fetched from the origin; try again.');
    else res.destroy();
  }

  const server = await listenEdge(config, (req, res) => {
    // The request's time, read once: the metrics stamp it and links are judged by it.
    const arrivedMs = metrics.observe(req, res, routeOf(req.url));
    let pending: Promise<void> | void;
    try {
      pending = handle(req, res, arrivedMs);
    } catch (err) {
      failed(res, err);
      return;
    }
    if (pending) pending.catch((err: unknown) => failed(res, err));
  }, log);
  // Listening keeps the process up after one, so it must be heard: logged and counted.
  const unwatch = watchUnhandledRejections((reason) => {
    log.error({ err: reason }, 'a promise was rejected and nothing handled it');
    metrics.unhandledRejection();
  });
  // The origin hears of this edge at once, then every usage interval.
  void usage.flush();
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
    variants: maker,
    childCopies,
    reportUsage: () => usage.flush(),
    close() {
      closing ??= (async () => {
        follower.stop();
        await saveSeq.flush();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          // A stop waits for answers under way, but not for ever: a stalled reader or a fill
          // waiting on a silent parent is cut after the grace.
          setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS).unref();
        });
        await usage.close();
        await accessLog?.close();
        await maker.close();
        passThrough.close();
        childCopies.clear();
        recheckAgent.destroy();
        unwatch();
      })();
      return closing;
    },
  };
}
