/** `edge-state.json` (src/edge/state-file.ts): written when the applied sequence moves, never half-written. */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { saveSeqEvery } from '../../src/edge/state-file.js';

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('saves the origin and the last applied sequence as it moves, and stops when told', async () => {
  dir = await mkdtemp(join(tmpdir(), 'coffer-edge-state-'));
  const path = join(dir, 'edge-state.json');
  const state = { seq: 7 };
  const saver = saveSeqEvery(20, path, 'http://origin.test', state);
  const read = async () => JSON.parse(await readFile(path, 'utf8').catch(() => 'null'));
  await expect.poll(read).toEqual({ origin: 'http://origin.test', seq: 7 });
  state.seq = 12;
  await expect.poll(read).toEqual({ origin: 'http://origin.test', seq: 12 });
  saver.stop();
  state.seq = 13;
  await new Promise((r) => setTimeout(r, 100));
  expect(await read()).toEqual({ origin: 'http://origin.test', seq: 12 });
  // Only the file itself is left: the temporary copy was renamed into place.
  expect(await readdir(dir)).toEqual(['edge-state.json']);
});
