/**
 * One real EdgeHub behind a small HTTP front (snapshot, feed, acknowledgements), one
 * FeedFollower of it, and one clock moved by hand, for tests of the feed's timing rules.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MetadataStore, NewEvent } from '../../src/core/ports.js';
import { openSqliteStore } from '../../src/adapters/metadata/sqlite.js';
import { EdgeHub } from '../../src/feed/hub.js';
import { readAckStream } from '../../src/feed/ack-stream.js';
import { FeedFollower } from '../../src/edge/follower.js';
import { originClient } from '../../src/edge/origin-client.js';
import { EdgeState } from '../../src/edge/state.js';
import { ManualClock } from '../kit/clock.js';

export interface FollowerRig {
  clock: ManualClock;
  store: MetadataStore;
  hub: EdgeHub;
  follower: FeedFollower;
  /** Acknowledgements received so far, streamed or one request each. */
  readonly acks: number;
  /** Of them, those that came one request each. */
  readonly ackRequests: number;
  /** Acknowledgement streams opened (`POST /_edge/acks`), taken or not. */
  readonly ackStreams: number;
  /** Drops every acknowledgement stream open now (the edge's side sees it closed). */
  dropAckStreams(): void;
  /** While true, acknowledgements are taken but never answered (a partition one way). */
  silent: boolean;
  /** While true, streamed acknowledgements are kept back, to be taken late by `releaseStreamed` (an origin starved of CPU). */
  delayStreamed: boolean;
  /** Takes the streamed acknowledgements kept back, in order: their renewals are answered now. */
  releaseStreamed(): void;
  /** While true, acknowledgements sent one request each are kept unanswered, to be answered late by `releaseRequests`. */
  delayRequests: boolean;
  /** Answers the acknowledgement requests kept back, in order. */
  releaseRequests(): void;
  /** Appends an event to the log (not published). */
  append(event: NewEvent): Promise<number>;
  /** Moves the clock `ms` in steps, leaving the sockets real time between them. */
  pass(ms: number, step?: number, check?: () => void): Promise<void>;
  /** Moves the clock 1 ms at a time until `done` (at most 2000 steps). */
  until(done: () => boolean): Promise<void>;
  close(): Promise<void>;
}

/** Moves `clock` `ms` in steps of `step`, leaving the sockets 1 ms of real time after each, and calls `check` after each. */
export function clockPasser(clock: ManualClock): (ms: number, step?: number, check?: () => void) => Promise<void> {
  return async (ms, step = 5, check = () => {}) => {
    for (let t = 0; t < ms; t += step) {
      await clock.advance(step);
      await new Promise((r) => setTimeout(r, 1));
      check();
    }
  };
}

/**
 * Answers `POST /_edge/ack` as the origin's route does; while `silent()`, holds it unanswered in
 * `held`; while `delay()`, keeps the answer in `delayed`, to be given when it is called.
 */
export function answerAckRequest(req: http.IncomingMessage, res: http.ServerResponse, hub: EdgeHub, silent: () => boolean, held: http.ServerResponse[], delay = () => false, delayed: Array<() => void> = []): void {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    if (silent()) {
      held.push(res);
      return;
    }
    const { edge, seq } = JSON.parse(body) as { edge: string; seq: number };
    const answer = () => void hub.ack(edge, seq).then((a) => res.end(JSON.stringify(a)));
    if (delay()) delayed.push(answer);
    else answer();
  });
}

/**
 * How the front meets streamed acknowledgements (`POST /_edge/acks`): `true` takes them;
 * `false` answers 404, as an origin before them did; `'buffer'` takes the request and holds its
 * body unread, as a proxy that gathers bodies does; `'elsewhere'` answers 409, as an origin
 * without this edge's feed does.
 */
export type StreamAcks = boolean | 'buffer' | 'elsewhere';

export async function followerRig(leaseMs = 1000, { streamAcks = true as StreamAcks } = {}): Promise<FollowerRig> {
  const clock = new ManualClock();
  const dir = await mkdtemp(join(tmpdir(), 'coffer-follower-'));
  const store = await openSqliteStore(join(dir, 'coffer.sqlite'));
  const hub = new EdgeHub(store, { leaseMs, originId: 'origin' }, clock);
  await hub.start();
  const held: http.ServerResponse[] = [];
  const rig = { acks: 0, ackRequests: 0, ackStreams: 0, silent: false, delayStreamed: false, delayRequests: false };
  const delayed: Array<() => void> = [];
  const delayedRequests: Array<() => void> = [];
  const ackStreams = new Set<http.IncomingMessage>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/_edge/snapshot') {
      res.end(JSON.stringify({ seq: hub.headSeq, folders: [], files: [] }));
    } else if (url.pathname === '/_edge/feed') {
      hub.attach(url.searchParams.get('edge')!, Number(url.searchParams.get('after')), res);
    } else if (url.pathname === '/_edge/acks' && streamAcks !== false) {
      rig.ackStreams++;
      ackStreams.add(req);
      req.on('close', () => ackStreams.delete(req));
      if (streamAcks === 'buffer') {
        req.pause();
        held.push(res);
        return;
      }
      if (streamAcks === 'elsewhere') {
        res.statusCode = 409;
        res.end('{"error":{"code":"edge_feed_elsewhere"}}');
        return;
      }
      const edge = url.searchParams.get('edge')!;
      // Taken but, while silent, never passed on: a renewal goes unanswered.
      readAckStream(req, res, (ack) => {
        rig.acks++;
        if (rig.delayStreamed) delayed.push(() => hub.takeAck(edge, ack));
        else if (!rig.silent) hub.takeAck(edge, ack);
      });
    } else if (url.pathname === '/_edge/ack') {
      rig.acks++;
      rig.ackRequests++;
      answerAckRequest(req, res, hub, () => rig.silent, held, () => rig.delayRequests, delayedRequests);
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const state = new EdgeState({ fileReady: () => {}, fileGone: () => {}, changed: () => {} });
  const origin = originClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, undefined);
  const follower = new FeedFollower({ origin, token: 't', leaseMs, state, clock });

  const pass = clockPasser(clock);
  const until = async (done: () => boolean): Promise<void> => {
    for (let i = 0; i < 2000 && !done(); i++) await pass(1, 1);
  };
  let started = false;
  const starting = follower.start().then(() => (started = true));
  await until(() => started);
  await starting;

  return Object.assign(rig, {
    clock, store, hub, follower, pass, until,
    releaseStreamed: () => {
      for (const take of delayed.splice(0)) take();
    },
    releaseRequests: () => {
      for (const answer of delayedRequests.splice(0)) answer();
    },
    dropAckStreams: () => {
      for (const req of ackStreams) req.socket.destroy();
    },
    append: (event: NewEvent) => store.transaction((tx) => tx.appendEvent(event, clock.now())),
    async close() {
      follower.stop();
      for (const res of held) res.destroy();
      await hub.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  });
}
