/** `edge-state.json` (src/edge/state-file.ts): written when the applied sequence moves, never half-written. */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { seqSaver } from '../../src/edge/state-file.js';

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const read = async (path: string) => JSON.parse(await readFile(path, 'utf8').catch(() => 'null')) as unknown;

it('saves the origin and the last applied sequence when it moved, and only then', async () => {
  dir = await mkdtemp(join(tmpdir(), 'coffer-edge-state-'));
  const path = join(dir, 'edge-state.json');
  const state = { seq: 7 };
  const save = seqSaver(path, 'http://origin.test', state);
  expect(await read(path)).toBeNull();
  save();
  await save.settled();
  expect(await read(path)).toEqual({ origin: 'http://origin.test', seq: 7 });
  state.seq = 12;
  save();
  await save.settled();
  expect(await read(path)).toEqual({ origin: 'http://origin.test', seq: 12 });
  // Unchanged: nothing is written (a file removed meanwhile stays removed).
  await rm(path);
  save();
  await save.settled();
  expect(await read(path)).toBeNull();
  state.seq = 13;
  save();
  await save.settled();
  expect(await read(path)).toEqual({ origin: 'http://origin.test', seq: 13 });
  // Only the file itself is left: the temporary copy was renamed into place.
  expect(await readdir(dir)).toEqual(['edge-state.json']);
});

it('runs one save at a time, and the next call after it saves the newest sequence', async () => {
  dir = await mkdtemp(join(tmpdir(), 'coffer-edge-state-'));
  const path = join(dir, 'edge-state.json');
  const state = { seq: 1 };
  const save = seqSaver(path, 'http://origin.test', state);
  save();
  state.seq = 2;
  // Under way with 1: this call starts nothing (no two writers on the temporary name).
  save();
  await save.settled();
  expect(await read(path)).toEqual({ origin: 'http://origin.test', seq: 1 });
  save();
  await save.settled();
  expect(await read(path)).toEqual({ origin: 'http://origin.test', seq: 2 });
  expect(await readdir(dir)).toEqual(['edge-state.json']);
});

it('shrugs off a place it cannot write to, and saves once it can', async () => {
  dir = await mkdtemp(join(tmpdir(), 'coffer-edge-state-'));
  // A file where the directory should be: every write fails, for root too.
  const parent = join(dir, 'data');
  await writeFile(parent, 'not a directory');
  const path = join(parent, 'edge-state.json');
  const state = { seq: 3 };
  const save = seqSaver(path, 'http://origin.test', state);
  expect(() => save()).not.toThrow();
  await save.settled();
  await rm(parent);
  await mkdir(parent);
  save();
  await save.settled();
  expect(await read(path)).toEqual({ origin: 'http://origin.test', seq: 3 });
});
