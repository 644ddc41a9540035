/**
 * ListObjectsV2 and ListObjects (contract §12): prefix, delimiter, continuation, start-after or
 * marker, max-keys, encoding-type=url. Keys come in S3's order (bytes of UTF-8), walked folder
 * by folder: with the delimiter "/", a folder is a common prefix and is not entered; with none,
 * it is walked in place, so a folder "a" ("a/…") sorts after a file "a.txt", as in S3.
 */
import type { StoredFile } from '../core/ports.js';
import type { Sight } from '../service/access.js';
import type { Located } from '../service/paths.js';
import { compareKeys } from '../core/names.js';
import { s3Errors } from './errors.js';
import { requireBucket } from './mapping.js';
import { etagOf, intParam, isoTime, noBody, ownerOf, quoted, xmlAnswer, type S3Handler, type S3Request } from './context.js';
import { uriEncode } from './sigv4.js';
import type { XmlFields } from './xml.js';

export type Item = { kind: 'object'; key: string; file: StoredFile } | { kind: 'prefix'; key: string };

const PAGE = 1000;

/** A string below every key that starts with `text` (text less its last character). */
const below = (text: string): string | null => (text === '' ? null : [...text].slice(0, -1).join(''));
const larger = (a: string | null, b: string | null): string | null => (a === null ? b : b === null ? a : compareKeys(a, b) >= 0 ? a : b);

interface Walk {
  r: S3Request;
  sight: Sight;
  /** Folders are common prefixes (delimiter "/"), not entered. */
  foldersArePrefixes: boolean;
}

/** The items under `at` (whose keys start with `base`), in key order, each after `after`. */
async function* walk(w: Walk, at: Located, base: string, partial: string, after: string | null): AsyncGenerator<Item> {
  let rel: string | null = null;
  if (after !== null) {
    if (after.startsWith(base)) rel = after.slice(base.length);
    // Every key here starts with `base`, so all of them sort before `after`.
    else if (compareKeys(after, base) > 0) return;
  }
  const relBound = rel === null ? null : rel.includes('/') ? rel.slice(0, rel.indexOf('/')) : rel;
  let bound = larger(relBound, below(partial));
  let lastFile: string | null = null;
  for (;;) {
    const page = await w.r.service.paths.entries(w.r.caller, w.sight, at, bound, PAGE);
    for (const e of page.entries) {
      if (!e.key.startsWith(partial)) {
        if (compareKeys(e.key, partial) > 0) return;
        continue;
      }
      const key = base + e.key;
      const later = after === null || compareKeys(key, after) > 0;
      if (e.kind === 'file') {
        // Of several files of one name, the newest comes first: S3 sees that one.
        if (later && key !== lastFile) yield { kind: 'object', key, file: e.file };
        lastFile = key;
      } else if (w.foldersArePrefixes) {
        if (later) yield { kind: 'prefix', key };
      } else if (later || after!.startsWith(key)) {
        yield* walk(w, { folder: e.folder, place: e.place }, key, '', after);
      }
    }
    if (!page.more || page.last === null) return;
    bound = page.last;
  }
}

export interface Listing {
  items: Item[];
  truncated: boolean;
}

/** One page of keys and common prefixes after `after`, in S3's order; `max` 0 answers an empty page, not truncated, as S3 does. */
export async function list(r: S3Request, prefix: string, delimiter: string, after: string | null, afterIsPrefix: boolean, max: number): Promise<Listing & { bucket: string }> {
  const bucket = await requireBucket(r.service, r.caller, r.bucket!);
  if (max === 0) return { bucket: bucket.name, items: [], truncated: false };
  const out: Item[] = [];
  const folders = prefix.split('/');
  const partial = folders.pop()!;
  const at = await r.service.paths.locate(bucket.sight, [bucket.name, ...folders]);
  if (!at) return { bucket: bucket.name, items: [], truncated: false };
  const base = folders.map((f) => `${f}/`).join('');
  const w: Walk = { r, sight: bucket.sight, foldersArePrefixes: delimiter === '/' };
  let lastPrefix: string | null = null;
  for await (const item of walk(w, at, base, partial, after)) {
    let next: Item = item;
    if (delimiter !== '' && delimiter !== '/') {
      const cut = item.key.indexOf(delimiter, prefix.length);
      if (cut >= 0) {
        const common = item.key.slice(0, cut + delimiter.length);
        // Keys under a common prefix already answered stay in it.
        if (common === lastPrefix || (afterIsPrefix && common === after)) continue;
        next = { kind: 'prefix', key: common };
        lastPrefix = common;
      }
    }
    out.push(next);
    if (out.length > max) break;
  }
  return { bucket: bucket.name, items: out.slice(0, max), truncated: out.length > max };
}

