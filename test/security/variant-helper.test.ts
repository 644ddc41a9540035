/**
 * Attacks on the edge's transform helper (src/edge/variants/transform-pool.ts): a helper that
 * crashes, hangs or is stopped mid-transform, races with deletes and switches, hostile images,
 * IPC edge cases, its priority and its environment. The helper is stopped with SIGSTOP to hold
 * a transform in flight, so the orders tested do not depend on timing.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startEdge, type RunningEdge } from '../../src/edge/server.js';
import { HELPER_NICE, TransformProcess, helperEnv } from '../../src/edge/variants/transform-pool.js';
import { expectError } from '../helpers/api.js';
import { pngBomb, solidImage } from '../helpers/images.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';

const POOL = new URL('../../src/edge/variants/transform-pool.ts', import.meta.url).pathname;
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const nice = (stat: string) => Number(stat.split(') ')[1]!.split(' ')[16]);
const highWater = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const noise = (w: number, h: number) => sharp(randomBytes(w * h * 3), { raw: { width: w, height: h, channels: 3 } });
const pixel = async (img: Buffer) => [...(await sharp(img).raw().toBuffer()).subarray(0, 3)];

let o: TestOrigin;
let edge: RunningEdge;
let dir: string;

async function startTestEdge(): Promise<RunningEdge> {
  const config = loadConfig({}, {
    COFFER_HOST: '127.0.0.1', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: dir, COFFER_SIGNING_SECRET: o.secret, COFFER_LOG_LEVEL: 'warn',
    COFFER_EDGE_TOKEN: o.origin.credentials.edgeTokens[0],
    // The storms here test the helper, not admission (variant-admission.test.ts): one client may ask for them all.
    COFFER_VARIANT_PER_CLIENT: '1000', COFFER_VARIANT_PER_SOURCE: '1000',
  });
  return startEdge(config, o.url, { cacheDir: dir, logStream: new Writable({ write(_c, _e, cb) { cb(); } }) });
}

beforeAll(async () => {
  o = await startTestOrigin();
  dir = await mkdtemp(join(tmpdir(), 'coffer-variant-helper-'));
  // Secrets in the edge's environment, as an operator would set them.
  process.env.COFFER_EDGE_TOKEN = 'edge-token-must-not-leak';
  process.env.COFFER_SECRET = 'secret-must-not-leak';
  edge = await startTestEdge();
});

afterAll(async () => {
  const helper = edge?.variants.helper.pid;
  await edge?.close();
  if (helper) expect(alive(helper)).toBe(false);
  await o?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const upload = async (bytes: Buffer, content_type = 'image/png', visibility = 'Public') =>
  (await uploadBytes(o, bytes, { name: 'x.png', file_type: 'image', content_type, visibility })).file_id as string;

async function get(path: string) {
  const res = await fetch(`${edge.url}${path}`);
  const body = Buffer.from(await res.arrayBuffer());
  let json: unknown;
  try { json = JSON.parse(body.toString()); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, body, json };
}

/** Runs `during` while the helper is stopped with `active` transforms sent to it; then continues it. */
async function withHelperStopped<T>(active: number, start: () => T, during: (pid: number) => Promise<void>): Promise<T> {
  expect((await get(`/files/${await warmId}?w=3`)).status).toBe(200);
  const pid = edge.variants.helper.pid!;
  process.kill(pid, 'SIGSTOP');
  try {
    const started = start();
    await vi.waitFor(() => expect(edge.variants.active).toBe(active), { timeout: 10_000 });
    await during(pid);
    return started;
  } finally {
    if (alive(pid)) process.kill(pid, 'SIGCONT');
  }
}
let warmId: Promise<string>;
beforeAll(() => { warmId = solidImage('png', 16, 16).then((b) => upload(b)); });

