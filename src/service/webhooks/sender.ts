/**
 * Sends webhooks: another follower of the event log, like the edges' feed. It turns each
 * webhook's new events into delivery rows (in one transaction with the webhook's cursor, so
 * nothing is skipped or doubled), then sends due deliveries, the earliest pending one per
 * webhook and file first, retrying with exponential backoff and jitter for 24 hours. Several
 * origins share the work through row holds (PostgreSQL `SKIP LOCKED`); a slow receiver holds
 * up only its own deliveries, never a request. It sends nothing before `start()`.
 */
import { newId } from '../../core/ids.js';
import { isoTime } from '../../core/records.js';
import { wantsEvent, webhookSignature, type StoredDelivery, type StoredWebhook } from '../../core/webhooks.js';
import type { MetadataStore, StoredEvent } from '../../core/ports.js';
import { EventPlaces, makerStands } from './reach.js';
import { httpPost, type WebhookPost, type WebhookResponse } from './post.js';

/** How webhooks are sent; every field has a default. */
export interface WebhookSendOptions {
  /** The first retry's delay; each next one doubles, up to an hour (default 1000). */
  retryBaseMs?: number;
  /** How long a receiver may take to answer (default 10 s). */
  timeoutMs?: number;
  /** Told of a pass or an attempt that failed in a way no delivery records. */
  onError?: (what: string, err: unknown) => void;
  /** Told of every finished attempt (metrics). */
  onAttempt?: (outcome: 'delivered' | 'retry' | 'failed') => void;
  /** How an attempt is made; node's HTTP client by default (post.ts). */
  post?: WebhookPost;
}

export interface WebhookSenderOptions extends WebhookSendOptions {
  /** Receivers may be on loopback and private addresses. */
  allowPrivate: boolean;
  now: () => number;
}

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const POLL_MS = 250;
const CONCURRENCY = 8;

/** The body of a delivery: the event as the log recorded it. */
export function eventBody(e: StoredEvent): string {
  return JSON.stringify({ type: e.type, seq: e.seq, timestamp: isoTime(e.created_at), data: e.data });
}

const orderKey = (e: StoredEvent): string => (e.file_id ? `file:${e.file_id}` : e.folder_id ? `folder:${e.folder_id}` : 'log');

