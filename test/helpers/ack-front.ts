/**
 * A small front of our own standing where the origin's edge routes do, over a real EdgeHub and
 * SQLite store, with one FeedFollower of it on a clock moved by hand: a test can hold writes,
 * drop streams, play a body-gathering proxy or a second origin behind a load balancer, and
 * write what it likes on the feed (test/security/ack-stream-*.test.ts).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MetadataStore } from '../../src/core/ports.js';
import { openSqliteStore } from '../../src/adapters/metadata/sqlite.js';
import { EdgeHub } from '../../src/feed/hub.js';
import { readAckStream, type StreamedAck } from '../../src/feed/ack-stream.js';
import { FeedFollower } from '../../src/edge/follower.js';
import { originClient } from '../../src/edge/origin-client.js';
import { EdgeState } from '../../src/edge/state.js';
import { ManualClock } from '../kit/clock.js';
import { answerAckRequest, clockPasser } from './follower-rig.js';

/** The lease the front's follower holds unless told otherwise. */
export const LEASE = 1000;

/** How the front meets `POST /_edge/acks`: as the origin's route does, held unread (a body-gathering proxy), or 409 always. */
export type AckMode = 'route' | 'buffer' | 'elsewhere';

export interface Front {
  clock: ManualClock;
  hub: EdgeHub;
  follower: FeedFollower;
  state: EdgeState;
  /** With `acksTo: 'other'`: a second origin on the same database, where a load balancer sends the edge's POSTs. */
  other: EdgeHub | null;
  /** Opens a feed stream of the edge on the other origin that nobody reads (one the edge left, not yet seen closed there). */
  staleFeedOnOther(): Promise<void>;
  /** Every line read on an acknowledgement stream, with the clock when it was read. */
  lines: Array<StreamedAck & { at: number }>;
  ackStreams: number;
  ackRequests: number;
  /** Connections the front holds open now. */
  readonly sockets: number;
  mode: AckMode;
  /** While true, lines are read but not taken and requests are held: nothing is answered. */
  silent: boolean;
  /** The first line carrying at least this sequence is lost with its stream, dropped under it. */
  dropAtSeq: number | null;
  /** The line lost so. */
  dropped: StreamedAck | null;
  /** Holds every write of acknowledgements to the store until the function returned is called. */
  holdWrites(): () => void;
  /** Writes `text` on every open feed stream. */
  inject(text: string): void;
  dropFeeds(): void;
  /** Holds (true) or lets go (false) everything written on the feed streams open now, as a stalled path does. */
  freezeFeeds(frozen: boolean): void;
  /** Drops every acknowledgement stream open now (the edge sees it closed). */
  dropAckStreams(): void;
  /** Appends a change and publishes it; `answered` once the origin answered it. */
  publishChange(): Promise<{ seq: number; answered: () => boolean }>;
  pass(ms: number, step?: number, check?: () => void): Promise<void>;
  until(done: () => boolean, max?: number): Promise<void>;
  close(): Promise<void>;
}

