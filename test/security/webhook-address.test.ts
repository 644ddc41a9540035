/**
 * The webhook address filter (issue 23, finding 8): every spelling of a loopback, private or
 * reserved address inside IPv6 is refused (IPv4-compatible, IPv4-mapped, the SIIT block,
 * 6to4, NAT64, Teredo), when the URL is given and again at connection time.
 */
import { describe, expect, test } from 'vitest';
import { checkReceiverUrl, guardedLookup, isSpecialAddress } from '../../src/service/url-guard.js';

/** Addresses as URLs write them (the URL parser turns `[::127.0.0.1]` into `[::7f00:1]`). */
const REFUSED_URLS = [
  'http://[::7f00:1]/h', 'http://[::127.0.0.1]/h', 'http://[::ffff:0:7f00:1]/h', 'http://[::ffff:127.0.0.1]/h', 'http://[::ffff:7f00:1]/h',
  'http://[::a9fe:a9fe]/h', 'http://[::0a00:1]/h', 'http://[::8.8.8.8]/h',
  'http://[2002:7f00:1::]/h', 'http://[2002:a9fe:a9fe::1]/h', 'http://[2002:808:808::1]/h',
  'http://[64:ff9b::7f00:1]/h', 'http://[64:ff9b::a9fe:a9fe]/h', 'http://[64:ff9b:1::7f00:1]/h', 'http://[64:ff9b:1:ffff::1]/h',
  'http://[2001::1]/h', 'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/h',
  'http://[::]/h', 'http://[::1]/h', 'http://[fe80::1]/h', 'http://[fd00::1]/h', 'http://[ff02::1]/h', 'http://[2001:db8::1]/h', 'http://[100::1]/h',
  'http://127.0.0.1/h', 'http://0x7f.1/h', 'http://2130706433/h', 'http://10.0.0.1/h', 'http://100.64.0.1/h', 'http://169.254.169.254/h',
  'http://192.0.2.1/h', 'http://198.18.0.1/h', 'http://224.0.0.1/h', 'http://255.255.255.255/h', 'http://0.0.0.0/h',
];

describe('special addresses', () => {
  test('every IPv4-embedding IPv6 form and every special block is refused', () => {
    for (const a of ['::7f00:1', '::127.0.0.1', '::ffff:0:7f00:1', '::ffff:0:127.0.0.1', '::ffff:127.0.0.1', '::ffff:7f00:1', '2002::', '2002:7f00:1::1',
      '64:ff9b::7f00:1', '64:ff9b::8.8.8.8', '64:ff9b:1::1', '2001::1', '2001:0:ffff:ffff::1', '::', '::1', 'fe80::1', 'fe80::1%eth0', 'fd12::1',
      '127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '255.255.255.255', '240.0.0.1']) {
      expect(isSpecialAddress(a), a).toBe(true);
    }
    for (const a of ['not an address', '', '1.2.3', '::g']) expect(isSpecialAddress(a), a).toBe(true);
  });

  test('public addresses pass', () => {
    for (const a of ['8.8.8.8', '93.184.216.34', '1.1.1.1', '2606:4700::1111', '2a00:1450:4001:82a::200e', '::ffff:8.8.8.8']) {
      expect(isSpecialAddress(a), a).toBe(false);
    }
  });

  test('a receiver URL at any such address is refused at creation', async () => {
    for (const url of REFUSED_URLS) {
      await expect(checkReceiverUrl(url, false), url).rejects.toMatchObject({ status: 400, code: 'invalid_url' });
    }
    await expect(checkReceiverUrl('http://[2606:4700::1111]/h', false)).resolves.toBe('http://[2606:4700::1111]/h');
    await expect(checkReceiverUrl('http://8.8.8.8/h', false)).resolves.toBe('http://8.8.8.8/h');
    // Tests and private networks opt in.
    await expect(checkReceiverUrl('http://[::7f00:1]/h', true)).resolves.toBe('http://[::7f00:1]/h');
  });

  test('a name resolving to a special address is refused at connection time', async () => {
    const lookup = guardedLookup(false);
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => lookup('localhost', {}, (e) => resolve(e)));
    expect(err?.code).toBe('EADDRNOTPUBLIC');
    const allowed = guardedLookup(true);
    const ok = await new Promise<string>((resolve, reject) => allowed('localhost', {}, (e, address) => (e ? reject(e) : resolve(address as string))));
    expect(isSpecialAddress(ok)).toBe(true);
  });
});
