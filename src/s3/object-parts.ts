/**
 * Reading an object by its parts (contract §12, docs/s3.md): GetObject and HeadObject with
 * `partNumber` answer that part's bytes (206, Content-Range, x-amz-mp-parts-count), and
 * GetObjectAttributes lists the parts. A multipart object keeps the parts it was completed
 * from (number and size, service/uploads/join.ts); an object stored whole is one part, the
 * whole object, and carries no parts count, as S3 answers a single PUT's object.
 */
import type { StoredFile } from '../core/ports.js';
import type { S3Request } from './context.js';
import { s3Errors } from './errors.js';

export interface ObjectPart {
  /** The part number the client gave when it uploaded the part. */
  number: number;
  size: number;
}

const MAX_PART_NUMBER = 10_000;

/** The parts of a multipart object in order; null for one stored whole (or whose parts were not kept). */
export async function partsOf(r: S3Request, file: StoredFile): Promise<ObjectPart[] | null> {
  const count = Number(/-(\d+)$/.exec(file.s3_etag ?? '')?.[1] ?? 0);
  if (count === 0) return null;
  const parts = await r.service.multipart.objectParts(r.caller, file);
  // Completed before parts were kept with their object: only its whole is known.
  if (parts.length !== count) return null;
  return parts.map((p) => ({ number: p.part_number, size: p.size }));
}

/** The partNumber of a GetObject or HeadObject, or null; with a Range too it is refused, as S3 does. */
export function partNumberOf(r: S3Request): number | null {
  const raw = r.query.get('partNumber');
  if (raw === undefined) return null;
  const n = /^\d{1,5}$/.test(raw) ? Number(raw) : 0;
  if (n < 1 || n > MAX_PART_NUMBER) throw s3Errors.invalidArgument(`Part number must be an integer between 1 and ${MAX_PART_NUMBER}, inclusive`, 'partNumber', raw);
  if (r.headers.has('range')) throw s3Errors.invalidRequest('Cannot specify both Range header and partNumber query parameter');
  return n;
}

/**
 * The bytes of part `n` (the n-th of the object's parts) and how many parts there are (null
 * for an object stored whole); InvalidPartNumber past the last.
 */
export function partRange(parts: ObjectPart[] | null, n: number, size: number): { range: { start: number; end: number } | null; count: number | null } {
  if (parts === null) {
    if (n !== 1) throw s3Errors.invalidPartNumber();
    return { range: size === 0 ? null : { start: 0, end: size - 1 }, count: null };
  }
  if (n > parts.length) throw s3Errors.invalidPartNumber();
  let start = 0;
  for (let i = 0; i < n - 1; i++) start += parts[i]!.size;
  const length = parts[n - 1]!.size;
  return { range: length === 0 ? null : { start, end: start + length - 1 }, count: parts.length };
}
