/**
 * A stored file name is data chosen by whoever uploaded it, not a path: `coffer download`
 * turns it into one plain file name that stays inside the target directory on every
 * system (no separators, no drive letters, no `.`/`..`, no device names, bounded length).
 */
import { basename, dirname, join, resolve } from 'node:path';

/** Room left under the usual 255-byte limit for `.coffer-part-<pid>` while downloading. */
export const MAX_NAME_BYTES = 200;

// Separators on any system, a drive or stream colon, what Windows refuses in names, and
// characters a terminal or a reader could be fooled by (controls, bidirectional overrides).
const UNSAFE = /[/\\:*?"<>|\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)\s*(\..*)?$/i;

/** Cuts `text` to at most `bytes` bytes of UTF-8 without splitting a character. */
function cutBytes(text: string, bytes: number): string {
  let out = '';
  let used = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch, 'utf8');
    if (used + size > bytes) break;
    out += ch;
    used += size;
  }
  return out;
}

/**
 * The name to save a file under: every unsafe character becomes `_`; leading dots,
 * spaces and `~` go (no hidden files, no `..`, nothing a shell expands); trailing dots and
 * spaces go (Windows drops them); a device name gets a `_` in front; the length is capped,
 * keeping a short extension. A name with nothing left becomes `fallback` (the file id).
 */
export function safeFileName(stored: string, fallback: string): string {
  let name = stored.normalize('NFC').replace(UNSAFE, '_');
  name = name.replace(/^[.\s~]+/u, '').replace(/[.\s]+$/u, '');
  if (name === '') name = fallback.replace(UNSAFE, '_').replace(/^[.\s~]+/u, '') || 'download';
  if (WINDOWS_DEVICE.test(name)) name = `_${name}`;
  if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) {
    const dot = name.lastIndexOf('.');
    const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
    name = cutBytes(name.slice(0, name.length - ext.length), MAX_NAME_BYTES - Buffer.byteLength(ext, 'utf8')).replace(/[.\s]+$/u, '') + ext;
  }
  return name;
}

/**
 * Where a download lands inside `dir`: `dir` joined with the safe name, checked once more
 * to resolve to a direct child of `dir` (the check a future change to the rules cannot skip).
 */
export function pathInside(dir: string, stored: string, fallback: string): string {
  const name = safeFileName(stored, fallback);
  const target = join(dir, name);
  const resolved = resolve(target);
  if (dirname(resolved) !== resolve(dir) || basename(resolved) !== name) {
    throw new Error(`Refusing to save "${name}" outside ${resolve(dir)}.`);
  }
  return target;
}
