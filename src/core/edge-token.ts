import { bytesToBase64Url } from './ids.js';
import type { HmacSha256 } from './signing.js';

/** The label an edge's credential is derived from: never the access key. */
export const EDGE_TOKEN_LABEL = 'coffer-edge';

/** An edge's credential for the origin's feed: HMAC-SHA256 of a fixed label under a signing secret. */
export const deriveEdgeToken = (secret: string, hmac: HmacSha256): string => bytesToBase64Url(hmac(secret, EDGE_TOKEN_LABEL));
