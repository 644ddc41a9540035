/**
 * Answers a delivery request that asks for a variant. The delivery decision of contract §7
 * has been taken before this runs; it is taken again after every wait (the source's fetch,
 * the transform), so a file deleted or switched meanwhile gets its 404 or 403, never bytes.
 */
import type http from 'node:http';
import { parseQuery } from '../../core/signing.js';
import { OUTPUT_TYPES, outputFormat, readVariant, sourceFormat, variantKey, variantName, type OutputFormat, type VariantParams, type VariantProblem } from '../../core/variants.js';
import type { CachedBytes, CachedVariant, EdgeCache } from '../cache.js';
import { REMEMBERED_QUERY_CHARS, contentDisposition, notModified, parseRange, type Decision, type Judgement } from '../delivery.js';
import type { InFlight } from '../in-flight.js';
import type { EdgeMetrics } from '../metrics.js';
import { streamFile, type Gate } from '../send.js';
import type { EdgeFile } from '../state.js';
import { errors } from '../../core/errors.js';
import type { ErrorCode } from '../../core/error-codes.js';
import { disallowed } from './allowed.js';
import { addressKey } from '../../core/listener-bounds.js';
import type { VariantMaker } from './maker.js';
import { VariantError } from './transform.js';


type Serve = Extract<Decision, { kind: 'serve' }>;

export interface VariantDeps {
  cache: EdgeCache;
  maker: VariantMaker;
  metrics: EdgeMetrics;
  /** Cache-Control of a Public answer. */
  publicCache: string;
  judge(e: InFlight): Judgement | Promise<Judgement>;
  /** Answers a refusal; true when it did. */
  refused(res: http.ServerResponse, judged: Judgement): boolean;
  sendError(res: http.ServerResponse, code: ErrorCode, message: string, extra?: string[], details?: Record<string, unknown>): void;
  track(e: InFlight): Gate;
  /** Whether bytes of this file may still be kept (under a lease: it is still current). */
  stillWanted(file: EdgeFile): boolean;
}

/** A file whose content changes while its variant is made is looked up again this often. */
const ATTEMPTS = 3;

export type VariantAsked = { params: VariantParams; keys?: Map<OutputFormat, string> } | { problem: VariantProblem };

type Source = NonNullable<ReturnType<typeof sourceFormat>>;

/** Few content types and Accept headers come by again and again; their verdicts are kept. */
const MEMO_ENTRIES = 512;
const MEMO_TEXT = 512;
const sources = new Map<string, Source | null>();
const autoFormats = new Map<string, OutputFormat>();

function remember<V>(memo: Map<string, V>, text: string, value: V): V {
  if (text.length > MEMO_TEXT) return value;
  if (memo.size >= MEMO_ENTRIES) memo.clear();
  memo.set(text, value);
  return value;
}

function sourceOf(contentType: string): Source | null {
  const known = sources.get(contentType);
  return known !== undefined ? known : remember(sources, contentType, sourceFormat(contentType));
}

/** The format written and the cache key of the variant `asked` for, from `source` and the Accept header. */
function target(asked: { params: VariantParams; keys?: Map<OutputFormat, string> }, source: Source, accept: string | undefined): { out: OutputFormat; key: string } {
  let out: OutputFormat;
  if (asked.params.format === 'auto') {
    const text = `${source} ${accept ?? ''}`;
    out = autoFormats.get(text) ?? remember(autoFormats, text, outputFormat(asked.params, source, accept));
  } else out = outputFormat(asked.params, source, accept);
  const keys = (asked.keys ??= new Map());
  let key = keys.get(out);
  if (key === undefined) keys.set(out, (key = variantKey(asked.params, out)));
  return { out, key };
}

/**
 * Reads the variant a query asks for (null: none), remembering the last queries read:
 * thumbnails are asked for with the same few queries over and over.
 */
