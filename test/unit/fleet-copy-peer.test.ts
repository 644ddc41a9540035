/**
 * bench:fleet's fill rate (bench/fleet/copy-peer.mjs `fill`): the receiver does what a verified
 * fill must, so the prewarm goal is measured against real work: every byte is hashed and checked
 * against what was sent, written to a file in the receiver's own directory and synced, and the
 * file is gone afterwards; bytes that do not match are refused.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const PEER = join(process.cwd(), 'bench', 'fleet', 'copy-peer.mjs');
const children: Array<ReturnType<typeof spawn>> = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const c of children) c.kill();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [PEER, ...args]);
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

function sender(bytes: number): Promise<string> {
  const child = spawn(process.execPath, [PEER, 'send', String(bytes)]);
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (\d+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('error', reject);
  });
}

describe('copy-peer fill', () => {
  it('hashes, writes and syncs every byte, checks the digest, and leaves no file behind', async () => {
    const size = 3 * 1024 * 1024 + 12_345;
    const port = await sender(size);
    const dir = await mkdtemp(join(tmpdir(), 'coffer-fill-'));
    dirs.push(dir);
    const got = await run(['fill', port, String(size), '3', dir]);
    expect(got.err).toBe('');
    expect(got.code).toBe(0);
    expect(got.out).toMatch(new RegExp(`^copied ${3 * size} in [\\d.]+ ms`));
    expect(await readdir(dir)).toEqual([]);
  }, 60_000);

  it('refuses bytes that are not the ones expected', async () => {
    const port = await sender(1024 * 1024);
    const dir = await mkdtemp(join(tmpdir(), 'coffer-fill-'));
    dirs.push(dir);
    const got = await run(['fill', port, String(1024 * 1024 + 1), '1', dir]);
    expect(got.code).not.toBe(0);
    expect(got.err).toMatch(/not the bytes sent|got \d+ of/);
  }, 60_000);
});

describe('copy-peer fills (the copy fleet: bench/fleet/machine.ts measureCopyFleet)', () => {
  it('makes one verified fill per go line, none before it, and stays until stdin ends', async () => {
    const size = 2 * 1024 * 1024 + 7;
    const port = await sender(size);
    const dir = await mkdtemp(join(tmpdir(), 'coffer-fills-'));
    dirs.push(dir);
    const child = spawn(process.execPath, [PEER, 'fills', port, String(size), '2', dir]);
    children.push(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const printed = async (re: RegExp): Promise<void> => {
      for (let i = 0; i < 300 && !re.test(out); i++) await new Promise((r) => setTimeout(r, 20));
      expect(out).toMatch(re);
    };
    await printed(/^ready\n/);
    await new Promise((r) => setTimeout(r, 300));
    expect(out).toBe('ready\n');
    child.stdin.write('go\n');
    await printed(/fill 1 done in [\d.]+ ms\n/);
    expect(out).not.toMatch(/fill 2/);
    child.stdin.write('go\n');
    await printed(/fill 2 done in [\d.]+ ms\n/);
    // Still running after its last fill, so its CPU can be read; it leaves when stdin ends.
    await new Promise((r) => setTimeout(r, 200));
    expect(child.exitCode).toBeNull();
    child.stdin.end();
    expect(await exited).toBe(0);
    expect(err).toBe('');
    expect(await readdir(dir)).toEqual([]);
  }, 60_000);
});
