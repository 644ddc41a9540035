/**
 * Attacks on the edge's one beat timer (src/edge/follower.ts) and what rides it: the state file
 * (src/edge/state-file.ts) and the optimizing-compiler check (src/start/edge-early.ts).
 */
import type http from 'node:http';
import { mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { seqSaver } from '../../src/edge/state-file.js';
import { OptimizeWhenBusy } from '../../src/start/edge-early.js';
import { followerRig, type FollowerRig } from '../helpers/follower-rig.js';

let dir = '';
let rig: FollowerRig | null = null;
afterEach(async () => {
  await rig?.close();
  rig = null;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = '';
});

describe('the state file against a planted temporary name', () => {
  it('never writes through a symlink at edge-state.json.tmp', async () => {
    dir = await mkdtemp(join(tmpdir(), 'coffer-edge-beat-'));
    const path = join(dir, 'edge-state.json');
    const victim = join(dir, 'victim');
    await writeFile(victim, 'keep me\n');
    await symlink(victim, `${path}.tmp`);
    const save = seqSaver(path, 'http://origin.test', { seq: 5 });
    save();
    await save.settled();
    expect(await readFile(victim, 'utf8')).toBe('keep me\n');
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({ origin: 'http://origin.test', seq: 5 });
  });

  it('creates no file where a dangling symlink at the temporary name points', async () => {
    dir = await mkdtemp(join(tmpdir(), 'coffer-edge-beat-'));
    const path = join(dir, 'edge-state.json');
    const target = join(dir, 'elsewhere');
    await symlink(target, `${path}.tmp`);
    const save = seqSaver(path, 'http://origin.test', { seq: Number.MAX_SAFE_INTEGER });
    save();
    await save.settled();
    expect(existsSync(target)).toBe(false);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({ origin: 'http://origin.test', seq: Number.MAX_SAFE_INTEGER });
    expect((await readdir(dir)).sort()).toEqual(['edge-state.json']);
  });
});

describe('the optimizing-compiler check on a short beat', () => {
  it('never judges busy an edge whose few ms a second arrive in lumps at a 20 ms beat', () => {
    // A lease of 100 ms or less gives a 20 ms beat; an acknowledgement every second beat costing
    // 1.2 ms is 30 ms a second, below the 50 ms that make an edge busy.
    let cpu = 0;
    let now = 0;
    let enabled = 0;
    const busy = new OptimizeWhenBusy(() => cpu, () => enabled++, () => now);
    for (let i = 0; i < 500; i++) {
      cpu += i % 2 === 0 ? 1_200 : 0;
      now += 20;
      busy.check();
    }
    expect(enabled).toBe(0);
  });

  it('never judges busy an idle edge at a 200 ms beat whose CPU comes in lumps', () => {
    // Measured at an idle edge process with a lease of 1 s: about 1 ms a beat, now and then 12 ms
    // (5.2 ms a second on average, 27 ms in the busiest second).
    let cpu = 0;
    let now = 0;
    let enabled = 0;
    const busy = new OptimizeWhenBusy(() => cpu, () => enabled++, () => now);
    for (let i = 0; i < 500; i++) {
      cpu += i % 97 === 50 ? 11_900 : i % 5 === 0 ? 3_100 : 1_000;
      now += 200;
      busy.check();
    }
    expect(enabled).toBe(0);
  });

  it('still comes on within a few short beats of real load', () => {
    let cpu = 0;
    let now = 0;
    const busy = new OptimizeWhenBusy(() => cpu, () => {}, () => now);
    let beats = 0;
    while (!busy.check() && beats < 100) {
      cpu += 10_000; // half a core
      now += 20;
      beats++;
    }
    expect(beats).toBeLessThanOrEqual(50);
  });
});

describe('the beat with hostile listeners', () => {
  it('drops a silent stream within a lease and a beat while a listener throws and another is slow', async () => {
    rig = await followerRig(1000);
    rig.follower.onTick(() => {
      throw new Error('a listener that fails');
    });
    rig.follower.onTick(() => {
      const until = Date.now() + 20;
      while (Date.now() < until) { /* a slow, synchronous listener */ }
    });
    await rig.pass(400, 10);
    const internals = rig.follower as unknown as { request: http.ClientRequest | null };
    const stream = internals.request;
    expect(stream).not.toBeNull();
    // A partition that drops packets: the socket stays open, nothing more arrives.
    stream!.socket?.pause();
    const from = rig.clock.monotonic();
    let dropped = -1;
    await rig.pass(1600, 10, () => {
      if (dropped < 0 && internals.request !== stream) dropped = rig!.clock.monotonic();
    });
    expect(dropped, 'the silent stream was dropped').toBeGreaterThan(0);
    expect(dropped - from).toBeLessThanOrEqual(1000 + rig.follower.beatMs + 10);
    // A new stream came, and a lease with it.
    await rig.until(() => rig!.follower.serving());
    expect(rig.follower.serving()).toBe(true);
  });

  it('sets no beat after stop, even when stopped just as one is due', async () => {
    rig = await followerRig(1000);
    let beats = 0;
    rig.follower.onTick(() => beats++);
    // Move to 1 ms before a beat, stop, then pass several beats.
    await rig.until(() => beats > 0);
    await rig.pass(rig.follower.beatMs - 1, 1);
    const acks = rig.acks;
    rig.follower.stop();
    const at = beats;
    await rig.pass(1000, 10);
    expect(beats).toBe(at);
    expect(rig.acks).toBe(acks);
  });
});
