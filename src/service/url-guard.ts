/**
 * Where the origin may send requests a user chose (webhook receivers): http(s) only, and
 * never to loopback, private, link-local or other special addresses unless allowed. The
 * address is checked when the URL is given and again at every connection (a name can
 * resolve elsewhere later).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { errors } from '../core/errors.js';

const SPECIAL = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) SPECIAL.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2001:db8::', 32], ['100::', 64]] as const) {
  SPECIAL.addSubnet(net, bits, 'ipv6');
}

/** Whether an address is one a receiver chosen by a user may not be at. */
export function isSpecialAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return SPECIAL.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return SPECIAL.check(mapped[1]!, 'ipv4');
  return SPECIAL.check(address, 'ipv6');
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
