/** The shapes of usage (contract §11): per-file totals on file/get and bytes served per day. */
import type { Static, TSchema } from 'typebox';
import { Type } from './schema.js';
import { FileRecord } from './api.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const FileWithUsage = Type.Intersect([FileRecord, Type.Object({
  downloads: Type.Integer({ description: 'Answers with the file\'s bytes that edges have reported (each range request counts); eventually consistent.' }),
  bytes_served: Type.Integer({ description: 'Bytes of the file edges have reported sending; eventually consistent.' }),
})]);
export type FileWithUsage = Static<typeof FileWithUsage>;

export const UsageRequest = Nullable(Type.Object({
  days: Type.Optional(Type.Number({ description: 'How many days back, today included: 1–366, default 30.' })),
}, { additionalProperties: false }));
export type UsageRequest = { days?: number };

export const UsageResponse = Type.Object({
  days: Type.Array(Type.Object({ date: Type.String({ description: 'UTC day, yyyy-mm-dd.' }), downloads: Type.Integer(), bytes: Type.Integer() })),
});
export type UsageResponse = Static<typeof UsageResponse>;
