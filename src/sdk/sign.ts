/**
 * Signing links offline (contract §6) with Web Crypto, so any server or worker holding
 * the signing secret makes the same links as the origin's create-link, without a call.
 */
import { clientError } from '../core/errors.js';
import { MAX_EXPIRY_SECONDS, parseQuery, signPathAsync } from '../core/signing.js';
import { variantQuery, type VariantParams } from '../core/variants.js';

export interface SignLinkOptions {
  /** Seconds the link stays valid: 1–86400, as create-link allows. */
  expiresIn: number;
  /** The signing secret; a comma-separated list signs with its first entry, as the service does. */
  secret: string;
  /** Adds `download=1`, signed along, so browsers save the file under its name. */
  download?: boolean;
  /**
   * An image variant (contract §13): `w`, `h`, `fit`, `format`, `q`, signed along, so the
   * link serves that variant of the image and no other.
   */
  variant?: VariantParams;
  /** Unix seconds to count from (default: now). */
  now?: number;
  /** Unix milliseconds written as X-Issued (default: `now` × 1000, else the current time); revocation compares it. */
  issuedAt?: number;
}

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = globalThis.crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    keys.set(secret, key);
  }
  return key;
}

async function hmacSha256(secret: string, message: string): Promise<Uint8Array> {
  return new Uint8Array(await globalThis.crypto.subtle.sign('HMAC', await hmacKey(secret), encoder.encode(message)));
}

const invalid = (message: string) => clientError('invalid_argument', message);

/**
 * Signs a delivery path (`/files/{id}`) or a whole delivery URL (`{cdn_url}/files/{id}`,
 * such as a file record's `delivery_url`). Answers the same form it was given, with
 * `X-Expires` and `X-Sig` added.
 */
export async function signLink(pathOrUrl: string, opts: SignLinkOptions): Promise<string> {
  const secret = opts.secret.split(',')[0]!.trim();
  if (secret === '') throw invalid('signLink needs the signing secret (COFFER_SIGNING_SECRET).');
  if (!Number.isInteger(opts.expiresIn) || opts.expiresIn < 1 || opts.expiresIn > MAX_EXPIRY_SECONDS) {
    throw invalid(`"expiresIn" must be a whole number of seconds from 1 to ${MAX_EXPIRY_SECONDS}.`);
  }
  const absolute = /^https?:\/\//i.test(pathOrUrl);
  const url = new URL(pathOrUrl, 'http://coffer.invalid');
  if (!absolute && !pathOrUrl.startsWith('/')) throw invalid('signLink takes a path starting with "/" or an http(s) URL.');
  const params: Record<string, string> = {};
  for (const [name, value] of parseQuery(url.search.slice(1)) ?? []) {
    if (name !== 'X-Sig' && name !== 'X-Expires' && name !== 'X-Issued') params[name] = value;
  }
  if (opts.download) params.download = '1';
  if (opts.variant) {
    const checked = variantQuery({ ...opts.variant });
    if ('problem' in checked) throw invalid(checked.problem.message);
    Object.assign(params, checked.query);
  }
  // The path is signed exactly as it appears in the URL. In a whole URL only the delivery
  // path is signed: the origin signs `/files/{id}` and puts `{cdn_url}` in front, so a
  // `{cdn_url}` with a path of its own (a proxy's prefix) is left out of the signature.
  const fullPath = absolute ? url.pathname : pathOrUrl.split('?')[0]!;
  const at = absolute ? fullPath.lastIndexOf('/files/') : -1;
  const prefix = at > 0 ? fullPath.slice(0, at) : '';
  const path = fullPath.slice(prefix.length);
  const signed = await signPathAsync(path, secret, { expiresIn: opts.expiresIn, params, ...(opts.now !== undefined ? { now: opts.now } : {}), ...(opts.issuedAt !== undefined ? { issuedAtMs: opts.issuedAt } : {}) }, hmacSha256);
  return absolute ? `${url.origin}${prefix}${signed.pathAndQuery}` : signed.pathAndQuery;
}
