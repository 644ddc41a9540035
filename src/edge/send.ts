/**
 * Writing file bytes to a client: from the cache on disk or straight through from the
 * origin. Each chunk is written only after `allow()` says the file may still be served,
 * and only once the client has taken the previous one, so a client that stops reading
 * holds at most two small buffers and nothing more is read for it.
 */
import type http from 'node:http';
import { open } from 'node:fs/promises';
import type { ByteRange } from './delivery.js';

/** Resolves true while the response may go on; false once it must stop. */
export type Gate = () => boolean | Promise<boolean>;

export const STREAM_BUFFER = 256 * 1024;
const spareBuffers: Buffer[] = [];
const takeBuffer = (): Buffer => spareBuffers.pop() ?? Buffer.allocUnsafeSlow(STREAM_BUFFER);
const returnBuffer = (b: Buffer): void => {
  if (spareBuffers.length < 64) spareBuffers.push(b);
};

/** Writes a chunk and resolves once the socket has taken it (or the response is gone). */
function written(res: http.ServerResponse, chunk: Buffer): Promise<void> {
  return new Promise<void>((resolve) => {
    // Never rejects: a failed write shows as a destroyed response on the next turn.
    res.write(chunk, () => resolve());
  });
}

/**
 * Sends bytes `start..end` of a cached file through two reused buffers: one is read while
 * the other is written. It never rejects: a failure ends the response. A copy that is gone
 * or shorter than its record (removed or cut behind the edge's back) is reported to
 * `onBroken`, so the cache forgets it and the next request fills it anew instead of failing
 * the same way until the copy is evicted.
 */
export async function streamFile(path: string, start: number, end: number, res: http.ServerResponse, allow: Gate, onBroken: (path: string) => void): Promise<void> {
  try {
    await sendRange(path, start, end, res, allow);
  } catch (err) {
    if (isBrokenCopy(err)) onBroken(path);
    res.destroy();
  }
}

class BrokenCopy extends Error {}

/** Whether a read of a kept copy failed because the copy is gone, cut short, or not a file. */
export function isBrokenCopy(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return err instanceof BrokenCopy || code === 'ENOENT' || code === 'EISDIR';
}

async function sendRange(path: string, start: number, end: number, res: http.ServerResponse, allow: Gate): Promise<void> {
  // A client that goes away mid-file fails the write; that is the end of it, not a crash.
  res.on('error', () => {});
  const handle = await open(path, 'r');
  const buffers = [takeBuffer(), takeBuffer()];
  try {
    let writing: Promise<void> | null = null;
    let which = 0;
    for (let pos = start; pos <= end;) {
      const buf = buffers[which]!;
      which ^= 1;
      const { bytesRead } = await handle.read(buf, 0, Math.min(buf.length, end + 1 - pos), pos);
      if (bytesRead === 0) throw new BrokenCopy('cached file shorter than its record');
      pos += bytesRead;
      if (writing) await writing;
      if (res.destroyed) return;
      if (!(await allow())) {
        res.destroy();
        return;
      }
      if (res.destroyed) return;
      writing = written(res, buf.subarray(0, bytesRead));
    }
    if (writing) await writing;
    if (!res.destroyed) res.end();
  } finally {
    await handle.close();
    // A buffer still queued on a socket that closed early is not handed out again.
    if (!res.destroyed) for (const b of buffers) returnBuffer(b);
  }
}

/**
 * Relays the body of the origin's answer for a file, cut to `range`. The origin is read
 * only as fast as the client takes the bytes; a chunk waiting for a verdict holds the rest.
 */
export function relay(upstream: http.IncomingMessage, res: http.ServerResponse, size: number, range: ByteRange | null, allow: Gate): void {
  res.on('error', () => {});
  const start = range?.start ?? 0;
  const end = range?.end ?? size - 1;
  let offset = 0;
  let pending = false;
  let finished = false;
  const stop = (): void => {
    finished = true;
    upstream.destroy();
    res.destroy();
  };
  const deliver = (part: Buffer, last: boolean): void => {
    if (res.destroyed) return stop();
    const more = part.length === 0 || res.write(part);
    if (last) {
      finished = true;
      upstream.destroy();
      res.end();
    } else if (!more) {
      upstream.pause();
      res.once('drain', () => upstream.resume());
    }
  };
  upstream.on('data', (chunk: Buffer) => {
    if (finished) return;
    const from = Math.max(start, offset) - offset;
    const to = Math.min(end + 1, offset + chunk.length) - offset;
    offset += chunk.length;
    const last = offset > end;
    const part = to > from ? chunk.subarray(from, to) : chunk.subarray(0, 0);
    if (part.length === 0 && !last) return;
    const verdict = allow();
    if (verdict === true) return deliver(part, last);
    if (verdict === false) return stop();
    upstream.pause();
    pending = true;
    verdict.then((ok) => {
      pending = false;
      if (!ok || finished) return stop();
      deliver(part, last);
      if (finished) return;
      if (upstream.readableEnded || upstream.destroyed) return stop();
      if (!res.writableNeedDrain) upstream.resume();
    }, stop);
  });
  // The origin's answer ended or broke before the last wanted byte: the client must not
  // take a short body for a whole one.
  const cut = (): void => {
    if (!finished && !pending) stop();
  };
  upstream.on('end', cut);
  upstream.on('close', cut);
  upstream.on('error', cut);
  res.on('close', () => {
    if (!finished) stop();
  });
}
