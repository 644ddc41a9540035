/** Comparing presented credentials with the configured ones, in constant time. */
import { createHash, timingSafeEqual } from 'node:crypto';
import { errors } from '../../core/errors.js';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * Compares two secrets in constant time: both sides are hashed first, so neither their
 * contents nor their lengths shape the timing.
 */
export const secretsEqual = (given: string, expected: string): boolean => timingSafeEqual(digest(given), digest(expected));

/** Whether a candidate is the access key, in constant time. */
export function keyMatcher(accessKey: string): (candidate: string) => boolean {
  const expected = digest(accessKey);
  return (candidate) => timingSafeEqual(digest(candidate), expected);
}

/** The credential of "Authorization: Bearer <credential>", or null when the header has another shape. */
export function bearerOf(header: string): string | null {
  const match = /^Bearer ([\x21-\x7e]+)$/i.exec(header.trim());
  return match ? match[1]! : null;
}

/** Checks an edge's Authorization header against every edge token currently valid (rotation). */
export function edgeTokenChecker(tokens: string[]): (header: string | undefined) => void {
  const expected = tokens.map(digest);
  return (header) => {
    const token = header ? bearerOf(header) : null;
    if (token === null) throw errors.unauthorized('Edges send "Authorization: Bearer <EDGE_TOKEN>".');
    const given = digest(token);
    let ok = false;
    // Every token is compared, so the timing does not say which one matched.
    for (const e of expected) ok = timingSafeEqual(given, e) || ok;
    if (!ok) throw errors.unauthorized('The edge token is not valid.');
  };
}
