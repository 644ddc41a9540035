import { createHash, timingSafeEqual } from 'node:crypto';
import { errors } from '../core/errors.js';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * Checks an Authorization header against the access key in constant time: both sides
 * are hashed first, so neither their contents nor their lengths shape the timing.
 */
export function bearerChecker(accessKey: string): (header: string | undefined) => void {
  const expected = digest(accessKey);
  return (header) => {
    if (header === undefined || header === '') throw errors.unauthorized();
    const match = /^Bearer ([\x21-\x7e]+)$/i.exec(header.trim());
    if (!match) throw errors.unauthorized('The Authorization header must be "Bearer <ACCESS_KEY>".');
    if (!timingSafeEqual(digest(match[1]!), expected)) throw errors.unauthorized('The access key is not valid.');
  };
}
