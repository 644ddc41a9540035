/**
 * A file held in HotBytes as a stream of its bytes: slices of the shared buffer, sent as they
 * become sendable (a copy still under way is read as it comes, in pieces of 1 MiB: a socket
 * write per small arrival cost a parent twice the CPU per byte), released once the stream
 * closes (sent, or the reader gone). The last 64 KiB are copied: a stream ends once its last
 * piece is handed to the socket, and a socket stalled on that piece then keeps only the copy.
 */
import type http from 'node:http';
import { Readable } from 'node:stream';
import { systemClock, type Clock, type TimerHandle } from './clock.js';
import type { HeldBytes } from './hot-bytes.js';

const CHUNK = 1 << 20;
const TAIL = 64 << 10;
/**
 * A reader of a copy under way gets what has come at least this often, even less than a piece:
 * it has its answer's headers, so bytes are all that tell it the sender is alive (a child edge
 * gives a parent up after PARENT_IDLE_MS of silence).
 */
const LIVE_MS = 1000;

export interface HeldStreamOptions {
  /** Asked before each piece: once false, the stream fails instead of sending more. */
  stillCurrent?: () => boolean;
  /** Bytes of a copy under way waited for before a piece is sent (default 1 MiB). */
  piece?: number;
  /** `writeHeld`: once this long has passed without a whole piece, what has come is sent (default 1 s). */
  liveMs?: number;
  /** `writeHeld`'s timer runs on it (default: the system's). */
  clock?: Clock;
}

export function heldStream(held: HeldBytes, o: HeldStreamOptions = {}): Readable {
  const stillCurrent = o.stillCurrent ?? (() => true);
  const least = o.piece ?? CHUNK;
  const tailAt = Math.max(0, held.size - TAIL);
  let at = 0;
  const pump = (): void => {
    if (out.destroyed) return;
    if (!stillCurrent()) return void out.destroy(new Error('the file changed while it was sent'));
    if (at >= held.size) return void out.push(null);
    const sendable = held.sendable();
    const want = Math.min(least, held.size - at);
    if (sendable.length < at + want) {
      held.after(at, want).then(pump, (err: Error) => out.destroy(err));
      return;
    }
    const end = at < tailAt ? Math.min(at + CHUNK, tailAt, sendable.length) : sendable.length;
    const piece = at < tailAt ? sendable.subarray(at, end) : Buffer.from(sendable.subarray(at, end));
    at = end;
    out.push(piece);
  };
  const out = new Readable({ read: pump });
  out.once('close', held.release);
  return out;
}

/**
 * Writes a held file to `res` as it becomes sendable, without a stream: whole at once when it
 * is (one write, which the socket takes in its own time), else in pieces of at least `piece`.
 * The pieces are views of the shared buffer, which stays counted until `res` closes.
 */
export async function writeHeld(res: http.ServerResponse, held: HeldBytes, o: HeldStreamOptions = {}): Promise<void> {
  const least = o.piece ?? CHUNK;
  const clock = o.clock ?? systemClock;
  if (res.closed) held.release();
  else res.once('close', held.release);
  for (let at = 0; at < held.size;) {
    let timer: TimerHandle | undefined;
    const full = held.after(at, Math.min(least, held.size - at));
    const some = new Promise<void>((resolve) => {
      timer = clock.setTimeout(resolve, o.liveMs ?? LIVE_MS);
      timer.unref?.();
    }).then(() => held.after(at, 1));
    full.catch(() => {});
    some.catch(() => {});
    try {
      await Promise.race([full, some]);
    } catch {
      return void res.destroy();
    } finally {
      clock.clearTimeout(timer);
    }
    if (res.destroyed) return;
    if (o.stillCurrent && !o.stillCurrent()) return void res.destroy();
    const sendable = held.sendable();
    const piece = sendable.subarray(at);
    at = sendable.length;
    if (at >= held.size) res.end(piece);
    else res.write(piece);
  }
}
