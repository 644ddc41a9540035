/**
 * The parent side of tiered fill (issue 26): `GET /_edge/blob/{id}?sha256=…&seq=…` on an
 * edge's own port, for its child edges, with the edges' token. A parent answers only for the
 * version the child asked for, only under its lease, and only once it has applied the
 * sequence the child has: it never hands a child bytes of a file deleted or changed at a
 * sequence the child already knows of. Its fill is the cache's, so any number of children
 * (and its own prefetch) make one fetch upstream.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type http from 'node:http';
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import { writeHeld } from '../core/held-stream.js';
import type { HeldBytes, HotBytes } from '../core/hot-bytes.js';
import { SANDBOX_CSP } from '../core/user-bytes.js';
import type { CachedBytes, EdgeCache } from './cache.js';
import type { EdgeFile, EdgeState } from './state.js';
import { sendError } from './answer-headers.js';
import { isBrokenCopy, streamFile } from './send.js';
import { VIA_HEADER } from './sources.js';

/** A child waits this long at most for this edge to apply the sequence it asked at. */
export const SEQ_WAIT_MS = 2000;
/** Edges a fill request may already have passed through; a longer chain is refused. */
export const MAX_VIA = 3;
const BEAT_MS = 1000;
const ID = /^[A-Za-z0-9_-]{1,64}$/;
const SHA = /^[0-9a-f]{64}$/;

export interface TierRouteDeps {
  tokens: readonly string[];
  follower: { readonly edgeId: string; serving(): boolean };
  state: EdgeState;
  cache: EdgeCache;
  onError(err: unknown, fileId: string): void;
  /** The seq wait and the 102 beat run on it (default: the system's). */
  clock?: Clock;
  /**
   * Files this edge sends its children from one buffer (PARENT_HOT_FILES); without it, each reads
   * the cache. With it, the route also sets `cache.tapFor`, so that fills reach children as they come.
   */
  hot?: HotBytes;
}

/** A parent holds a file up to 16 MiB, 32 MiB in all, in memory while its children fetch it. */
export const PARENT_HOT_FILES = { capacity: 32 << 20, fileLimit: 16 << 20, idleMs: 10_000 };
/** An edge taps its fills for children (sends them on as they arrive) while a child asked it within this long. */
export const CHILDREN_RECENT_MS = 10 * 60_000;

/** A file's version among the bytes a parent holds for its children. */
export const hotKey = (id: string, sha256: string): string => `${id}\n${sha256}`;

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** True when the request carries one of the edges' tokens; every token is compared, in constant time. */
export function edgeTokenMatches(header: string | undefined, tokens: readonly string[]): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? '');
  const given = digest(m ? m[1]! : '');
  let ok = false;
  for (const t of tokens) ok = timingSafeEqual(given, digest(t)) || ok;
  return ok && m !== null;
}

/** The Via list of a request: the edges it passed through, the asker last. */
export function viaOf(header: string | string[] | undefined): string[] {
  const text = Array.isArray(header) ? header.join(',') : header ?? '';
  return text.split(',').map((s) => s.trim()).filter(Boolean);
}

