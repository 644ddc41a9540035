/**
 * Crash safety of tus PATCHes (contract §9): an origin killed with SIGKILL in the middle of a
 * PATCH, at random moments, comes back with an offset it can stand by — never past the bytes
 * that were sent, never before what it had answered — and the upload resumed from there, each
 * time, ends as a file with the right SHA-256. One more kill comes after the last byte, while
 * the file is being made ready: HEAD after the restart finishes it.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, tusStorage, type TusStorage } from '../helpers/tus-origin.js';
import { stopAll } from '../helpers/processes.js';
import { MiB, offsetOf, storedTails, tusClient } from '../helpers/tus.js';
import { sha256, sleep } from '../kit/index.js';

const KILLS = 4;
const PIECE = 256 * 1024;

let storage: TusStorage;
let port: number;
beforeAll(async () => {
  storage = await tusStorage();
  port = await freePort();
});
afterAll(async () => {
  await stopAll();
  await storage?.cleanup();
});

/**
 * The bytes from `from`, in pieces; calls `kill` once `killAfter` of them have been handed over
 * (and `beforeKill` has settled).
 */
async function* sending(
  bytes: Buffer, from: number, killAfter: number, kill: () => void, sent: { n: number }, beforeKill?: () => Promise<void>,
): AsyncGenerator<Buffer> {
  for (let i = from; i < bytes.length; i += PIECE) {
    const piece = bytes.subarray(i, Math.min(bytes.length, i + PIECE));
    yield piece;
    sent.n += piece.length;
    if (sent.n >= killAfter) {
      await beforeKill?.();
      kill();
      return;
    }
    // A little slower than the wire, so the kill lands with bytes in flight.
    await sleep(2);
  }
}

/** Polls HEAD until the upload's offset reaches `least`. */
async function untilOffset(c: () => ReturnType<typeof tusClient>, location: string, least: number): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (offsetOf(await c().head(location)) >= least) return;
    await sleep(50);
  }
  throw new Error(`the offset did not reach ${least} within 60 s`);
}

describe('tus PATCH crash safety', () => {
  it('keeps a consistent offset across kills in the middle of PATCHes, and the upload ends whole', async () => {
    const bytes = randomBytes(40 * MiB + 123);
    let origin = await storage.start('origin #0', port);
    const c = () => tusClient(origin.url, `Bearer ${storage.key}`);
    const created = await c().create(bytes.length, { filename: 'crash.bin' });
    expect(created.status).toBe(201);
    const location = created.headers.location!;
    let offset = 0;
    const history: string[] = [];
    for (let round = 1; round <= KILLS; round++) {
      const remaining = bytes.length - offset;
      // Somewhere in the next half of what is left, at any byte (mostly not a part boundary);
      // the first time past two parts, so that some whole parts are in before a kill.
      const killAfter = randomInt(round === 1 ? 12 * MiB : 1, Math.max(round === 1 ? 12 * MiB + 1 : 2, Math.floor(remaining / 2)));
      const sent = { n: 0 };
      const proc = origin.proc;
      // The first kill waits until the origin has recorded a part: bytes handed over may still
      // sit in socket buffers, and a part's fsync can take seconds on a busy disk.
      const recorded = round === 1 ? () => untilOffset(c, location, 1) : undefined;
      const answer = await c().patch(location, offset, sending(bytes, offset, killAfter, () => proc.child.kill('SIGKILL'), sent, recorded))
        .then((a) => `answered ${a.status}`, (err: Error) => `failed: ${err.message}`);
      await proc.exited;
      origin = await storage.start(`origin #${round}`, port);
      const head = await c().head(location);
      expect(head.status).toBe(200);
      const now = offsetOf(head);
      history.push(`round ${round}: from ${offset}, ${sent.n} handed over, kill after ${killAfter}, ${answer}, offset now ${now}`);
      expect(now, history.join('\n')).toBeGreaterThanOrEqual(offset);
      expect(now, history.join('\n')).toBeLessThanOrEqual(offset + sent.n);
      offset = now;
    }
    expect(offset, history.join('\n')).toBeGreaterThan(0);
    // The last bytes, and a kill as soon as they are all handed over: the file is being made ready.
    const sent = { n: 0 };
    const proc = origin.proc;
    await c().patch(location, offset, sending(bytes, offset, bytes.length - offset, () => setTimeout(() => proc.child.kill('SIGKILL'), randomInt(0, 30)), sent))
      .catch(() => undefined);
    await proc.exited;
    origin = await storage.start('origin, last', port);
    let head = await c().head(location);
    if (offsetOf(head) < bytes.length) {
      // Killed before every byte was kept: send the rest, as any client would.
      history.push(`last round: offset ${offsetOf(head)} of ${bytes.length}`);
      const rest = await c().patch(location, offsetOf(head), bytes.subarray(offsetOf(head)));
      expect(rest.status, history.join('\n')).toBe(204);
      head = await c().head(location);
    }
    expect(offsetOf(head)).toBe(bytes.length);
    const id = head.headers['coffer-file-id'];
    expect(id, history.join('\n')).toBeDefined();
    const file = await fetch(`${origin.url}/collections/file/get`, {
      method: 'POST', headers: { authorization: `Bearer ${storage.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ file_id: id }),
    }).then((r) => r.json() as Promise<{ status: string; sha256: string; size: number }>);
    expect(file, history.join('\n')).toMatchObject({ status: 'ready', size: bytes.length, sha256: sha256(bytes) });
    // Nothing of the tails is left once the trash has run (after a restart at the latest).
    await origin.proc.stop('SIGTERM');
    origin = await storage.start('origin, clean', port);
    let tails = await storedTails(storage);
    for (let i = 0; i < 50 && tails.length > 0; i++) {
      await sleep(100);
      tails = await storedTails(storage);
    }
    expect(tails).toEqual([]);
  }, 240_000);
});