export class WebhookSender {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private started = false;
  private closed = false;
  private readonly now: () => number;
  private readonly post: WebhookPost;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly meta: MetadataStore, private readonly opts: WebhookSenderOptions) {
    this.now = opts.now;
    this.post = opts.post ?? httpPost;
  }

  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.timer.unref();
    this.wake();
  }

  /** Runs a pass now (after a change, a redelivery); passes never overlap. */
  wake(): void {
    if (!this.started || this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.fanOut();
          await this.sendDue();
        } catch (err) {
          this.opts.onError?.('webhook pass', err);
        }
      } while (this.again && !this.closed);
    })().finally(() => {
      this.running = null;
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
    await Promise.all(this.inFlight);
  }

  /** Turns each webhook's events since its cursor into deliveries. */
  private async fanOut(): Promise<void> {
    const head = await this.meta.lastEventSeq();
    for (const listed of await this.meta.read.webhooks.list()) {
      if (listed.cursor_seq >= head) continue;
      // Read before the transaction (SQLite has one connection for both); used only if the cursor has not moved since.
      const events = await this.meta.eventsAfter(listed.cursor_seq, 500);
      if (events.length === 0) continue;
      const wanted = await this.wanted(listed, events);
      await this.meta.transaction(async (tx) => {
        // Held: another origin doing the same skips this webhook until the cursor moved.
        const w = await tx.webhooks.get(listed.id, true);
        if (!w || w.cursor_seq !== listed.cursor_seq) return;
        await tx.webhooks.insertDeliveries(wanted.map((e) => this.delivery(w, e)));
        await tx.webhooks.advance(w.id, events[events.length - 1]!.seq);
      });
    }
  }

  /** The events of a batch a webhook gets: of its types and inside its subtree; none once its maker key is gone. */
  private async wanted(w: StoredWebhook, events: StoredEvent[]): Promise<StoredEvent[]> {
    if (!(await makerStands(this.meta.read.keys, w, this.now()))) return [];
    const typed = events.filter((e) => wantsEvent(w.events, e.type));
    const top = w.folder_id;
    if (top === null) return typed;
    const places = new EventPlaces(this.meta.read.webhooks);
    const out: StoredEvent[] = [];
    for (const e of typed) if (await places.inside(top, e)) out.push(e);
    return out;
  }

  private delivery(w: StoredWebhook, e: StoredEvent): StoredDelivery {
    const at = this.now();
    return {
      id: newId(), webhook_id: w.id, message_id: `msg_${w.id}_${e.seq}`, event_seq: e.seq, event_type: e.type, order_key: orderKey(e),
      payload: eventBody(e), status: 'pending', attempts: 0, next_attempt_at: at, locked_until: 0, last_status: null,
      last_response: null, last_error: null, created_at: at, delivered_at: null,
    };
  }

  private async sendDue(): Promise<void> {
    const room = CONCURRENCY - this.inFlight.size;
    if (room <= 0) return;
    const now = this.now();
    const timeout = this.opts.timeoutMs ?? 10_000;
    const due = await this.meta.transaction((tx) => tx.webhooks.claimDue(now, room, now + timeout * 2 + 5_000));
    for (const d of due) {
      const task: Promise<void> = this.attempt(d).catch((err) => this.opts.onError?.(`webhook delivery ${d.id}`, err)).finally(() => {
        this.inFlight.delete(task);
        // Its successor for the same file may be due now.
        this.wake();
      });
      this.inFlight.add(task);
    }
  }

  private async attempt(d: StoredDelivery): Promise<void> {
    const w = await this.meta.read.webhooks.get(d.webhook_id);
    if (!w) return;
    if (!(await makerStands(this.meta.read.keys, w, this.now()))) {
      // Revocation is for good: what was waiting is not sent, and not retried.
      const error = 'not sent: the key that made this webhook is revoked or has expired';
      await this.meta.transaction((tx) => tx.webhooks.updateDelivery(d.id, { status: 'failed', locked_until: 0, last_error: error }));
      this.opts.onAttempt?.('failed');
      return;
    }
    const result = await this.send(w, d);
    const now = this.now();
    const attempts = d.attempts + 1;
    const base = { attempts, locked_until: 0, last_status: result.status, last_response: result.response, last_error: result.error };
    if (result.status !== null && result.status >= 200 && result.status < 300) {
      await this.meta.transaction((tx) => tx.webhooks.updateDelivery(d.id, { ...base, status: 'delivered', delivered_at: now }));
      this.opts.onAttempt?.('delivered');
      return;
    }
    if (now - d.created_at >= DAY_MS) {
      await this.meta.transaction((tx) => tx.webhooks.updateDelivery(d.id, { ...base, status: 'failed' }));
      this.opts.onAttempt?.('failed');
      return;
    }
    const delay = Math.min(HOUR_MS, (this.opts.retryBaseMs ?? 1000) * 2 ** (attempts - 1));
    // Full spread between half and all of the delay: receivers that failed together do not retry together.
    const next = now + Math.round(delay / 2 + Math.random() * (delay / 2));
    await this.meta.transaction((tx) => tx.webhooks.updateDelivery(d.id, { ...base, next_attempt_at: next }));
    this.opts.onAttempt?.('retry');
  }

  private async send(w: StoredWebhook, d: StoredDelivery): Promise<WebhookResponse> {
    const timestamp = Math.floor(this.now() / 1000);
    const signature = await webhookSignature(w.secret, d.message_id, timestamp, d.payload);
    return this.post({
      url: w.url, body: Buffer.from(d.payload), allowPrivate: this.opts.allowPrivate, timeoutMs: this.opts.timeoutMs ?? 10_000,
      headers: {
        'content-type': 'application/json', 'user-agent': 'Coffer-Webhooks/1',
        'webhook-id': d.message_id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature,
      },
    });
  }
}
