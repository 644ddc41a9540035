/**
 * The rule every listener of the service holds (origin, S3, edge): headers within one
 * timeout, no idle stretch past another, and at most so many connections at once from one
 * client address and in all. A socket past a cap is closed as it comes, before anything is
 * read from it, so a flood costs the flooder its sockets, not the process its descriptors.
 */
import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionCaps {
  /** Connections the listener holds at once, from all addresses. */
  maxConnections: number;
  /** Connections one client address (an IPv6 client: its /64) holds at once. */
  maxConnectionsPerAddress: number;
}

export interface ListenerBounds extends ConnectionCaps {
  /** Milliseconds a client may take to send its headers. */
  headersTimeoutMs: number;
  /** Milliseconds a connection may make no progress before it is dropped. */
  idleTimeoutMs: number;
}

export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 1000;

/** A cap reached is told at most this often: a flood would otherwise fill the log. */
const WARN_EVERY_MS = 60_000;

/** The options a listener's HTTP server is created with. */
export function boundedServerOptions(t: { headersTimeoutMs: number }): ServerOptions {
  return {
    headersTimeout: t.headersTimeoutMs,
    // Node checks the headers timeout only every connectionsCheckingInterval (30 s by default).
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(t.headersTimeoutMs / 4))),
    // A long body or answer is bounded by the idle timeout, not by its total time.
    requestTimeout: 0,
  };
}

/** Applies the caps and the idle timeout to a server created with boundedServerOptions. */
export function boundListener(server: Server, b: ListenerBounds, warn: (message: string) => void = () => {}): void {
  // Node closes a socket past maxConnections as it accepts it, before any JavaScript sees it.
  server.maxConnections = b.maxConnections;
  // The socket's idle timeout; Node destroys a socket that reaches it.
  server.setTimeout(b.idleTimeoutMs);
  const told = { total: 0, address: 0 };
  const tell = (which: 'total' | 'address', message: string) => {
    const now = Date.now();
    if (now - told[which] < WARN_EVERY_MS) return;
    told[which] = now;
    warn(message);
  };
  server.on('drop', () => tell('total', `the listener holds its ${b.maxConnections} connections; new ones are closed (COFFER_MAX_CONNECTIONS)`));
  limitConnectionsPerAddress(server, b.maxConnectionsPerAddress, (address) =>
    tell('address', `${address} holds ${b.maxConnectionsPerAddress} connections; new ones from it are closed (COFFER_MAX_CONNECTIONS_PER_ADDRESS)`));
}

/** Closes connections beyond `max` from one address (see addressKey) as they come. */
export function limitConnectionsPerAddress(server: Server, max: number, onRefused: (address: string) => void = () => {}): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = addressKey(socket.remoteAddress ?? '');
    const n = (open.get(address) ?? 0) + 1;
    if (n > max) {
      socket.destroy();
      onRefused(address);
      return;
    }
    open.set(address, n);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

/**
 * The client a connection (or an edge's image transform) is counted against: an IPv4 address
 * (also when mapped into IPv6), or an IPv6 address's /64, the least a single host is usually given.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  // A dotted IPv4 tail stands for two groups.
  const size = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const zeros = tail === undefined ? [] : Array<string>(Math.max(0, 8 - size(left) - size(right))).fill('0');
  const groups = [...left, ...zeros, ...right].slice(0, 4).map((g) => (parseInt(g, 16) || 0).toString(16));
  return `${groups.join(':')}::/64`;
}
