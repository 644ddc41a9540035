/**
 * Who sends an S3 request: the key its SigV4 signature names (contract §12), found through the
 * service and read on every request, so a revoked key fails at once. The origin's
 * authentication hook calls this for routes declared `s3`; the route then reads what the
 * signature covers (the chunk-signing key, the payload mode) with `verifiedOf`.
 */
import type { IncomingMessage } from 'node:http';
import type { Caller } from '../core/access.js';
import type { CofferService } from '../service/service.js';
import { verifyRequest, type Verified } from './sigv4.js';

const verified = new WeakMap<IncomingMessage, Verified>();

/** The request target without an absolute form's scheme and host: what clients sign. */
export function targetOf(raw: IncomingMessage): string {
  const url = raw.url ?? '/';
  const absolute = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/.exec(url);
  const rest = absolute ? url.slice(absolute[0].length) : url;
  return rest.startsWith('/') ? rest : `/${rest}`;
}

export function s3Authenticator(service: Pick<CofferService, 'credentials'>, now: () => number = Date.now): (raw: IncomingMessage) => Promise<Caller> {
  return async (raw) => {
    const v = await verifyRequest({ method: raw.method ?? 'GET', url: targetOf(raw), rawHeaders: raw.rawHeaders }, (id) => service.credentials.s3Credential(id), now());
    verified.set(raw, v);
    return v.caller;
  };
}

/** What the signature of this request established; only routes declared `s3` have it. */
export function verifiedOf(raw: IncomingMessage): Verified {
  const v = verified.get(raw);
  if (!v) throw new Error('an S3 route ran without its signature checked');
  return v;
}
