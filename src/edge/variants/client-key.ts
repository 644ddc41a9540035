/**
 * The client a transform is counted against: its IPv4 address, or the /64 network of its
 * IPv6 address, since one host is commonly given a whole /64 and could otherwise speak from
 * as many addresses as it likes. An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) is the
 * IPv4 address.
 */
import net from 'node:net';

/** The eight groups of an IPv6 address, `::` expanded; null when it is not one. */
function groups(address: string): string[] | null {
  const [head = '', tail] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  // A dotted IPv4 tail stands for two groups.
  const dotted = address.includes('.') ? 1 : 0;
  const missing = 8 - left.length - right.length - dotted;
  if (missing < 0 || (tail === undefined && missing !== 0)) return null;
  return [...left, ...Array<string>(missing).fill('0'), ...right];
}

export function clientKey(address: string | undefined): string {
  if (!address) return '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!net.isIPv6(address)) return address;
  const g = groups(address.split('%', 1)[0]!);
  return g ? `${g.slice(0, 4).map((x) => parseInt(x, 16).toString(16)).join(':')}::/64` : address;
}
