/**
 * Webhook subscriptions and their deliveries (contract §11). The event log is the outbox:
 * every change appends its event in its own transaction, and the sender
 * (webhooks/sender.ts) turns events into deliveries and sends them, once started.
 */
import { randomBytes } from 'node:crypto';
import { CofferError, errors } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { isoTime } from '../core/records.js';
import { ROOT_MAKER, WEBHOOK_EVENTS, type StoredDelivery, type StoredWebhook } from '../core/webhooks.js';
import type { Caller } from '../core/access.js';
import type {
  CreateWebhookRequest, CreateWebhookResponse, DeliveriesRequest, DeliveriesResponse, DeleteWebhookResponse, DeliveryRecord, ListWebhooksResponse, WebhookRecord,
} from '../core/api-webhooks.js';
import type { MetadataTx } from '../core/ports.js';
import type { ServiceContext } from './context.js';
import { authorize, authorizeFolder, reachOf, type Action } from './policy.js';
import { checkReceiverUrl } from './url-guard.js';
import type { WebhookSender } from './webhooks/sender.js';

const webhookRecord = (w: StoredWebhook): WebhookRecord => ({
  webhook_id: w.id, url: w.url, events: JSON.parse(w.events) as string[], created_at: isoTime(w.created_at), folder_id: w.folder_id, made_by: w.made_by,
});

/**
 * Whether a webhook lies in the caller's reach: its folder inside the caller's subtree. A
 * whole-tree webhook (the root's, an unconfined key's) is in the reach of unconfined callers only.
 */
async function inReach(tx: MetadataTx, caller: Caller, action: Action, w: StoredWebhook): Promise<boolean> {
  if (reachOf(caller) === null) return true;
  try {
    await authorizeFolder(tx, caller, action, w.folder_id);
    return true;
  } catch (err) {
    // Out of reach answers 404; anything else is a real failure.
    if (err instanceof CofferError && err.status === 404) return false;
    throw err;
  }
}

/** The webhook for `action`: 404 `webhook_not_found` when absent or out of the caller's reach. */
async function webhookFor(tx: MetadataTx, caller: Caller, action: Action, webhookId: string): Promise<StoredWebhook> {
  authorize(caller, action);
  const w = await tx.webhooks.get(webhookId);
  if (!w || !(await inReach(tx, caller, action, w))) throw errors.webhookNotFound(webhookId);
  return w;
}

export const deliveryRecord = (d: StoredDelivery): DeliveryRecord => ({
  delivery_id: d.id, webhook_id: d.webhook_id, message_id: d.message_id, event_type: d.event_type, event_seq: d.event_seq, status: d.status,
  attempts: d.attempts, last_status: d.last_status, last_response: d.last_response, last_error: d.last_error, created_at: isoTime(d.created_at),
  next_attempt_at: d.status === 'pending' ? isoTime(d.next_attempt_at) : null, delivered_at: d.delivered_at === null ? null : isoTime(d.delivered_at),
});

function parseEvents(events: string[]): string[] {
  const wanted = [...new Set(events.map((e) => e.trim()))];
  const known = (e: string) => e === '*' || (WEBHOOK_EVENTS as readonly string[]).includes(e);
  if (wanted.length === 0 || !wanted.every(known)) {
    throw errors.invalidField('invalid_events', 'events', `"events" must list one or more of ${WEBHOOK_EVENTS.join(', ')}, or "*".`);
  }
  return wanted.includes('*') ? ['*'] : wanted;
}

function parseSecret(secret: string | undefined): string {
  if (secret === undefined) return `whsec_${randomBytes(32).toString('base64')}`;
  const m = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  const bytes = m ? Buffer.from(m[1]!, 'base64').length : 0;
  if (bytes < 24 || bytes > 64) throw errors.invalidField('invalid_secret', 'secret', '"secret" must be "whsec_" followed by the base64 of 24 to 64 bytes.');
  return secret;
}

