import { errors } from './errors.js';

const MAX_NAME_BYTES = 255;
// C0 controls and DEL are never part of a name; neither is "/".
const FORBIDDEN = /[\u0000-\u001f\u007f/]/;

/** Returns the trimmed name, or throws `invalid_name` saying which rule it broke. */
export function validateName(raw: string, field = 'name'): string {
  const name = raw.trim();
  const fail = (why: string) => errors.invalidField('invalid_name', field, `The name ${why}.`);
  if (name.length === 0) throw fail('is empty');
  if (new TextEncoder().encode(name).length > MAX_NAME_BYTES) throw fail(`is longer than ${MAX_NAME_BYTES} bytes of UTF-8`);
  if (FORBIDDEN.test(name)) throw fail('contains "/" or a control character');
  if (name === '.' || name === '..') throw fail('cannot be "." or ".."');
  if (/[\ud800-\udfff]/.test(name.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) throw fail('is not valid Unicode');
  return name;
}

/**
 * The name of the object S3 keeps under a key ending in "/" (`a/` holding bytes): the file
 * with the empty name in the folder `a`, so that the folder's path and the name spell the key
 * exactly. validateName never answers it, so no name given anywhere else spells it.
 */
export const FOLDER_KEY_NAME = '';

/** A new file's name: a valid name, or FOLDER_KEY_NAME where the S3 interface gives it (`s3Key`). */
export const validateFileName = (raw: string, s3Key: boolean): string => (s3Key && raw === FOLDER_KEY_NAME ? raw : validateName(raw));

/** The key that name sorting and search compare: case-folded, the same on every database. */
export const nameKey = (name: string): string => name.normalize('NFC').toLowerCase();

/** S3's order of keys: bytes of UTF-8, which is code point order (not JavaScript's UTF-16 order). */
export function compareKeys(a: string, b: string): number {
  for (let i = 0, j = 0; ; ) {
    if (i >= a.length) return j >= b.length ? 0 : -1;
    if (j >= b.length) return 1;
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(j)!;
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
}

/**
 * Operators' labels (an edge's name, its parents' addresses): characters a terminal or a page
 * could be fooled by are never part of one: C0 and C1 controls, DEL, line separators and
 * bidirectional overrides.
 */
const UNSAFE_LABEL = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** True for a label of at most `max` UTF-16 units holding none of the characters above. */
export const isSafeLabel = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max && !UNSAFE_LABEL.test(v);
