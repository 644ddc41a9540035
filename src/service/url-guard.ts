/**
 * Where the origin may send requests a user chose (webhook receivers): http(s) only, and
 * never to loopback, private, link-local or other special addresses unless allowed. The
 * address is checked when the URL is given and again at every connection (a name can
 * resolve elsewhere later).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { errors } from '../core/errors.js';

/**
 * The IPv4-compatible block (::/96, RFC 4291, deprecated): ipaddr.js calls it unicast, yet its
 * low 32 bits are an IPv4 address (`[::127.0.0.1]` is written `[::7f00:1]`). Nothing public
 * lives there: refused whole, whatever it embeds.
 */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * Whether an address is one a receiver chosen by a user may not be at: anything ipaddr.js
 * does not call `unicast` (after unwrapping ::ffff:a.b.c.d), which takes in every block that
 * carries an IPv4 address inside IPv6 (6to4, Teredo, NAT64, ::ffff:0:0/96), and the
 * IPv4-compatible block. What does not parse is refused.
 */
export function isSpecialAddress(address: string): boolean {
  if (!isIP(address)) return true;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return true;
  }
  if (parsed.range() !== 'unicast') return true;
  return parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).match(IPV4_COMPATIBLE);
}

const resolveAll = (host: string): Promise<LookupAddress[]> =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** Checks a receiver URL as given; returns it normalised. Throws 400 `invalid_url`. */
export async function checkReceiverUrl(raw: string, allowPrivate: boolean): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.invalidField('invalid_url', 'url', '"url" must be an absolute http:// or https:// URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw errors.invalidField('invalid_url', 'url', '"url" must use http:// or https://.');
  if (url.username || url.password) throw errors.invalidField('invalid_url', 'url', '"url" must not carry a user name or password.');
  if (raw.length > 2048) throw errors.invalidField('invalid_url', 'url', '"url" is longer than 2048 characters.');
  if (!allowPrivate) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let addresses: string[];
    try {
      addresses = isIP(host) ? [host] : (await resolveAll(host)).map((a) => a.address);
    } catch {
      throw errors.invalidField('invalid_url', 'url', `"${url.hostname}" does not resolve.`);
    }
    if (addresses.length === 0 || addresses.some(isSpecialAddress)) {
      throw errors.invalidField('invalid_url', 'url', `"${url.hostname}" is a loopback, private or reserved address; receivers must be public (COFFER_WEBHOOK_ALLOW_PRIVATE=1 allows others).`);
    }
  }
  return url.toString();
}

/** A `lookup` for http.request that refuses special addresses at connection time. */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: object, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = addresses as LookupAddress[];
      if (!allowPrivate && (list.length === 0 || list.some((a) => isSpecialAddress(a.address)))) {
        return callback(Object.assign(new Error(`refused: ${hostname} resolves to a non-public address`), { code: 'EADDRNOTPUBLIC' }), []);
      }
      if ((options as { all?: boolean }).all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