const encodeCursor = (d: StoredDelivery) => Buffer.from(JSON.stringify([d.event_seq, d.id])).toString('base64url');
function decodeCursor(cursor: string): { seq: number; id: string } {
  try {
    const [seq, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [number, string];
    if (Number.isInteger(seq) && typeof id === 'string') return { seq, id };
  } catch { /* answered below */ }
  throw errors.invalidField('invalid_cursor', 'cursor', '"cursor" must be a next_cursor from an earlier answer.');
}

export class Webhooks {
  constructor(private readonly c: ServiceContext, private readonly sender: WebhookSender) {}

  /** Starts sending: due deliveries are polled for, and each change and redelivery wakes the sender. */
  start(): void {
    this.sender.start();
  }

  /** Stops sending and waits for the attempts in flight; what is left is sent after the next start. */
  close(): Promise<void> {
    return this.sender.close();
  }

  async create(caller: Caller, req: CreateWebhookRequest): Promise<CreateWebhookResponse> {
    // Needs "read" beside "admin": deliveries carry names, sizes and hashes.
    authorize(caller, 'webhook.create');
    const url = await checkReceiverUrl(req.url, this.c.opts.webhookAllowPrivate ?? false);
    const events = parseEvents(req.events);
    const secret = parseSecret(req.secret);
    const row: StoredWebhook = {
      // Only events after this one are delivered.
      id: newId(), url, events: JSON.stringify(events), secret, created_at: this.c.now(), cursor_seq: await this.c.meta.lastEventSeq(),
      // It hears of its maker's subtree only, and as long as its maker stands.
      folder_id: reachOf(caller), made_by: caller.kind === 'key' ? caller.keyId : ROOT_MAKER,
    };
    await this.c.meta.transaction((tx) => tx.webhooks.insert(row));
    return { ...webhookRecord(row), secret };
  }

  async list(caller: Caller): Promise<ListWebhooksResponse> {
    authorize(caller, 'webhook.read');
    const tx = this.c.meta.read;
    const seen: StoredWebhook[] = [];
    for (const w of await tx.webhooks.list()) if (await inReach(tx, caller, 'webhook.read', w)) seen.push(w);
    return { webhooks: seen.map(webhookRecord) };
  }

  async delete(caller: Caller, webhookId: string): Promise<DeleteWebhookResponse> {
    const gone = await this.c.meta.transaction(async (tx) => {
      await webhookFor(tx, caller, 'webhook.write', webhookId);
      return tx.webhooks.delete(webhookId);
    });
    if (!gone) throw errors.webhookNotFound(webhookId);
    return { webhook_id: webhookId, deleted: true };
  }

  async deliveries(caller: Caller, req: DeliveriesRequest): Promise<DeliveriesResponse> {
    await webhookFor(this.c.meta.read, caller, 'webhook.read', req.webhook_id);
    const limit = req.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw errors.invalidField('invalid_limit', 'limit', '"limit" must be an integer from 1 to 1000.');
    const before = req.cursor ? decodeCursor(req.cursor) : null;
    const rows = await this.c.meta.read.webhooks.listDeliveries(req.webhook_id, before, limit + 1);
    const page = rows.slice(0, limit);
    return { deliveries: page.map(deliveryRecord), next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1]!) : null };
  }

  /** Sends a delivery again, whatever became of it: at once, with the same webhook-id. */
  async redeliver(caller: Caller, deliveryId: string): Promise<DeliveryRecord> {
    authorize(caller, 'webhook.write');
    const row = await this.c.meta.transaction(async (tx) => {
      const d = await tx.webhooks.getDelivery(deliveryId);
      const w = d && (await tx.webhooks.get(d.webhook_id));
      // A delivery of a webhook out of reach is as absent as the webhook.
      if (!d || !w || !(await inReach(tx, caller, 'webhook.write', w))) throw errors.deliveryNotFound(deliveryId);
      const now = this.c.now();
      // Retried within the delivery's first day as usual; after it, one attempt.
      const patch = { status: 'pending' as const, next_attempt_at: now, locked_until: 0 };
      await tx.webhooks.updateDelivery(d.id, patch);
      return { ...d, ...patch };
    });
    this.sender.wake();
    return deliveryRecord(row);
  }

  /**
   * Sends a `webhook.test` event to the receiver at once (the Playground's "send test"):
   * signed and retried like any delivery, outside the event log.
   */
  async test(caller: Caller, webhookId: string): Promise<DeliveryRecord> {
    const w = await webhookFor(this.c.meta.read, caller, 'webhook.write', webhookId);
    const now = this.c.now();
    const id = newId();
    const row: StoredDelivery = {
      id, webhook_id: w.id, message_id: `msg_test_${id}`, event_seq: 0, event_type: 'webhook.test', order_key: `test:${id}`,
      payload: JSON.stringify({ type: 'webhook.test', seq: 0, timestamp: isoTime(now), data: { webhook_id: w.id } }),
      status: 'pending', attempts: 0, next_attempt_at: now, locked_until: 0, last_status: null, last_response: null, last_error: null,
      created_at: now, delivered_at: null,
    };
    await this.c.meta.transaction((tx) => tx.webhooks.insertDeliveries([row]));
    this.sender.wake();
    return deliveryRecord(row);
  }
}
