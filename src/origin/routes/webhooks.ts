import * as api from '../../core/api-webhooks.js';
import { endpoint } from './endpoint.js';

export const createWebhook = endpoint({
  path: '/collections/webhooks/create',
  tag: 'Webhooks',
  summary: 'Create a webhook',
  description: 'Events after this call are POSTed to the URL with Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature). The secret is in this answer only. It hears only of events inside the folder the calling key is confined to, and stops when that key is revoked or expires. Needs "admin" and "read".',
  body: api.CreateWebhookRequest,
  response: api.CreateWebhookResponse,
  handle: (s, body, caller) => s.webhooks.create(caller, body),
});

export const listWebhooks = endpoint({
  path: '/collections/webhooks/list',
  tag: 'Webhooks',
  summary: 'List webhooks',
  description: 'Every webhook in the caller\'s reach (made for its folder or one inside it; all of them for the root key and unconfined keys), without its secret. Needs "admin".',
  body: api.ListWebhooksRequest,
  response: api.ListWebhooksResponse,
  handle: (s, _body, caller) => s.webhooks.list(caller),
});

export const deleteWebhook = endpoint({
  path: '/collections/webhooks/delete',
  tag: 'Webhooks',
  summary: 'Delete a webhook',
  description: 'No more deliveries are made or retried for it. Needs "admin"; a webhook out of the caller\'s reach is not found.',
  body: api.WebhookIdRequest,
  response: api.DeleteWebhookResponse,
  handle: (s, body, caller) => s.webhooks.delete(caller, body.webhook_id),
});

export const deliveries = endpoint({
  path: '/collections/webhooks/deliveries',
  tag: 'Webhooks',
  summary: 'Deliveries of a webhook',
  description: 'Newest first, with status, attempts and the receiver\'s last answer. Needs "admin".',
  body: api.DeliveriesRequest,
  response: api.DeliveriesResponse,
  handle: (s, body, caller) => s.webhooks.deliveries(caller, body),
});

export const redeliver = endpoint({
  path: '/collections/webhooks/redeliver',
  tag: 'Webhooks',
  summary: 'Send a delivery again',
  description: 'Sends it again at once, with the same webhook-id. Needs "admin".',
  body: api.RedeliverRequest,
  response: api.DeliveryRecord,
  handle: (s, body, caller) => s.webhooks.redeliver(caller, body.delivery_id),
});

export const testWebhook = endpoint({
  path: '/collections/webhooks/test',
  tag: 'Webhooks',
  summary: 'Send a test delivery',
  description: 'Sends a "webhook.test" event to the receiver at once, signed like any delivery; it appears in the deliveries list. Needs "admin".',
  body: api.WebhookIdRequest,
  response: api.DeliveryRecord,
  handle: (s, body, caller) => s.webhooks.test(caller, body.webhook_id),
});
