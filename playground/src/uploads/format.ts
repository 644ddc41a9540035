/** How the upload panel writes sizes, speeds and times: the Playground's own formats. */
import { formatEta, formatSize } from '../app/format.js';

export { splitName } from '../app/format.js';
export const formatBytes = formatSize;

/** `850 KiB/s`, `12.5 MiB/s`; empty until there is a measure. */
export const formatSpeed = (bytesPerSecond: number): string => (bytesPerSecond > 0 ? `${formatSize(bytesPerSecond)}/s` : '');

/** `8 s left`, `3 min left`, `1 h 5 min left`; empty when unknown. */
export const formatTimeLeft = (seconds: number | null): string => (seconds !== null && seconds >= 0 ? formatEta(seconds) : '');

/** Whole percent, 100 only once every byte is there. */
export function percent(loaded: number, size: number): number {
  if (size <= 0) return loaded >= size ? 100 : 0;
  const p = Math.floor((loaded / size) * 100);
  return Math.max(0, Math.min(loaded >= size ? 100 : 99, p));
}