describe('the helper process', () => {
  test('gets none of the edge\'s settings or secrets, only what it runs with', async () => {
    expect((await get(`/files/${await warmId}?w=4`)).status).toBe(200);
    const env = readFileSync(`/proc/${edge.variants.helper.pid}/environ`, 'utf8').split('\0');
    expect(env.filter((l) => /COFFER|SECRET|TOKEN/.test(l))).toEqual([]);
    expect(env).toContain('UV_THREADPOOL_SIZE=3');
    const kept = helperEnv(2, { PATH: '/bin', COFFER_SIGNING_SECRET: 's', AWS_SECRET_ACCESS_KEY: 'a', DATABASE_URL: 'postgres://u:p@h/db', VIPS_CONCURRENCY: '1', LC_ALL: 'C' });
    expect(kept).toEqual({ PATH: '/bin', VIPS_CONCURRENCY: '1', LC_ALL: 'C', UV_THREADPOOL_SIZE: '2' });
  });

  test('every thread of the helper, libvips\' workers among them, runs niced', async () => {
    expect((await get(`/files/${await warmId}?w=5&format=webp`)).status).toBe(200);
    const pid = edge.variants.helper.pid!;
    const own = nice(readFileSync(`/proc/${process.pid}/stat`, 'utf8'));
    const tasks = readdirSync(`/proc/${pid}/task`);
    expect(tasks.length).toBeGreaterThan(1);
    for (const t of tasks) expect(nice(readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8')), `thread ${t}`).toBe(own + HELPER_NICE);
  });

  test('a helper crashing with transforms in flight: exactly those get 503 + Retry-After, the queued ones a new helper\'s answer', async () => {
    const ids = await Promise.all([1, 2, 3, 4, 5, 6].map(() => solidImage('png', 30, 30).then((b) => upload(b))));
    let first = 0;
    const answers = await withHelperStopped(2, () => Promise.all(ids.map((id, i) => get(`/files/${id}?w=${10 + i}`))), async (pid) => {
      first = pid;
      expect(edge.variants.queued).toBe(4);
      process.kill(pid, 'SIGSEGV');
    });
    const failed = answers.filter((a) => a.status !== 200);
    expect(failed.length).toBe(2);
    for (const a of failed) {
      expectError(a, 503, 'edge_unavailable');
      expect(a.headers.get('retry-after')).toBe('1');
    }
    expect(edge.variants.helper.pid).not.toBe(first);
    expect(alive(first)).toBe(false);
    // The failure is not remembered: asked again, every variant is made.
    for (const [i, id] of ids.entries()) expect((await get(`/files/${id}?w=${10 + i}`)).status).toBe(200);
  });

  test('a storm of distinct variants and a crowd asking for one share one helper and one transform each', async () => {
    const id = await upload(await solidImage('png', 200, 150));
    const made = edge.variants.made;
    const storm = await Promise.all(Array.from({ length: 40 }, (_, i) => get(`/files/${id}?w=${20 + i}&format=webp`)));
    expect(storm.map((r) => r.status)).toEqual(storm.map(() => 200));
    const crowd = await Promise.all(Array.from({ length: 30 }, () => get(`/files/${id}?w=99&format=jpeg`)));
    expect(new Set(crowd.map((r) => `${r.status} ${r.headers.get('etag')}`)).size).toBe(1);
    expect(edge.variants.made - made).toBe(41);
    expect(edge.variants.active + edge.variants.queued).toBe(0);
  });

  test('a file deleted while its variant is in the helper gets a 404, and the variant is not kept', async () => {
    const id = await upload(await solidImage('png', 40, 40));
    expect((await get(`/files/${id}`)).status).toBe(200);
    const kept = edge.cache.variantCount;
    const asked = await withHelperStopped(1, () => get(`/files/${id}?w=17`), async () => {
      expect((await o.post('/collections/file/delete', { file_id: id })).status).toBe(200);
      await vi.waitFor(async () => expect((await get(`/files/${id}`)).status).toBe(404), { timeout: 10_000 });
    });
    expectError(await asked, 404, 'not_found');
    expect(edge.cache.variantCount).toBe(kept);
  });

  test('a file switched to Private while its variant is in the helper gets a 403, and is never served unsigned after', async () => {
    const id = await upload(await solidImage('png', 40, 40));
    expect((await get(`/files/${id}`)).status).toBe(200);
    const asked = await withHelperStopped(1, () => get(`/files/${id}?w=18`), async () => {
      expect((await o.post('/collections/file/update', { file_id: id, visibility: 'Private' })).status).toBe(200);
      await vi.waitFor(async () => expect((await get(`/files/${id}`)).status).toBe(403), { timeout: 10_000 });
    });
    expectError(await asked, 403, 'signature_required');
    // Its bytes are still the file's (kept for signed links, like its source): unsigned, still refused.
    expectError(await get(`/files/${id}?w=18`), 403, 'signature_required');
  });
});

describe('hostile images', () => {
  test('an SVG stored as image/png is never decoded, in memory or from its cache path next to other files', async () => {
    const victim = await solidImage('png', 20, 20);
    const victimId = await upload(victim);
    expect((await get(`/files/${victimId}`)).status).toBe(200); // its bytes now sit in the edge's blobs/
    const sibling = `${victimId}.${createHash('sha256').update(victim).digest('hex')}`;
    const svg = (pad: number) => Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="20" height="20"><!--${' '.repeat(pad)}--><image width="20" height="20" xlink:href="${sibling}"/></svg>`);
    for (const pad of [0, 1_200_000]) {
      const id = await upload(svg(pad));
      expectError(await get(`/files/${id}?w=20&format=png`), 422, 'invalid_image', `svg padded ${pad}`);
    }
  });

  test('bombs in every source format are refused from their headers, without the memory they claim', async () => {
    expect((await get(`/files/${await warmId}?w=6`)).status).toBe(200);
    const pid = edge.variants.helper.pid!;
    const before = highWater(pid);
    const at = (b: Buffer, marker: number[], from = 0) => b.indexOf(Buffer.from(marker), from);
    const jpeg = await solidImage('jpeg', 8, 8);
    const sof = at(jpeg, [0xff, 0xc0]);
    jpeg.writeUInt16BE(65000, sof + 5);
    jpeg.writeUInt16BE(65000, sof + 7);
    const gif = await solidImage('gif', 8, 8);
    gif.writeUInt16LE(65535, 6);
    gif.writeUInt16LE(65535, 8);
    const desc = at(gif, [0x2c, 0, 0, 0, 0]);
    gif.writeUInt16LE(65535, desc + 5);
    gif.writeUInt16LE(65535, desc + 7);
    const webp = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#123456' } }).webp({ lossless: false }).toBuffer();
    const vp8 = at(webp, [0x9d, 0x01, 0x2a]);
    webp.writeUInt16LE(0x3fff, vp8 + 3);
    webp.writeUInt16LE(0x3fff, vp8 + 5);
    const tiff = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#123456' } }).tiff({ compression: 'none' }).toBuffer();
    const ifd = tiff.readUInt32LE(4);
    for (let e = 0; e < tiff.readUInt16LE(ifd); e++) {
      const p = ifd + 2 + e * 12;
      if (tiff.readUInt16LE(p) === 256 || tiff.readUInt16LE(p) === 257) {
        tiff.writeUInt16LE(4, p + 2); // LONG
        tiff.writeUInt32LE(200_000, p + 8);
      }
    }
    for (const [name, bytes, type] of [['png', await pngBomb(20_000), 'image/png'], ['jpeg', jpeg, 'image/jpeg'], ['gif', gif, 'image/gif'], ['webp', webp, 'image/webp'], ['tiff', tiff, 'image/tiff']] as const) {
      expectError(await get(`/files/${await upload(bytes, type)}?w=100`), 422, 'image_too_large', name);
    }
    expect(highWater(pid) - before).toBeLessThan(100 * 1024 * 1024);
    expect(edge.variants.helper.pid).toBe(pid);
  });

  test('zero bytes, truncated images and parameters out of range get contract errors; the helper lives on', async () => {
    const pid = edge.variants.helper.pid!;
    const png = await solidImage('png', 64, 64);
    const jpeg = await noise(64, 64).jpeg().toBuffer();
    for (const [name, bytes, type] of [['empty', Buffer.alloc(0), 'image/png'], ['png', png.subarray(0, png.length - 30), 'image/png'], ['jpeg', jpeg.subarray(0, jpeg.length / 2), 'image/jpeg']] as const) {
      expectError(await get(`/files/${await upload(bytes, type)}?w=10`), 422, 'invalid_image', name);
    }
    for (const q of ['w=4097', 'h=99999999999', 'w=0', 'w=-1', 'w=1e3']) expectError(await get(`/files/${await warmId}?${q}`), 400, 'invalid_variant', q);
    expect(edge.variants.helper.pid).toBe(pid);
  });

  test('an animated GIF of many frames is made from its first frame', async () => {
    const frames = 300;
    const frame = (i: number) => sharp({ create: { width: 16, height: 16, channels: 3, background: { r: i % 256, g: (i * 7) % 256, b: 9 } } }).png().toBuffer();
    const gif = await sharp(await Promise.all(Array.from({ length: frames }, (_, i) => frame(i))), { join: { animated: true } }).gif().toBuffer();
    expect((await sharp(gif, { pages: -1 }).metadata()).pages).toBeGreaterThan(100);
    const res = await get(`/files/${await upload(gif, 'image/gif')}?w=8`);
    expect(res.status).toBe(200);
    expect(await sharp(res.body, { pages: -1 }).metadata()).toMatchObject({ width: 8, height: 8, pages: 1 });
  });
});

describe('the transform process itself', () => {
  test('a memory source that is a slice of a larger buffer is transformed from exactly its bytes', async () => {
    const tp = new TransformProcess(2);
    try {
      const [red, green, blue] = await Promise.all(['#ff0000', '#00ff00', '#0000ff'].map((c) => sharp({ create: { width: 9, height: 9, channels: 3, background: c } }).png().toBuffer()));
      const pooled = Buffer.concat([red!, green!, blue!]);
      const middle = pooled.subarray(red!.length, red!.length + green!.length);
      expect(middle.byteOffset).not.toBe(0);
      expect(await pixel(await tp.transform({ memory: middle }, { w: 4 }, 'png', 1e8))).toEqual([0, 255, 0]);
    } finally {
      await tp.close();
    }
  });

  test('a variant of several MiB crosses the IPC channel whole', async () => {
    const tp = new TransformProcess(2);
    try {
      const src = await noise(1200, 1100).png().toBuffer();
      const out = await tp.transform({ memory: src }, {}, 'png', 1e8);
      expect(out.length).toBeGreaterThan(1 << 20);
      expect((await sharp(out).raw().toBuffer()).equals(await sharp(src).raw().toBuffer())).toBe(true);
    } finally {
      await tp.close();
    }
  });

  test('a helper that stops answering is replaced after the deadline; a new helper serves the next transform', async () => {
    // The deadline covers the helper's start too (tsx and sharp loading): a few seconds here.
    const tp = new TransformProcess(2, 5000);
    try {
      const png = await solidImage('png', 10, 10);
      await tp.transform({ memory: png }, { w: 5 }, 'png', 1e8);
      const first = tp.pid!;
      process.kill(first, 'SIGSTOP');
      await expect(tp.transform({ memory: png }, { w: 6 }, 'png', 1e8)).rejects.toMatchObject({ status: 503, code: 'edge_unavailable' });
      await vi.waitFor(() => expect(alive(first)).toBe(false));
      expect((await sharp(await tp.transform({ memory: png }, { w: 7 }, 'png', 1e8)).metadata()).width).toBe(7);
      expect(tp.pid).not.toBe(first);
    } finally {
      await tp.close();
    }
  });

  test('close() with transforms in flight answers them 503 and leaves no helper behind; later transforms are refused', async () => {
    const tp = new TransformProcess(2);
    const src = await noise(1500, 1500).png().toBuffer();
    await tp.transform({ memory: await solidImage('png', 4, 4) }, {}, 'png', 1e8);
    const pid = tp.pid!;
    const inFlight = [1, 2, 3].map((i) => tp.transform({ memory: src }, { w: 1000 + i }, 'avif', 1e8).then(() => 200, (e) => e.status));
    await tp.close();
    expect(alive(pid)).toBe(false);
    for (const s of await Promise.all(inFlight)) expect([200, 503]).toContain(s);
    await expect(tp.transform({ memory: src }, {}, 'png', 1e8)).rejects.toMatchObject({ status: 503, code: 'edge_unavailable' });
  });

  test('an edge process that dies leaves no helper behind, idle or busy', async () => {
    const script = `const { TransformProcess } = await import(${JSON.stringify(POOL)});
      const sharp = (await import('sharp')).default;
      const tp = new TransformProcess(2);
      const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } }).png().toBuffer();
      await tp.transform({ memory: png }, {}, 'png', 1e8);
      process.stdout.write(tp.pid + '\\n');
      if (process.argv.includes('busy')) {
        const big = await sharp({ create: { width: 3000, height: 3000, channels: 3, noise: { type: 'gaussian', mean: 128, sigma: 30 } } }).png({ compressionLevel: 0 }).toBuffer();
        for (let i = 0; i < 4; i++) tp.transform({ memory: big }, { w: 2900 - i }, 'avif', 1e9).catch(() => {});
      }
      setInterval(() => {}, 1000);`;
    for (const mode of ['idle', 'busy']) {
      const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
      const helper = await new Promise<number>((resolve, reject) => {
        parent.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
        parent.once('exit', () => reject(new Error('the edge stand-in exited early')));
      });
      expect(alive(helper)).toBe(true);
      if (mode === 'busy') await new Promise((r) => setTimeout(r, 300)); // lets the big transforms reach the helper
      process.kill(parent.pid!, 'SIGKILL');
      await vi.waitFor(() => expect(alive(helper), mode).toBe(false), { timeout: 10_000 });
    }
  });
});
