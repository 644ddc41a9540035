/**
 * One tus upload across two origins on one store (contract §9): two `coffer origin` processes
 * on the project's storage (one data dir with SQLite and files in `embedded`; PostgreSQL and
 * S3 in `postgres-s3`). A PATCH may reach either origin at any offset, a body cut off at one is
 * resumed at the other, and two PATCHes of one upload at once, one per origin, end with one
 * kept and the other answered 409.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tusStorage, type TusStorage } from '../helpers/tus-origin.js';
import { stopAll } from '../helpers/processes.js';
import { MiB, offsetOf, slowly, tusClient } from '../helpers/tus.js';
import { sha256, sleep } from '../kit/index.js';

let storage: TusStorage;
let a: ReturnType<typeof tusClient>;
let b: ReturnType<typeof tusClient>;
let urls: [string, string];

beforeAll(async () => {
  storage = await tusStorage();
  const [first, second] = [await storage.start('origin A'), await storage.start('origin B')];
  urls = [first.url, second.url];
  a = tusClient(first.url, `Bearer ${storage.key}`);
  b = tusClient(second.url, `Bearer ${storage.key}`);
});
afterAll(async () => {
  await stopAll();
  await storage?.cleanup();
});

const pathOf = (location: string) => new URL(location).pathname;
const fileOn = async (base: string, id: string | undefined) => {
  const res = await fetch(`${base}/collections/file/get`, { method: 'POST', headers: { authorization: `Bearer ${storage.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ file_id: id }) });
  return res.json() as Promise<{ status: string; sha256: string }>;
};

/**
 * HEAD's offset once it stops moving: a cut-off PATCH is saved when its origin sees the
 * connection gone. Bytes still in that origin's socket buffers when it did are not kept.
 */
async function settledOffset(c: ReturnType<typeof tusClient>, path: string): Promise<number> {
  let offset = -1;
  let same = 0;
  for (let i = 0; i < 200 && same < 5; i++) {
    await sleep(100);
    const now = offsetOf(await c.head(path));
    same = now === offset && now > 0 ? same + 1 : 0;
    offset = now;
  }
  return offset;
}

describe('tus across two origins', () => {
  it('takes PATCHes at any offset at either origin, and each sees the other\'s progress', async () => {
    const bytes = randomBytes(17 * MiB + 9);
    const created = await a.create(bytes.length, { filename: 'both.bin' });
    const path = pathOf(created.headers.location!);
    const stops = [3 * MiB + 1, 7 * MiB + 3, 10 * MiB, 16 * MiB - 5, bytes.length];
    let offset = 0;
    let last;
    for (const [i, stop] of stops.entries()) {
      const [writer, reader] = i % 2 ? [b, a] : [a, b];
      last = await writer.patch(path, offset, bytes.subarray(offset, stop));
      expect(last.status).toBe(204);
      offset = stop;
      expect(offsetOf(await reader.head(path))).toBe(offset);
    }
    const id = last!.headers['coffer-file-id'];
    expect(id).toBeDefined();
    for (const base of urls) expect(await fileOn(base, id)).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
  });

  it('resumes at one origin a PATCH cut off at the other', async () => {
    const bytes = randomBytes(12 * MiB + 1);
    const path = pathOf((await b.create(bytes.length, { filename: 'moved.bin' })).headers.location!);
    await a.patch(path, 0, slowly(bytes.subarray(0, 8 * MiB), 256 * 1024, 1), {}, true).catch(() => undefined);
    // What arrived before the close is kept (more than a whole part), and the other origin sees it.
    const offset = await settledOffset(b, path);
    expect(offset).toBeGreaterThan(7 * MiB);
    expect(offset).toBeLessThanOrEqual(8 * MiB);
    const rest = await b.patch(path, offset, bytes.subarray(offset));
    expect(rest.status).toBe(204);
    expect((await fileOn(urls[0], rest.headers['coffer-file-id'])).sha256).toBe(sha256(bytes));
  });

  it('of two PATCHes of one upload at once, one per origin, one is kept and the other answered 409', async () => {
    const bytes = randomBytes(3 * MiB);
    const path = pathOf((await a.create(bytes.length, { filename: 'contested.bin' })).headers.location!);
    const slow = a.patch(path, 0, slowly(bytes, 64 * 1024, 15, 64 * 1024));
    await sleep(300);
    const fast = await b.patch(path, 0, bytes);
    const answers = [(await slow).status, fast.status].sort();
    expect(answers).toEqual([204, 409]);
    const loser = fast.status === 409 ? fast : await slow;
    expect(loser.json?.error?.code).toBe('upload_busy');
    const head = await b.head(path);
    expect(offsetOf(head)).toBe(bytes.length);
    expect((await fileOn(urls[1], head.headers['coffer-file-id'])).sha256).toBe(sha256(bytes));
  });
});
