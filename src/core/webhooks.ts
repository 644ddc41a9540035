/**
 * Webhooks (contract §11): subscriptions, their deliveries, and the Standard Webhooks
 * signature. No Node here: the SDK verifies with the same code in browsers and workers.
 */
export const WEBHOOK_EVENTS = ['file.ready', 'file.updated', 'file.deleted', 'folder.created', 'folder.updated', 'folder.deleted', 'upload.expired'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface StoredWebhook {
  id: string;
  url: string;
  /** JSON array of event types, or ["*"]. */
  events: string;
  /** "whsec_" + base64 of the key bytes, as Standard Webhooks writes secrets. */
  secret: string;
  created_at: number;
  /** The last event of the log already turned into deliveries for this webhook. */
  cursor_seq: number;
  /** The folder its maker was confined to: only events inside its subtree are delivered. Null: the whole tree. */
  folder_id: string | null;
  /** Who made it: a key id, or "root" (the root key or a session). A key's webhook stops with the key. */
  made_by: string;
}

/** `made_by` of a webhook the root key or a session made (and of every webhook older than `made_by`). */
export const ROOT_MAKER = 'root';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface StoredDelivery {
  id: string;
  webhook_id: string;
  /** The `webhook-id` header: the same for every attempt of one event to one webhook. */
  message_id: string;
  event_seq: number;
  event_type: string;
  /** Deliveries of one key (a file, or a folder) to one webhook go out in sequence order. */
  order_key: string;
  /** The body sent: the event as recorded. */
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number;
  /** A sender working on it holds it until then. */
  locked_until: number;
  last_status: number | null;
  last_response: string | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

/** Whether a webhook that listens for `events` (JSON) wants `type`. */
export function wantsEvent(events: string, type: string): boolean {
  const list = JSON.parse(events) as string[];
  return list.includes('*') || list.includes(type);
}

function base64ToBytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function bytesToBase64(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]!);
  return btoa(bin);
}

/** The HMAC key of a Standard Webhooks secret: the bytes after "whsec_", base64-decoded. */
export function secretKeyBytes(secret: string): Uint8Array {
  return base64ToBytes(secret.startsWith('whsec_') ? secret.slice(6) : secret);
}

/** `v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>` with Web Crypto. */
export async function webhookSignature(secret: string, id: string, timestamp: number, body: string): Promise<string> {
  const key = await globalThis.crypto.subtle.importKey('raw', secretKeyBytes(secret) as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = await globalThis.crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  return `v1,${bytesToBase64(new Uint8Array(mac))}`;
}
