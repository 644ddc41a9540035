import { createHmac } from 'node:crypto';
import type { HmacSha256 } from './signing.js';

/** Node's synchronous HMAC, for the origin and the edge's hot path. */
export const nodeHmac: HmacSha256 = (secret, message) => createHmac('sha256', secret).update(message).digest();
