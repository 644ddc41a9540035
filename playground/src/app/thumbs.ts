/**
 * Image thumbnails: Public images through their delivery URL, Private ones through a
 * short-lived signed link, kept until shortly before it expires. Links are made only for
 * cards in view, a few at a time.
 */
import type { FileRecord } from '../../../src/sdk/index.js';
import { client } from '../api.js';

const LINK_SECONDS = 300;
const MARGIN_MS = 60_000;
const PARALLEL = 4;

interface Cached { url: string; until: number }
const cache = new Map<string, Cached>();
const pending = new Map<string, Promise<string | null>>();
const queue: (() => void)[] = [];
let running = 0;

function slot<T>(task: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const run = () => {
      running++;
      task().then(resolve, reject).finally(() => {
        running--;
        queue.shift()?.();
      });
    };
    if (running < PARALLEL) run();
    else queue.push(run);
  });
}

/** The cache key: a new visibility or a new version is a new thumbnail. */
const keyOf = (f: FileRecord) => `${f.file_id}|${f.effective_visibility}|${f.updated_at}`;

/** A URL for an image thumbnail synchronously, when one is known and fresh. */
export function cachedThumb(f: FileRecord): string | null {
  if (f.effective_visibility === 'Public') return f.delivery_url;
  const hit = cache.get(keyOf(f));
  return hit && hit.until > Date.now() ? hit.url : null;
}

/** A URL for an image thumbnail, making a short-lived link for a Private file. */
export function thumbUrl(f: FileRecord): Promise<string | null> {
  const known = cachedThumb(f);
  if (known || f.status !== 'ready') return Promise.resolve(known);
  const key = keyOf(f);
  const inFlight = pending.get(key);
  if (inFlight) return inFlight;
  const p = slot(() => client.createLink({ file_id: f.file_id, file_type: f.file_type, expiry: LINK_SECONDS }))
    .then((link) => {
      cache.set(key, { url: link.presigned_url, until: Date.parse(link.expires_at) - MARGIN_MS });
      return link.presigned_url;
    })
    .catch(() => null)
    .finally(() => pending.delete(key));
  pending.set(key, p);
  return p;
}

/** Forget a file's links (they were revoked): the next thumbnail makes a new one. */
export function forgetThumb(fileId: string): void {
  for (const key of cache.keys()) if (key.startsWith(`${fileId}|`)) cache.delete(key);
}

/** Forget everything (sign-out). */
export function clearThumbs(): void {
  cache.clear();
}
