/**
 * Checks a webhook delivery as a receiver gets it (Standard Webhooks): the signature over
 * `id.timestamp.body` with the webhook's secret, and a timestamp close to now, so a captured
 * delivery cannot be replayed later. Runs wherever Web Crypto does.
 */
import { clientError } from '../core/errors.js';
import { constantTimeEqual } from '../core/signing.js';
import { webhookSignature } from '../core/webhooks.js';

export interface WebhookDelivery {
  type: string;
  seq: number;
  timestamp: string;
  data: Record<string, unknown>;
}

export interface VerifyWebhookOptions {
  /** How far the timestamp may be from now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Unix seconds to compare with (default: now). */
  now?: number;
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : bag[key];
  return Array.isArray(v) ? v[0] : v;
}

const refuse = (message: string) => clientError('invalid_webhook', message);

/** Returns the event when the delivery is genuine and fresh; throws CofferError `invalid_webhook` otherwise. */
export async function verifyWebhook(headers: HeaderBag, body: string | Uint8Array, secret: string, opts: VerifyWebhookOptions = {}): Promise<WebhookDelivery> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw refuse('The webhook-id, webhook-timestamp and webhook-signature headers are required.');
  if (!/^\d{1,12}$/.test(timestamp)) throw refuse('webhook-timestamp is not a Unix time.');
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestamp)) > (opts.toleranceSeconds ?? 300)) throw refuse('webhook-timestamp is too far from now: a replay, or a clock that is off.');
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const expected = new TextEncoder().encode(await webhookSignature(secret, id, Number(timestamp), text));
  let ok = false;
  // Several signatures may be sent (secret rotation): any one that matches will do.
  for (const given of signatures.split(' ')) ok = constantTimeEqual(new TextEncoder().encode(given), expected) || ok;
  if (!ok) throw refuse('The signature does not match: the body was changed, or the secret is not this webhook\'s.');
  return JSON.parse(text) as WebhookDelivery;
}
