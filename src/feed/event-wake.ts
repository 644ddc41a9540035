/**
 * What tells an origin's edge hub that another origin has appended events, or recorded an
 * edge's acknowledgement. The hub always polls the database while it has edges or waiting
 * changes (see polling.ts); on PostgreSQL a LISTEN on a connection of its own wakes it at
 * once as well. The embedded SQLite store has no notifications: polling alone.
 */
import type pg from 'pg';
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';

/** NOTIFY'd, with the sequence number, in the transaction that appends an event. */
export const EVENTS_CHANNEL = 'coffer_events';
/** NOTIFY'd in the transaction that records edges' acknowledgements. */
export const ACKS_CHANNEL = 'coffer_edge_acks';

export type WakeReason = 'events' | 'acks';

export interface EventWake {
  /** Starts delivering wake-ups; `onWake` may be called often and must be cheap. */
  start(onWake: (reason: WakeReason) => void): void;
  close(): Promise<void>;
}

/** The embedded store: the hub's polling is all there is. */
export const pollingOnly: EventWake = {
  start() {},
  async close() {},
};

/**
 * LISTENs on both channels on one dedicated connection (a pooled connection would lose its
 * LISTEN when handed back). A broken connection is opened again with a growing delay; while it
 * is down, polling alone keeps the hub going, only less promptly.
 */
export class PgListenWake implements EventWake {
  private client: pg.Client | null = null;
  private closed = false;
  private retryTimer: TimerHandle | null = null;
  private delay = 100;
  private onWake: (reason: WakeReason) => void = () => {};

  constructor(private readonly url: string, private readonly onError?: (err: unknown) => void, private readonly clock: Clock = systemClock) {}

  start(onWake: (reason: WakeReason) => void): void {
    this.onWake = onWake;
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    // Loaded here: an origin on the embedded store never needs pg in memory.
    const { Client } = (await import('pg')).default;
    if (this.closed) return;
    const client = new Client({ connectionString: this.url, application_name: 'coffer-listen' });
    this.client = client;
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      if (this.client === client) this.client = null;
      client.end().catch(() => {});
      if (this.closed) return;
      this.onError?.(err);
      this.retryTimer = this.clock.setTimeout(() => void this.connect(), this.delay);
      this.retryTimer.unref?.();
      this.delay = Math.min(5000, this.delay * 2);
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('the LISTEN connection ended')));
    client.on('notification', (msg) => {
      if (msg.channel === EVENTS_CHANNEL) this.onWake('events');
      else if (msg.channel === ACKS_CHANNEL) this.onWake('acks');
    });
    try {
      await client.connect();
      await client.query(`listen ${EVENTS_CHANNEL}`);
      await client.query(`listen ${ACKS_CHANNEL}`);
      this.delay = 100;
      // Whatever happened while not listening is picked up now.
      this.onWake('events');
      this.onWake('acks');
    } catch (err) {
      fail(err);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) this.clock.clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}

/** LISTEN/NOTIFY on PostgreSQL, polling alone otherwise. */
export function openEventWake(databaseUrl: string | undefined, onError?: (err: unknown) => void, clock: Clock = systemClock): EventWake {
  if (databaseUrl && /^postgres(ql)?:\/\//i.test(databaseUrl)) return new PgListenWake(databaseUrl, onError, clock);
  return pollingOnly;
}