export function tierRoute(d: TierRouteDeps): (req: http.IncomingMessage, res: http.ServerResponse, path: string, query: string) => Promise<void> {
  const clock = d.clock ?? systemClock;
  const unavailable = (res: http.ServerResponse, reason: string, message: string) =>
    sendError(res, 'edge_unavailable', message, ['Retry-After', '1'], { reason });
  /** When a child last asked (monotonic ms): an edge that has children taps its fills for them. */
  let childAt: number | undefined;
  if (d.hot) {
    const hot = d.hot;
    d.cache.tapFor = (file) => (childAt !== undefined && clock.monotonic() - childAt < CHILDREN_RECENT_MS && file.size > 0
      ? hot.fill(hotKey(file.file_id, file.sha256), file.size) : null);
  }

  /** Waits for the applied sequence to reach `seq`; false after SEQ_WAIT_MS. */
  async function caughtUp(seq: number): Promise<boolean> {
    if (d.state.seq >= seq) return true;
    const wait = d.state.whenSeq(seq);
    let timer: TimerHandle | undefined;
    const late = new Promise<void>((resolve) => {
      timer = clock.setTimeout(resolve, SEQ_WAIT_MS);
    });
    await Promise.race([wait.reached, late]);
    clock.clearTimeout(timer);
    wait.cancel();
    return d.state.seq >= seq;
  }

  /**
   * Sends the child the file's bytes at the version it asked for. A fill under way that this
   * edge taps (its children asked it recently) is sent as it arrives; otherwise the child waits
   * for this edge's whole copy. Either way the file must stay at that version, and this edge
   * under its lease, for every piece sent.
   */
  async function answer(req: http.IncomingMessage, res: http.ServerResponse, file: EdgeFile, via: readonly string[]): Promise<void> {
    const id = file.file_id;
    const sameVersion = () => d.state.files.get(id)?.sha256 === file.sha256;
    const current = () => d.follower.serving() && sameVersion();
    const starts = !d.cache.fetching(id);
    const filling = d.cache.ensure(file, sameVersion, via);
    const get = req.method !== 'HEAD' && file.size > 0;
    // A fill this request started begins a turn later (core/coalesce.ts): its tap is there once it has.
    if (starts && get && d.hot) await new Promise<void>((resolve) => setImmediate(resolve));
    let held = get ? d.hot?.peek(hotKey(id, file.sha256), file.size) ?? null : null;
    if (held && !(await hasBytes(held))) held = null;
    if (held) {
      filling.catch((err: unknown) => d.onError(err, id));
      return send(res, file, held, current);
    }
    let bytes;
    try {
      bytes = await filling;
    } catch (err) {
      d.onError(err, id);
      sendError(res, 'bad_gateway', 'This edge could not fetch the file; try the next source.');
      return;
    }
    if (!bytes) {
      unavailable(res, 'no_room', 'This edge cannot keep this file now.');
      return;
    }
    held = get && !bytes.memory ? heldCopy(d.hot, file, bytes.path!, d.cache.dropBroken) : null;
    if (held && !(await hasBytes(held))) {
      sendError(res, 'bad_gateway', 'This edge could not read its copy of the file; try the next source.');
      return;
    }
    return send(res, file, held ?? bytes, current, req.method === 'HEAD');
  }

  /** The 200 and the bytes: from memory, from a held buffer (as it fills), or streamed from the cache. */
  async function send(res: http.ServerResponse, file: EdgeFile, from: HeldBytes | CachedBytes, current: () => boolean, head = false): Promise<void> {
    const held = 'sendable' in from ? from : null;
    if (!current() || res.destroyed) {
      held?.release();
      if (!res.destroyed) unavailable(res, 'changed', 'The file changed while this edge fetched it.');
      return;
    }
    d.cache.counts.servedToChildren++;
    res.writeHead(200, ['Content-Type', 'application/octet-stream', 'Content-Length', String(file.size), 'Cache-Control', 'no-store',
      'X-Content-Type-Options', 'nosniff', 'Content-Security-Policy', SANDBOX_CSP, 'X-Coffer-Sha256', file.sha256, 'X-Coffer-Seq', String(d.state.seq)]);
    if (held) {
      return writeHeld(res, held, { stillCurrent: current, clock });
    }
    const bytes = from as CachedBytes;
    if (head || file.size === 0) res.end();
    else if (bytes.memory) res.end(bytes.memory);
    else await streamFile(bytes.path!, 0, file.size - 1, res, current, d.cache.dropBroken);
  }

  return async (req, res, path, query) => {
    const m = /^\/_edge\/blob\/([^/]+)$/.exec(path);
    if (!m || !ID.test(m[1]!)) {
      sendError(res, 'not_found', 'No file is at this address.');
      return;
    }
    if (!edgeTokenMatches(req.headers.authorization, d.tokens)) {
      sendError(res, 'unauthorized', 'Send the edges\' token as "Authorization: Bearer <COFFER_EDGE_TOKEN>".', ['WWW-Authenticate', 'Bearer']);
      return;
    }
    childAt = clock.monotonic();
    const id = m[1]!;
    const params = new URLSearchParams(query);
    const sha256 = params.get('sha256') ?? '';
    const seqText = params.get('seq') ?? '';
    if (!SHA.test(sha256) || !/^\d{1,15}$/.test(seqText)) {
      sendError(res, 'invalid_request', 'Name the version and sequence: ?sha256=<64 hex>&seq=<n>.');
      return;
    }
    const via = viaOf(req.headers[VIA_HEADER]);
    // Edge ids only: the list is sent on upstream as it came.
    if (!via.every((v) => ID.test(v))) {
      sendError(res, 'invalid_request', 'X-Coffer-Via lists edge ids separated by commas.');
      return;
    }
    // A loop, or a chain deeper than the tiers allow: refused at once, so the asker falls back.
    if (via.includes(d.follower.edgeId) || via.length > MAX_VIA) {
      sendError(res, 'edge_loop', 'This request has passed through this edge already, or through too many edges.');
      return;
    }
    if (!d.follower.serving()) {
      unavailable(res, 'no_lease', 'This edge does not hold a lease on the feed right now.');
      return;
    }
    // The child hears a 102 each second while this edge waits for its feed, or for a fill from
    // the origin or from a parent that is sending something: a fill stuck in a loop of parents
    // hears nothing, sends none, and its askers give up on it.
    let waitingForSeq = true;
    const beat = clock.setInterval(() => {
      if (!res.headersSent && !res.destroyed && (waitingForSeq || d.cache.fillAlive(id, BEAT_MS * 1.5))) res.writeProcessing();
    }, BEAT_MS);
    try {
      if (!(await caughtUp(Number(seqText))) || !d.follower.serving()) {
        unavailable(res, 'behind', 'This edge has not applied the sequence asked for.');
        return;
      }
      waitingForSeq = false;
      const file = d.state.files.get(id);
      if (!file) {
        sendError(res, 'not_found', 'No file is at this address.');
        return;
      }
      if (file.sha256 !== sha256) {
        sendError(res, 'edge_version_mismatch', 'This edge knows another version of the file.');
        return;
      }
      await answer(req, res, file, via);
    } finally {
      clock.clearInterval(beat);
    }
  };
}

/** Waits for a held file's first bytes: false, and the file released, when its filling failed. */
async function hasBytes(held: HeldBytes): Promise<boolean> {
  const ok = await held.after(0).then(() => true, () => false);
  if (!ok) held.release();
  return ok;
}

/**
 * The cached file `path` held in memory for every child asking for it meanwhile, or null when it
 * cannot be. A copy found gone or cut short as it is read is reported to `onBroken` (send.ts).
 */
function heldCopy(hot: HotBytes | undefined, file: EdgeFile, path: string, onBroken: (path: string) => void): HeldBytes | null {
  return hot?.take(hotKey(file.file_id, file.sha256), file.size, async () => {
    const stream = createReadStream(path, { highWaterMark: 1 << 20 });
    stream.once('error', (err) => isBrokenCopy(err) && onBroken(path));
    stream.once('end', () => stream.bytesRead < file.size && onBroken(path));
    return stream;
  }) ?? null;
}
