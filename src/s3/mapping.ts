/**
 * How S3's names meet Coffer's tree (contract §12; docs/s3.md, "Mapping", "Keys and folders"):
 * - a bucket is a top-level folder;
 * - the key `a/b/c.txt` is the file `c.txt` in the folder `a/b` of the bucket, folders made as
 *   needed (and removed again once S3 empties them, if S3 made them);
 * - a key ending in "/" names the folder: with no bytes (a "directory marker") PUT makes the
 *   folder alone; with bytes, the object is the file of the empty name in that folder
 *   (FOLDER_KEY_NAME), which no other name spells, so `a/` and `a/x` round-trip side by side;
 * - within a folder a name is one object: of several files of one name (the programmatic
 *   interface allows them) S3 sees the newest, and a PUT or a DELETE acts on all of them.
 * Every other segment must be a Coffer name as it is (no white space around it, no control
 * character, not "." or "..", at most 255 bytes); a key is at most 1024 bytes, as in S3.
 * Keys a folder tree cannot hold as they are (an empty segment, a lone space) are refused
 * rather than stored under an escaped name: the Playground, the programmatic interface and the
 * edges show a file by the name S3 gave it. A key whose percent-encoded bytes are not UTF-8 is
 * InvalidURI, as S3 answers it.
 */
import { FOLDER_KEY_NAME, validateName } from '../core/names.js';
import type { Caller } from '../core/access.js';
import type { CofferService } from '../service/service.js';
import type { Sight } from '../service/access.js';
import type { Located } from '../service/paths.js';
import { s3Errors } from './errors.js';
import { lenientDecode } from './sigv4.js';

const MAX_KEY_BYTES = 1024;
/** Stands for percent-encoded bytes that are not UTF-8: a lone surrogate, which no UTF-8 decodes to. */
const NOT_UTF8 = '\uDFFF';


/** A key as sent, decoded; bytes that are not UTF-8 become NOT_UTF8 (parseKey refuses it), a malformed escape stays as it is. */
function decodeKey(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return NOT_UTF8;
      }
    });
  }
}

/** The bucket and key a path-style request names. */
export function bucketAndKey(path: string): { bucket: string | null; key: string | null } {
  const [, first = '', ...rest] = path.split('/');
  const bucket = first === '' ? null : lenientDecode(first);
  if (bucket === null) return { bucket: null, key: null };
  const raw = rest.join('/');
  // "/bucket" and "/bucket/" both name the bucket.
  return { bucket, key: raw === '' ? null : decodeKey(raw) };
}

/** A key as folder names and a file name; a key ending in "/" has FOLDER_KEY_NAME, and `folderKey`. */
export interface KeyPath {
  key: string;
  folders: string[];
  name: string;
  /** The key ends in "/": it names the folder `folders`, and holds bytes only as FOLDER_KEY_NAME. */
  folderKey: boolean;
}

function validSegment(key: string, segment: string): string {
  let name: string;
  try {
    name = validateName(segment);
  } catch (err) {
    throw s3Errors.invalidKey(key, `"${segment}" is not a name Coffer keeps (${(err as Error).message.replace(/^The name /, '').replace(/\.$/, '')})`);
  }
  if (name !== segment) throw s3Errors.invalidKey(key, `"${segment}" has white space at an end`);
  return name;
}

export function parseKey(key: string): KeyPath {
  if (key.includes(NOT_UTF8)) throw s3Errors.invalidUri();
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) throw s3Errors.keyTooLong();
  const segments = key.split('/');
  const last = segments.pop()!;
  for (const s of segments) {
    if (s === '') throw s3Errors.invalidKey(key, 'it has an empty segment ("//", or "/" at the start)');
    validSegment(key, s);
  }
  if (last === '') return { key, folders: segments, name: FOLDER_KEY_NAME, folderKey: true };
  return { key, folders: segments, name: validSegment(key, last), folderKey: false };
}

/**
 * S3's rules for a new bucket's name (general purpose buckets): 3–63 lower-case letters, digits,
 * dots and hyphens, starting and ending with a letter or digit; no "..", ".-" or "-."; not an
 * IPv4 address; none of the prefixes and suffixes S3 keeps for itself.
 */
export function checkNewBucketName(name: string): void {
  const ok = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name)
    && !/\.\.|\.-|-\./.test(name)
    && !/^\d+\.\d+\.\d+\.\d+$/.test(name)
    && !/^(xn--|sthree-|amzn-s3-demo-)/.test(name)
    && !/(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$/.test(name);
  if (!ok) throw s3Errors.invalidBucketName(name);
}

/** What a request's bucket resolves to for its caller. */
export interface BucketAt {
  name: string;
  sight: Sight;
  at: Located & { folder: NonNullable<Located['folder']> };
}

/** The bucket's folder, or NoSuchBucket (also when the caller does not see it). */
export async function requireBucket(service: CofferService, caller: Caller, name: string): Promise<BucketAt> {
  const sight = await service.paths.sight(caller);
  const at = await service.paths.locate(sight, [name]);
  if (!at || !at.folder) throw s3Errors.noSuchBucket(name);
  return { name, sight, at: at as BucketAt['at'] };
}