export async function front(leaseMs = LEASE, mode: AckMode = 'route', acksTo: 'same' | 'other' = 'same'): Promise<Front> {
  const clock = new ManualClock();
  const dir = await mkdtemp(join(tmpdir(), 'coffer-ack-attacks-'));
  const real = await openSqliteStore(join(dir, 'coffer.sqlite'));
  let gate: Promise<void> | null = null;
  const store = new Proxy(real, {
    get(target, p) {
      if (p === 'recordEdgeAcks') {
        return async (...args: Parameters<MetadataStore['recordEdgeAcks']>) => {
          while (gate) await gate;
          return target.recordEdgeAcks(...args);
        };
      }
      const v = (target as unknown as Record<string | symbol, unknown>)[p];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const hub = new EdgeHub(store, { leaseMs, originId: 'origin' }, clock);
  await hub.start();
  const other = acksTo === 'other' ? new EdgeHub(store, { leaseMs, originId: 'other' }, clock) : null;
  await other?.start();
  const ackHub = other ?? hub;
  const feeds = new Set<http.ServerResponse>();
  const held: http.ServerResponse[] = [];
  const sockets = new Set<Socket>();
  const ackReqs = new Set<http.IncomingMessage>();
  const f = { lines: [] as Front['lines'], ackStreams: 0, ackRequests: 0, mode, silent: false, dropAtSeq: null as number | null, dropped: null as StreamedAck | null };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const edge = url.searchParams.get('edge') ?? '';
    if (url.pathname === '/_edge/snapshot') {
      res.end(JSON.stringify({ seq: hub.headSeq, folders: [], files: [] }));
    } else if (url.pathname === '/stale-feed') {
      other!.attach(edge, hub.headSeq, res);
    } else if (url.pathname === '/_edge/feed') {
      feeds.add(res);
      res.on('close', () => feeds.delete(res));
      hub.attach(edge, Number(url.searchParams.get('after')), res);
    } else if (url.pathname === '/_edge/acks') {
      f.ackStreams++;
      ackReqs.add(req);
      req.on('close', () => ackReqs.delete(req));
      if (f.mode === 'buffer') {
        req.pause();
        held.push(res);
      } else if (f.mode === 'elsewhere' || !ackHub.hasStream(edge)) {
        res.writeHead(409, { connection: 'close' }).end('{"error":{"code":"edge_feed_elsewhere"}}');
      } else {
        readAckStream(req, res, (ack) => {
          if (f.dropAtSeq !== null && ack.seq >= f.dropAtSeq) {
            f.dropAtSeq = null;
            f.dropped = ack;
            req.socket.destroy();
            return;
          }
          f.lines.push({ ...ack, at: clock.monotonic() });
          if (!f.silent) ackHub.takeAck(edge, ack);
        });
      }
    } else if (url.pathname === '/_edge/ack') {
      f.ackRequests++;
      answerAckRequest(req, res, ackHub, () => f.silent, held);
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const state = new EdgeState({ fileReady: () => {}, fileGone: () => {}, changed: () => {} });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const origin = originClient(base, undefined);
  const stale: http.ClientRequest[] = [];
  const follower = new FeedFollower({ origin, token: 't', leaseMs, state, clock });
  const pass = clockPasser(clock);
  const until = async (done: () => boolean, max = 2000): Promise<void> => {
    for (let i = 0; i < max && !done(); i++) await pass(1, 1);
  };
  let started = false;
  const starting = follower.start().then(() => (started = true));
  await until(() => started);
  await starting;
  return Object.assign(f, {
    clock, hub, other, follower, state, pass, until,
    staleFeedOnOther: () => new Promise<void>((resolve) => {
      const req = http.get(`${base}/stale-feed?edge=${follower.edgeId}`, (res) => {
        res.pause();
        resolve();
      });
      req.on('error', () => {});
      stale.push(req);
    }),
    get sockets() {
      return sockets.size;
    },
    holdWrites() {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      return () => {
        gate = null;
        release();
      };
    },
    inject(text: string) {
      for (const res of feeds) res.write(text);
    },
    dropFeeds() {
      for (const res of feeds) res.destroy();
    },
    freezeFeeds(frozen: boolean) {
      for (const res of feeds) {
        if (frozen) res.socket?.cork();
        else while (res.socket?.writableCorked) res.socket.uncork();
      }
    },
    dropAckStreams() {
      for (const req of ackReqs) req.socket.destroy();
    },
    async publishChange() {
      const seq = await real.transaction((tx) => tx.appendEvent({ type: 'folder.deleted', folder_id: 'x', data: { folder_id: 'x' } }, clock.now()));
      let answered = false;
      void hub.publish(seq).then(() => (answered = true));
      return { seq, answered: () => answered };
    },
    async close() {
      follower.stop();
      for (const res of held) res.destroy();
      for (const req of stale) req.destroy();
      await hub.close();
      await other?.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await real.close();
      await rm(dir, { recursive: true, force: true });
    },
  });
}
