/** The shapes of contract §11's webhooks, as JSON schemas. */
import type { Static, TSchema } from 'typebox';
import { Type } from './schema.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const strict = { additionalProperties: false } as const;
const Time = Type.String({ format: 'date-time' });

export const CreateWebhookRequest = Type.Object({
  url: Type.String({ description: 'The receiver: http(s), on a public address.' }),
  events: Type.Array(Type.String(), { description: 'Event types (file.ready, file.updated, file.deleted, folder.created, folder.updated, folder.deleted, upload.expired), or ["*"].' }),
  secret: Type.Optional(Type.String({ description: 'A Standard Webhooks secret ("whsec_" + base64 of 24–64 bytes); generated when left out.' })),
}, strict);
export type CreateWebhookRequest = Static<typeof CreateWebhookRequest>;

export const WebhookRecord = Type.Object({
  webhook_id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  created_at: Time,
  folder_id: Nullable(Type.String({ description: 'The folder whose subtree it hears of: its maker key\'s folder; null for the whole tree.' })),
  made_by: Type.String({ description: 'The key id that made it, or "root" (the root key or a Playground session). A key\'s webhook stops with the key.' }),
});
export type WebhookRecord = Static<typeof WebhookRecord>;

export const CreateWebhookResponse = Type.Intersect([WebhookRecord, Type.Object({ secret: Type.String({ description: 'Shown in this answer only.' }) })]);
export type CreateWebhookResponse = Static<typeof CreateWebhookResponse>;

export const ListWebhooksRequest = Nullable(Type.Object({}, { ...strict, description: 'No fields.' }));
export const ListWebhooksResponse = Type.Object({ webhooks: Type.Array(WebhookRecord) });
export type ListWebhooksResponse = Static<typeof ListWebhooksResponse>;

export const WebhookIdRequest = Type.Object({ webhook_id: Type.String() }, strict);
export const DeleteWebhookResponse = Type.Object({ webhook_id: Type.String(), deleted: Type.Literal(true) });
export type DeleteWebhookResponse = Static<typeof DeleteWebhookResponse>;

export const DeliveriesRequest = Type.Object({
  webhook_id: Type.String(),
  limit: Type.Optional(Type.Number({ description: '1–1000, default 100.' })),
  cursor: Type.Optional(Nullable(Type.String())),
}, strict);
export type DeliveriesRequest = Static<typeof DeliveriesRequest>;

export const DeliveryRecord = Type.Object({
  delivery_id: Type.String(),
  webhook_id: Type.String(),
  message_id: Type.String({ description: 'The webhook-id header: the same for every attempt.' }),
  event_type: Type.String(),
  event_seq: Type.Integer(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  last_status: Nullable(Type.Integer({ description: 'The receiver\'s last HTTP status.' })),
  last_response: Nullable(Type.String({ description: 'The first 1 KiB of its last answer.' })),
  last_error: Nullable(Type.String()),
  created_at: Time,
  next_attempt_at: Nullable(Time),
  delivered_at: Nullable(Time),
});
export type DeliveryRecord = Static<typeof DeliveryRecord>;

export const DeliveriesResponse = Type.Object({ deliveries: Type.Array(DeliveryRecord), next_cursor: Nullable(Type.String()) });
export type DeliveriesResponse = Static<typeof DeliveriesResponse>;

export const RedeliverRequest = Type.Object({ delivery_id: Type.String() }, strict);
