/**
 * How sizes, times and names are shown: one unit base (binary) for every size, relative
 * times with the exact one on hover, and long names shortened in the middle.
 */

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** Bytes in binary units: `512 B`, `1.5 KiB`, `7 MiB`, `20.3 GiB`. */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '—';
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const text = value >= 100 ? String(Math.round(value)) : value.toFixed(1).replace(/\.0$/, '');
  // 1023.96 KiB rounds to "1024 KiB": say "1 MiB" instead.
  if (text === '1024' && unit < UNITS.length - 1) return `1 ${UNITS[unit + 1]}`;
  return `${text} ${UNITS[unit]}`;
}

/** The exact count of bytes, grouped: `7,340,032 bytes`. */
export function formatBytesExact(bytes: number): string {
  return `${bytes.toLocaleString('en-US')} ${bytes === 1 ? 'byte' : 'bytes'}`;
}

const exactFormat = new Intl.DateTimeFormat(undefined, {
  weekday: 'short', year: 'numeric', month: 'short', day: 'numeric',
  hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
});
const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const dayYearFormat = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' });

const exactCache = new Map<string | number, string>();

/** The exact local date and time, with seconds and zone: for titles and labels. */
export function formatExact(iso: string | number | Date): string {
  const key = iso instanceof Date ? iso.getTime() : iso;
  const hit = exactCache.get(key);
  if (hit !== undefined) return hit;
  const d = new Date(iso);
  const text = Number.isNaN(d.getTime()) ? String(iso) : exactFormat.format(d);
  if (exactCache.size > 20_000) exactCache.clear();
  exactCache.set(key, text);
  return text;
}

/** "just now", "3 min ago", "5 h ago", "yesterday", "4 days ago", then the date. */
export function formatRelative(iso: string | number | Date, now: number = Date.now()): string {
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return String(iso);
  const diff = now - t;
  const future = diff < 0;
  const s = Math.abs(diff) / 1000;
  // A clock a little ahead of this one still says "just now".
  if (s < 45 || (future && s < 600)) return 'just now';
  const say = (n: number, unit: string) => (future ? `in ${n} ${unit}` : `${n} ${unit} ago`);
  if (s < 60 * 60) return say(Math.max(1, Math.round(s / 60)), 'min');
  if (s < 24 * 60 * 60) return say(Math.round(s / 3600), 'h');
  const days = Math.round(s / 86400);
  if (days === 1) return future ? 'tomorrow' : 'yesterday';
  if (days < 7) return say(days, 'days');
  const d = new Date(t);
  return d.getFullYear() === new Date(now).getFullYear() ? dayFormat.format(d) : dayYearFormat.format(d);
}

/** A duration in words: "15 min", "1 h", "1 day", "2 h 30 min". */
export function formatDuration(seconds: number): string {
  if (seconds >= 86400 && seconds % 86400 === 0) return seconds === 86400 ? '1 day' : `${seconds / 86400} days`;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = Math.floor(seconds % 60);
  const parts: string[] = [];
  if (h) parts.push(`${h} h`);
  if (m) parts.push(`${m} min`);
  if (s && !h) parts.push(`${s} s`);
  return parts.join(' ') || '0 s';
}

/** Seconds left, roughly: "12 s left", "3 min left", "1 h 5 min left". */
export function formatEta(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '';
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s left`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min left`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min left`;
}

/** Shortens a name in the middle, keeping its end (the extension): `holiday-pho…2026.jpg`. */
export function middleEllipsis(name: string, max = 48): string {
  const chars = Array.from(name);
  if (chars.length <= max) return name;
  const tail = Math.min(Math.max(8, chars.length - name.lastIndexOf('.')), Math.floor(max / 2));
  const head = max - tail - 1;
  return chars.slice(0, head).join('') + '…' + chars.slice(chars.length - tail).join('');
}

/**
 * Splits a name so CSS can shorten it in the middle: the head shrinks with an ellipsis,
 * the tail (the last characters, with the extension) always shows.
 */
export function splitName(name: string): [head: string, tail: string] {
  const chars = Array.from(name);
  if (chars.length <= 12) return [name, ''];
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && name.length - dot <= 8 ? Array.from(name.slice(dot)).length : 0;
  const tail = ext ? Math.min(ext + 3, 10) : 4;
  return [chars.slice(0, chars.length - tail).join(''), chars.slice(chars.length - tail).join('')];
}

export const plural = (n: number, one: string, many = one + 's'): string => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** What a service failure says: its own message; never a blank or a stack. */
export function errorMessage(err: unknown): string {
  if (err && typeof err === 'object' && 'message' in err) {
    const m = (err as { message: unknown }).message;
    if (typeof m === 'string' && m.trim()) return m;
  }
  if (typeof err === 'string' && err.trim()) return err;
  return 'Something went wrong. Try again.';
}

export const TYPE_LABELS: Record<string, string> = {
  image: 'Image', video: 'Video', document: 'Document', audio: 'Audio', archive: 'Archive', other: 'Other',
};
