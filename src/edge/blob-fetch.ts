/**
 * Fetches a file's bytes from the origin over a plain socket that reads into one fixed
 * buffer: an edge prefetching on every completion otherwise spends much of its time
 * collecting the garbage of one fresh buffer per packet. Chunks handed to `onChunk` are
 * views of that buffer, valid until `onChunk` returns or its promise settles; reading
 * waits for that promise. An https origin is reached over TLS (checked like every other
 * request to it, see origin-client.ts), reading the decrypted bytes as they come.
 * The same reader fetches from a parent edge (tiers.ts): another path, extra headers, a
 * shorter idle limit, interim `102 Processing` answers skipped, and the SHA-256 the parent
 * names checked before a byte is taken.
 */
import net from 'node:net';
import type { OriginClient } from './origin-client.js';

const READ_BUFFER = 256 * 1024;
const IDLE_TIMEOUT_MS = 30_000;

export type ChunkConsumer = (chunk: Buffer) => void | Promise<void>;

export interface RawFetchOptions {
  /** The path and query asked for (default `/_edge/blob/{id}`). */
  path?: string;
  headers?: Record<string, string>;
  /** Gives up when nothing at all (no byte, no interim answer) arrives for this long. */
  idleMs?: number;
  /** The answer must name this SHA-256 in X-Coffer-Sha256, else no byte is taken. */
  sha256?: string;
  /** Called whenever anything arrives, interim answers included: the upstream is alive. */
  onAlive?: () => void;
  /** Gives up this long after the connection is opened, however lively: a trickle is not progress. */
  deadlineMs?: number;
}

export function fetchBlobRaw(origin: OriginClient, token: string, fileId: string, onChunk: ChunkConsumer, opts: RawFetchOptions = {}): Promise<'ok' | 'not_found'> {
  const url = new URL(`${origin.url}${opts.path ?? `/_edge/blob/${encodeURIComponent(fileId)}`}`);
  const extra = Object.entries(opts.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return new Promise((resolve, reject) => {
    let settled = false;
    let head = '';
    let status = 0;
    let remaining = -1;
    const finish = (err: Error | null, value?: 'ok' | 'not_found') => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      socket.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    const deliver = (view: Buffer): boolean => {
      if (view.length > remaining) view = view.subarray(0, remaining);
      remaining -= view.length;
      let pending: void | Promise<void>;
      try {
        pending = view.length > 0 ? onChunk(view) : undefined;
      } catch (err) {
        finish(err as Error);
        return false;
      }
      if (pending) {
        if (origin.secure) socket.pause();
        pending.then(() => (remaining === 0 ? finish(null, 'ok') : socket.resume()), (err: Error) => finish(err));
        return false;
      }
      if (remaining === 0) finish(null, 'ok');
      return true;
    };
    /** Takes bytes from the socket; false to stop reading until resumed. */
    const receive = (bytes: Buffer): boolean => {
      if (settled) return false;
      opts.onAlive?.();
      if (status !== 0) return deliver(bytes);
      let before = head.length;
      head += bytes.toString('latin1');
      let end = head.indexOf('\r\n\r\n');
      // Interim answers (102 Processing while a parent fills) come before the real one.
      while (end >= 0 && /^HTTP\/1\.[01] 1\d\d/.test(head)) {
        head = head.slice(end + 4);
        before -= end + 4;
        end = head.indexOf('\r\n\r\n');
      }
      if (end < 0) {
        if (head.length > 64 * 1024) finish(new Error('the origin sent no end of headers'));
        return true;
      }
      const statusMatch = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      const headers = head.slice(0, end);
      status = statusMatch ? Number(statusMatch[1]) : -1;
      if (status === 404) {
        finish(null, 'not_found');
        return false;
      }
      if (status !== 200) {
        finish(Object.assign(new Error(`origin answered ${status} for the bytes of ${fileId}`), { status }));
        return false;
      }
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(headers);
      if (!length || /\r\ntransfer-encoding:/i.test(headers)) {
        finish(new Error('the origin sent the bytes without a Content-Length'));
        return false;
      }
      if (opts.sha256 !== undefined) {
        const named = /\r\nx-coffer-sha256:\s*([0-9a-f]{64})\s*(?:\r\n|$)/i.exec(headers);
        if (!named || named[1]!.toLowerCase() !== opts.sha256) {
          finish(new Error(`the answer names another version of ${fileId}`));
          return false;
        }
      }
      remaining = Number(length[1]);
      if (remaining === 0) {
        finish(null, 'ok');
        return false;
      }
      return deliver(bytes.subarray(end + 4 - before));
    };
    const socket: net.Socket = origin.secure
      ? process.getBuiltinModule('node:tls').connect({ host: origin.host, port: origin.port, servername: net.isIP(origin.host) ? undefined : origin.host, ...(origin.ca ? { ca: origin.ca } : {}) })
      : net.connect({
        host: origin.host,
        port: origin.port,
        onread: {
          buffer: Buffer.allocUnsafe(READ_BUFFER),
          callback: (n: number, buf: Uint8Array): boolean => receive(Buffer.from(buf.buffer, buf.byteOffset, n)),
        },
      });
    if (origin.secure) socket.on('data', (chunk: Buffer) => receive(chunk));
    socket.setNoDelay(true);
    const deadline = opts.deadlineMs === undefined ? undefined
      : setTimeout(() => finish(new Error(`the upstream took longer than ${opts.deadlineMs} ms over the bytes of ${fileId}`)), opts.deadlineMs);
    socket.setTimeout(opts.idleMs ?? IDLE_TIMEOUT_MS, () => finish(new Error('the origin stopped sending the bytes')));
    socket.on(origin.secure ? 'secureConnect' : 'connect', () => {
      socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\n${extra}Connection: close\r\n\r\n`);
    });
    socket.on('error', (err) => finish(err));
    socket.on('close', () => finish(new Error(`the origin closed the connection with ${remaining} bytes of ${fileId} to go`)));
  });
}
