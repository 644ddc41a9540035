/** The shapes of contract §10: keys, upload grants and link revocation, as JSON schemas. */
import type { Static, TSchema } from 'typebox';
import { Type } from './schema.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const strict = { additionalProperties: false } as const;
const Time = Type.String({ format: 'date-time' });

export const Scopes = Type.Array(Type.String(), { description: 'Any of "read", "write", "admin"; at least one.' });

export const CreateKeyRequest = Type.Object({
  name: Type.String({ description: 'A label: 1–255 characters.' }),
  scopes: Scopes,
  folder_id: Type.Optional(Nullable(Type.String({ description: 'Confines the key to this folder and what is inside it.' }))),
  expires_in: Type.Optional(Nullable(Type.Number({
    description: 'Seconds until the key stops working; none: until revoked, or when made by an expiring key, until that key expires. '
      + 'Past the making key\'s expiry: 400 invalid_expiry.',
  }))),
}, strict);
export type CreateKeyRequest = Static<typeof CreateKeyRequest>;

export const KeyRecord = Type.Object({
  key_id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  folder_id: Nullable(Type.String()),
  created_at: Time,
  expires_at: Nullable(Time),
  revoked_at: Nullable(Time),
  last_used_at: Nullable(Time),
  created_by: Type.String({ description: 'Who made it: "root" (the root key or a Playground session) or the key_id of the key that made it. It stops working when that key does.' }),
});
export type KeyRecord = Static<typeof KeyRecord>;

export const CreateKeyResponse = Type.Intersect([KeyRecord, Type.Object({
  key: Type.String({ description: 'The key itself, shown this once: it is stored hashed.' }),
})]);
export type CreateKeyResponse = Static<typeof CreateKeyResponse>;

export const ListKeysRequest = Nullable(Type.Object({}, { ...strict, description: 'No fields.' }));
export const ListKeysResponse = Type.Object({ keys: Type.Array(KeyRecord) });
export type ListKeysResponse = Static<typeof ListKeysResponse>;

export const RevokeKeyRequest = Type.Object({ key_id: Type.String() }, strict);
export const RevokeKeyResponse = Type.Object({ key_id: Type.String(), revoked: Type.Literal(true), revoked_at: Time });
export type RevokeKeyResponse = Static<typeof RevokeKeyResponse>;

export const CreateGrantRequest = Type.Object({
  folder_id: Type.Optional(Nullable(Type.String({ description: 'Uploads land in this folder (or below it); default: the root.' }))),
  visibility: Type.Optional(Type.String({ description: '"Public" or "Private": every upload must ask for it.' })),
  max_size: Type.Number({ description: 'Largest declared size, in bytes, of each file.' }),
  content_types: Type.Optional(Type.Array(Type.String(), { description: 'Allowed content types; "image/*" allows every image type.' })),
  expires_in: Type.Optional(Type.Number({ description: 'Seconds, 1–86400; default 3600, or less when the making key expires sooner. Past its expiry: 400 invalid_expiry.' })),
  max_files: Type.Optional(Type.Number({ description: 'How many uploads may be started with it; default 1.' })),
}, strict);
export type CreateGrantRequest = Static<typeof CreateGrantRequest>;

export const CreateGrantResponse = Type.Object({
  grant: Type.String({ description: 'Sent as "Authorization: Grant <grant>" to the upload calls and /tus.' }),
  expires_at: Time,
});
export type CreateGrantResponse = Static<typeof CreateGrantResponse>;

export const RevokeLinksResponse = Type.Object({
  file_id: Type.String(),
  links_revoked_at: Type.String({ format: 'date-time', description: 'Links issued at or before this time answer 403 link_revoked.' }),
});
export type RevokeLinksResponse = Static<typeof RevokeLinksResponse>;
