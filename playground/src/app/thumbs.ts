/**
 * Image thumbnails: variants the edge makes (contract §13), `w` pixels wide in the best
 * format the browser takes, never the whole original. Public images through their delivery
 * URL with the parameters added, Private ones through a short-lived signed link that signs
 * them, kept until shortly before it expires. Links are made only for cards in view, a few
 * at a time. Images the edge makes no variants of are shown as they are.
 */
import type { FileRecord } from '../../../src/sdk/index.js';
import { sourceFormat } from '../../../src/core/variants.js';
import { client } from '../api.js';

/** The grid's thumbnails: wide enough for a card on a high-density screen. */
export const GRID_THUMB_WIDTH = 320;

/** A details view shows the image at the size of the screen it is on. */
export function screenWidth(): number {
  const side = Math.max(window.screen.width, window.screen.height) * (window.devicePixelRatio || 1);
  return Math.min(4096, Math.max(GRID_THUMB_WIDTH, Math.round(side)));
}

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

/** The cache key: a new visibility, a new version or another size is a new thumbnail. */
const keyOf = (f: FileRecord, width: number) => `${f.file_id}|${f.effective_visibility}|${f.updated_at}|${width}`;

/** The variant to ask for, or null to show the original. */
const variantOf = (f: FileRecord, width: number) => (sourceFormat(f.content_type) ? { w: width, format: 'webp' as const } : null);

/** A URL for an image thumbnail synchronously, when one is known and fresh. */
export function cachedThumb(f: FileRecord, width = GRID_THUMB_WIDTH): string | null {
  if (f.effective_visibility === 'Public') {
    const variant = variantOf(f, width);
    // preview=1: the Playground's own thumbnails are not downloads in usage.
    return variant ? `${f.delivery_url}?w=${variant.w}&format=${variant.format}&preview=1` : `${f.delivery_url}?preview=1`;
  }
  const hit = cache.get(keyOf(f, width));
  return hit && hit.until > Date.now() ? hit.url : null;
}

/** A URL for an image thumbnail, making a short-lived link for a Private file. */
export function thumbUrl(f: FileRecord, width = GRID_THUMB_WIDTH): Promise<string | null> {
  const known = cachedThumb(f, width);
  if (known || f.status !== 'ready') return Promise.resolve(known);
  const key = keyOf(f, width);
  const inFlight = pending.get(key);
  if (inFlight) return inFlight;
  const variant = variantOf(f, width);
  const p = slot(() => client.createLink({ file_id: f.file_id, file_type: f.file_type, expiry: LINK_SECONDS, preview: true, ...(variant ? { variant } : {}) }))
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