export function variantReader(capacity = 10_000): (query: string) => VariantAsked | null {
  const known = new Map<string, VariantAsked | null>();
  return (query) => {
    let asked = known.get(query);
    if (asked !== undefined) return asked;
    asked = readVariant(parseQuery(query) ?? []);
    if (query.length > REMEMBERED_QUERY_CHARS) return asked;
    if (known.size >= capacity) known.delete(known.keys().next().value!);
    known.set(query, asked);
    return asked;
  };
}

export function variantResponder(d: VariantDeps) {
  /** The headers of a whole 200 hit, built once per file, variant and kind of answer. */
  const hitHeaders = new WeakMap<EdgeFile, Map<string, string[]>>();

  function headers(file: EdgeFile, decision: Serve, out: OutputFormat, auto: boolean, etag: string): string[] {
    const h = [
      'Content-Type', OUTPUT_TYPES[out],
      'ETag', `"${etag}"`,
      'Last-Modified', new Date(file.completed_at).toUTCString(),
      'Accept-Ranges', 'bytes',
      'X-Content-Type-Options', 'nosniff',
      'Content-Disposition', contentDisposition(variantName(file.name, out), decision.download),
      'Cache-Control', decision.signed ? 'private, no-store' : d.publicCache,
    ];
    if (auto) h.push('Vary', 'Accept');
    return h;
  }

  /** The commonest answer, a whole cached variant from memory, with headers built once. */
  function quickHit(req: http.IncomingMessage, res: http.ServerResponse, file: EdgeFile, decision: Serve, out: OutputFormat, auto: boolean, v: CachedVariant): boolean {
    if (!v.memory || req.method !== 'GET' || req.headers.range !== undefined || req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined) return false;
    let byKey = hitHeaders.get(file);
    if (!byKey) hitHeaders.set(file, (byKey = new Map()));
    const key = `${v.etag}${decision.signed ? 1 : 0}${decision.download ? 1 : 0}${auto ? 1 : 0}${out}`;
    let h = byKey.get(key);
    if (!h) {
      if (byKey.size >= 64) byKey.clear();
      h = [...headers(file, decision, out, auto, v.etag), 'Content-Length', String(v.size), 'X-Cache', 'HIT'];
      byKey.set(key, h);
    }
    d.metrics.body(res, true, v.size);
    res.writeHead(200, h);
    res.end(v.memory);
    return true;
  }

  function send(req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, file: EdgeFile, decision: Serve, out: OutputFormat, auto: boolean, v: CachedVariant, xcache: 'HIT' | 'MISS'): void {
    if (xcache === 'HIT' && quickHit(req, res, file, decision, out, auto, v)) return;
    const h = headers(file, decision, out, auto, v.etag);
    if (notModified(req.headers['if-none-match'], req.headers['if-modified-since'], `"${v.etag}"`, file.completed_at)) {
      res.writeHead(304, ['ETag', `"${v.etag}"`, 'Last-Modified', new Date(file.completed_at).toUTCString(), 'Cache-Control', decision.signed ? 'private, no-store' : d.publicCache, ...(auto ? ['Vary', 'Accept'] : [])]);
      res.end();
      return;
    }
    let range = parseRange(req.headers.range, v.size);
    const ifRange = req.headers['if-range'] as string | undefined;
    if (range !== null && ifRange !== undefined && ifRange.trim() !== `"${v.etag}"`) range = null;
    if (range === 'unsatisfiable') {
      d.sendError(res, 'range_not_satisfiable', 'The requested range lies outside the image.', ['Content-Range', `bytes */${v.size}`]);
      return;
    }
    const start = range?.start ?? 0;
    const end = range?.end ?? v.size - 1;
    d.metrics.body(res, xcache === 'HIT', end - start + 1);
    res.writeHead(range ? 206 : 200, [...h, 'Content-Length', String(end - start + 1), 'X-Cache', xcache,
      ...(range ? ['Content-Range', `bytes ${start}-${end}/${v.size}`] : [])]);
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    // In memory: one write, while the decision that allowed it holds. On disk: every chunk asks.
    if (v.memory) {
      res.end(range ? v.memory.subarray(start, end + 1) : v.memory);
      return;
    }
    void streamFile(v.path!, start, end, res, d.track(entry), d.cache.dropBroken);
  }

  /** Answers a variant already kept here at once, without a wait; false when it is not. */
  function hitNow(req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, judged: Judgement, asked: VariantAsked): boolean {
    if (judged === 'unavailable' || 'error' in judged || 'problem' in asked) return false;
    // Outside the presets the answer is the same 400 whether or not the variant is kept.
    if (!judged.decision.signed && disallowed(asked.params, d.maker.options.allowed)) return false;
    const source = sourceOf(judged.file.content_type);
    if (!source) return false;
    const { out, key } = target(asked, source, req.headers.accept);
    const kept = d.cache.lookupVariant(judged.file, key);
    if (!kept) return false;
    entry.sha256 = judged.file.sha256;
    send(req, res, entry, judged.file, judged.decision, out, asked.params.format === 'auto', kept, 'HIT');
    return true;
  }

  /** Answers a variant request that waits: for the source, for the transform, for the origin's word. */
  async function make(req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, judged: Judgement, asked: VariantAsked): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (d.refused(res, judged)) return;
      const { file, decision } = judged as Exclude<Judgement, 'unavailable' | { error: unknown }>;
      if ('problem' in asked) {
        d.sendError(res, 'invalid_variant', asked.problem.message, [], { field: asked.problem.field });
        return;
      }
      const outside = decision.signed ? null : disallowed(asked.params, d.maker.options.allowed);
      if (outside) {
        const e = errors.variantNotAllowed(outside.field, outside.allowed);
        d.sendError(res, e.code, e.message, [], e.details);
        return;
      }
      const source = sourceOf(file.content_type);
      if (!source) {
        d.sendError(res, 'not_an_image', 'Variants are made of JPEG, PNG, WebP, AVIF, GIF and TIFF images only; this file is none of them.');
        return;
      }
      const params = asked.params;
      const { out, key } = target(asked, source, req.headers.accept);
      entry.sha256 = file.sha256;
      const kept = d.cache.lookupVariant(file, key);
      if (kept) return send(req, res, entry, file, decision, out, params.format === 'auto', kept, 'HIT');
      if (file.size > d.cache.capacity) {
        d.sendError(res, 'image_too_large', "The image is larger than this edge's cache, so no variant of it is made here.");
        return;
      }
      let made: CachedVariant | VariantError;
      let joined = false;
      try {
        const bytes: CachedBytes | null = await d.cache.ensure(file, () => d.stillWanted(file));
        if (!bytes) throw new VariantError('edge_unavailable', 'This edge has no room for the image right now; try again.');
        const asker = { client: addressKey(req.socket.remoteAddress ?? ''), signed: decision.signed };
        const job = d.maker.make(file, key, params, out, bytes, () => d.stillWanted(file), asker);
        joined = job.joined;
        made = await job.promise;
      } catch (err) {
        if (!(err instanceof VariantError)) throw err;
        made = err;
      }
      // The waits may have outlasted the file's right to be served, or its content.
      const again = await d.judge(entry);
      if (d.refused(res, again)) return;
      const now = again as Exclude<Judgement, 'unavailable' | { error: unknown }>;
      if (now.file.sha256 !== file.sha256) {
        judged = again;
        continue;
      }
      if (made instanceof VariantError) {
        const retry = made.retryAfter ?? (made.status === 503 ? 1 : undefined);
        d.sendError(res, made.code, made.message, retry === undefined ? [] : ['Retry-After', String(retry)], made.details);
        return;
      }
      return send(req, res, entry, now.file, now.decision, out, params.format === 'auto', made, joined ? 'HIT' : 'MISS');
    }
    d.sendError(res, 'edge_unavailable', 'The image changed while this edge made its variant; try again.', ['Retry-After', '1']);
  }

  /** Answers a variant request whose first judgement is `judged`. */
  return function serveVariant(req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, judged: Judgement, asked: VariantAsked): void | Promise<void> {
    if (hitNow(req, res, entry, judged, asked)) return;
    return make(req, res, entry, judged, asked);
  };
}
