/** Sizes and durations as people type them on a command line: "10MB", "5MiB", "15m", "7d". */

const SIZE_UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4,
};

/**
 * Bytes from "1048576", "10MB" (decimal) or "5MiB" (binary), in any letter case, with or
 * without a space. Null when the text is none of these or is not a whole number of bytes.
 */
export function parseSize(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  if (!m) return null;
  const unit = SIZE_UNITS[(m[2] || 'b').toLowerCase()];
  if (unit === undefined) return null;
  const bytes = Number(m[1]) * unit;
  // 1.5MB is 1500000 bytes; 0.1KiB is no whole number of bytes.
  const rounded = Math.round(bytes);
  if (Math.abs(bytes - rounded) > 1e-6 * Math.max(1, bytes) || !Number.isSafeInteger(rounded)) return null;
  return rounded;
}

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Seconds from "3600", "90s", "15m", "12h" or "7d". Null for anything else. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+)\s*([smhd]?)$/i.exec(text.trim());
  if (!m) return null;
  const seconds = Number(m[1]) * DURATION_UNITS[(m[2] || 's').toLowerCase()]!;
  return Number.isSafeInteger(seconds) ? seconds : null;
}

/** "in 59m", "in 3d 4h", "expired": how far a time is from now, roughly. */
export function untilText(iso: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  if (!Number.isFinite(seconds)) return '';
  if (seconds <= 0) return 'expired';
  if (seconds < 120) return `in ${seconds}s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) return `in ${minutes}m`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `in ${hours}h`;
  return `in ${Math.floor(hours / 24)}d${hours % 24 ? ` ${hours % 24}h` : ''}`;
}