/** encoding-type=url: the fields S3 encodes go through this (keys' bytes percent-encoded, "/" kept). */
export const encoder = (r: S3Request): ((text: string) => string) => {
  const type = r.query.get('encoding-type');
  if (type !== undefined && type !== 'url') throw s3Errors.invalidArgument('Invalid Encoding Method specified in Request', 'encoding-type', type);
  return type === 'url' ? (t) => uriEncode(t, true) : (t) => t;
};

function entries(listing: Listing, encode: (t: string) => string, owner: XmlFields | null): XmlFields {
  const fields: XmlFields = [];
  for (const item of listing.items) {
    if (item.kind === 'object') {
      fields.push(['Contents', [
        ['Key', encode(item.key)], ['LastModified', isoTime(item.file.completed_at ?? item.file.updated_at)], ['ETag', quoted(etagOf(item.file))],
        ['Size', item.file.size], ['StorageClass', 'STANDARD'], ['Owner', owner],
      ]]);
    }
  }
  for (const item of listing.items) if (item.kind === 'prefix') fields.push(['CommonPrefixes', [['Prefix', encode(item.key)]]]);
  return fields;
}

const tokenOf = (item: Item): string => Buffer.from(JSON.stringify({ k: item.key, p: item.kind === 'prefix' })).toString('base64url');

function fromToken(token: string): { key: string; isPrefix: boolean } {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { k?: unknown; p?: unknown };
    if (typeof parsed.k === 'string' && typeof parsed.p === 'boolean') return { key: parsed.k, isPrefix: parsed.p };
  } catch {
    // Answered below.
  }
  throw s3Errors.invalidArgument('The continuation token provided is incorrect.', 'continuation-token', token);
}

export const listObjectsV2: S3Handler = async (r) => {
  await noBody(r);
  const encode = encoder(r);
  const prefix = r.query.get('prefix') ?? '';
  const delimiter = r.query.get('delimiter') ?? '';
  const max = intParam(r, 'max-keys', 1000, 0, 1000);
  const token = r.query.get('continuation-token');
  const startAfter = r.query.get('start-after');
  const from = token !== undefined ? fromToken(token) : startAfter ? { key: startAfter, isPrefix: false } : null;
  const listing = await list(r, prefix, delimiter, from?.key ?? null, from?.isPrefix ?? false, max);
  const owner = r.query.get('fetch-owner') === 'true' ? ownerOf(r.caller) : null;
  const last = listing.items[listing.items.length - 1];
  return xmlAnswer('ListBucketResult', [
    ['Name', listing.bucket], ['Prefix', encode(prefix)], ['Delimiter', delimiter === '' ? null : encode(delimiter)], ['MaxKeys', max],
    ['EncodingType', r.query.get('encoding-type')], ['KeyCount', listing.items.length], ['IsTruncated', listing.truncated],
    ['ContinuationToken', token], ['NextContinuationToken', listing.truncated && last ? tokenOf(last) : null],
    ['StartAfter', startAfter !== undefined ? encode(startAfter) : null],
    ...entries(listing, encode, owner),
  ]);
};

export const listObjectsV1: S3Handler = async (r) => {
  await noBody(r);
  const encode = encoder(r);
  const prefix = r.query.get('prefix') ?? '';
  const delimiter = r.query.get('delimiter') ?? '';
  const max = intParam(r, 'max-keys', 1000, 0, 1000);
  const marker = r.query.get('marker') ?? '';
  // A marker that is a common prefix this listing answered stands for all of its keys.
  const markerIsPrefix = delimiter !== '' && marker.endsWith(delimiter);
  const listing = await list(r, prefix, delimiter, marker === '' ? null : marker, markerIsPrefix, max);
  const last = listing.items[listing.items.length - 1];
  return xmlAnswer('ListBucketResult', [
    ['Name', listing.bucket], ['Prefix', encode(prefix)], ['Marker', encode(marker)], ['MaxKeys', max],
    ['Delimiter', delimiter === '' ? null : encode(delimiter)], ['EncodingType', r.query.get('encoding-type')], ['IsTruncated', listing.truncated],
    ['NextMarker', listing.truncated && delimiter !== '' && last ? encode(last.key) : null],
    ...entries(listing, encode, ownerOf(r.caller)),
  ]);
};
