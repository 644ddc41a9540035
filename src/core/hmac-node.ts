import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { HmacSha256 } from './signing.js';

// Importing a key once per secret, not once per request.
const keys = new Map<string, KeyObject>();
function keyFor(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    if (keys.size > 64) keys.clear();
    keys.set(secret, key);
  }
  return key;
}

/** Node's synchronous HMAC, for the origin and the edge's hot path. */
export const nodeHmac: HmacSha256 = (secret, message) => createHmac('sha256', keyFor(secret)).update(message).digest();
