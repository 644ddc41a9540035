/**
 * The raw form of a file-progress request (contract §9): the part's bytes are the body and
 * the fields that name the part are in the query string, so they are known before the first
 * byte and the bytes go straight to the part's writer as they arrive.
 */
import { errors } from '../core/errors.js';
import type { PartWriter } from '../core/ports.js';
import { Gather } from '../service/uploads/gather.js';

export type RawPartFields = {
  bucket: string;
  key: string;
  uploadId: string;
  fileId: string;
  partNumber: number;
};

const STRING_FIELDS = ['bucket', 'key', 'uploadId', 'fileId'] as const;
const FIELDS = new Set<string>([...STRING_FIELDS, 'partNumber']);
/** A number as JSON writes one: what the JSON form's partNumber could have been. */
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * The five fields from the parsed query string, with the same 400 invalid_request (and
 * details.field) the JSON form answers for a missing, repeated, mistyped or unknown field.
 * A partNumber that is a number but not a valid one is left to the service (invalid_part_number).
 */
export function partFieldsOf(query: unknown): RawPartFields {
  const q = (query ?? {}) as Record<string, unknown>;
  for (const name of Object.keys(q)) {
    if (!FIELDS.has(name)) throw errors.invalidRequest(`"${name}" is not a field of this request.`, name);
  }
  const single = (name: string): string => {
    const value = q[name];
    if (value === undefined) throw errors.invalidRequest(`"${name}" is required in the query string.`, name);
    if (typeof value !== 'string') throw errors.invalidRequest(`"${name}" must be given once.`, name);
    return value;
  };
  const [bucket, key, uploadId, fileId] = STRING_FIELDS.map(single) as [string, string, string, string];
  const partText = single('partNumber');
  if (!JSON_NUMBER.test(partText)) throw errors.invalidRequest('"partNumber" must be a number.', 'partNumber');
  return { bucket, key, uploadId, fileId, partNumber: Number(partText) };
}

/**
 * Writes the body to `writer` (when given) as it arrives and returns how many bytes it had;
 * stops with 413 as soon as it is known to be over `limit`. Without a writer the bytes are
 * only counted: a request whose answer is already known is still read to its end.
 */
export async function readRawBody(source: AsyncIterable<Buffer>, writer: PartWriter | null, limit: number, declaredLength?: number): Promise<number> {
  if (declaredLength !== undefined && declaredLength > limit) throw errors.payloadTooLarge(limit);
  let total = 0;
  // A few large writes, not one per packet, and no copy on the way to the disk (service/uploads/gather.ts).
  const gather = writer ? new Gather(writer) : null;
  try {
    for await (const chunk of source) {
      total += chunk.length;
      if (total > limit) throw errors.payloadTooLarge(limit);
      await gather?.write(chunk);
    }
    await gather?.flush();
    return total;
  } finally {
    gather?.release();
  }
}
