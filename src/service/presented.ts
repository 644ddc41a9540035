/**
 * Judging a key or upload grant a caller presents (contract §10): its secret against the
 * stored SHA-256 in constant time, and, when it no longer works, why, in words for its holder.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Standing } from './lineage.js';

/** Whether a secret hashes to a stored SHA-256 (hex), in constant time. */
export function hashMatches(secret: string, storedHex: string): boolean {
  const stored = Buffer.from(storedHex, 'hex');
  return stored.length === 32 && timingSafeEqual(createHash('sha256').update(secret).digest(), stored);
}

/** Why a key or grant that does not work is refused. */
export function refusal(standing: Exclude<Standing, { ok: true }>, what: 'key' | 'upload grant'): string {
  if (standing.own && standing.reason === 'revoked') return `This ${what} was revoked.`;
  if (standing.own) return what === 'key' ? 'This key has expired.' : 'The upload grant has expired; ask the application for a new one.';
  if (standing.reason === 'rotated') return 'The root key that made this upload grant has been replaced; ask the application for a new one.';
  return `The key that made this ${what} (or a key above it) was revoked or has expired: it no longer works.`;
}
