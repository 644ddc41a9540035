/**
 * Contract §13 at one edge: every variant parameter and every error, the cache and the
 * coalescing of variants, EXIF orientation and metadata, and a decompression bomb.
 */
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import type { RunningEdge } from '../../src/edge/server.js';
import { HELPER_NICE } from '../../src/edge/variants/transform-pool.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { expectError } from '../helpers/api.js';
import { pngBomb, solidImage } from '../helpers/images.js';

let o: TestOrigin;
let running: TestEdge;
let edge: RunningEdge;
const ids: Record<string, string> = {};

beforeAll(async () => {
  o = await startTestOrigin();
  running = await startTestEdge(o);
  edge = running.edge;
  const put = async (key: string, name: string, bytes: Buffer, content_type: string) => {
    ids[key] = (await uploadBytes(o, bytes, { name, file_type: key === 'text' ? 'document' : 'image', content_type })).file_id;
  };
  // 64×48 stored, shown 48×64: EXIF orientation 6 turns it a quarter.
  await put('jpeg', 'photo.jpg', await solidImage('jpeg', 64, 48, { orientation: 6 }), 'image/jpeg');
  await put('png', 'logo.png', await solidImage('png', 40, 40, { alpha: true }), 'image/png');
  await put('gif', 'anim.gif', await solidImage('gif', 20, 10), 'image/gif');
  await put('tiff', 'scan.tiff', await solidImage('tiff', 30, 20), 'image/tiff');
  await put('webp', 'pic.webp', await solidImage('webp', 30, 20), 'image/webp');
  await put('avif', 'pic.avif', await solidImage('avif', 30, 20), 'image/avif');
  await put('text', 'notes.txt', Buffer.from('not an image'), 'text/plain');
  await put('broken', 'broken.jpg', Buffer.from('\xff\xd8\xff\xe0 these bytes claim to be a JPEG and are not', 'latin1'), 'image/jpeg');
  await put('bomb', 'bomb.png', await pngBomb(20_000), 'image/png');
});

afterAll(async () => {
  const helper = edge?.variants.helper.pid;
  await running?.close();
  // The helper goes with its edge.
  if (helper) expect(() => process.kill(helper, 0)).toThrow();
  await o?.close();
});

async function get(id: string, query: string, headers: Record<string, string> = {}, method = 'GET') {
  const res = await fetch(`${edge.url}/files/${id}${query ? `?${query}` : ''}`, { headers, method });
  const body = Buffer.from(await res.arrayBuffer());
  let json: unknown;
  try {
    json = JSON.parse(body.toString());
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, body, json };
}

async function image(id: string, query: string, headers: Record<string, string> = {}) {
  const res = await get(id, query, headers);
  expect(res.status, res.body.toString().slice(0, 200)).toBe(200);
  const meta = await sharp(res.body).metadata();
  return { res, meta };
}

describe('parameters', () => {
  test('w and h alone keep the aspect ratio, after EXIF orientation is applied', async () => {
    expect((await image(ids.jpeg!, 'w=24')).meta).toMatchObject({ width: 24, height: 32, format: 'jpeg' });
    expect((await image(ids.jpeg!, 'h=16')).meta).toMatchObject({ width: 12, height: 16 });
  });

  test('fit: inside (default) stays within, cover fills and crops, contain pads', async () => {
    expect((await image(ids.jpeg!, 'w=30&h=30')).meta).toMatchObject({ width: 23, height: 30 });
    expect((await image(ids.jpeg!, 'w=30&h=30&fit=inside')).meta).toMatchObject({ width: 23, height: 30 });
    expect((await image(ids.jpeg!, 'w=30&h=20&fit=cover')).meta).toMatchObject({ width: 30, height: 20 });
    const contain = await image(ids.png!, 'w=30&h=20&fit=contain');
    expect(contain.meta).toMatchObject({ width: 30, height: 20, hasAlpha: true });
  });

  test('a variant is never larger than its source', async () => {
    expect((await image(ids.png!, 'w=4096')).meta).toMatchObject({ width: 40, height: 40 });
  });

  test('format: each one asked for, with its type and a name to match', async () => {
    for (const [format, type, ext] of [['webp', 'image/webp', 'webp'], ['avif', 'image/avif', 'avif'], ['jpeg', 'image/jpeg', 'jpg'], ['png', 'image/png', 'png']] as const) {
      const { res, meta } = await image(ids.jpeg!, `w=10&format=${format}`);
      expect(meta.format === 'heif' ? 'avif' : meta.format).toBe(format);
      expect(res.headers.get('content-type')).toBe(type);
      expect(res.headers.get('content-disposition')).toContain(`filename="photo.${ext}"`);
      expect(res.headers.get('vary')).toBeNull();
    }
  });

  test('without format each source keeps its own, TIFF becomes PNG', async () => {
    expect((await image(ids.png!, 'w=10')).meta.format).toBe('png');
    expect((await image(ids.gif!, 'w=10')).meta.format).toBe('gif');
    expect((await image(ids.webp!, 'w=10')).meta.format).toBe('webp');
    expect((await image(ids.avif!, 'w=10')).meta.format).toBe('heif');
    expect((await image(ids.tiff!, 'w=10')).meta.format).toBe('png');
  });

  test('format=auto follows Accept and says so with Vary: Accept', async () => {
    const cases: Array<[string | undefined, string, string]> = [
      ['image/avif,image/webp,*/*', 'image/avif', 'jpeg'],
      ['image/webp,*/*;q=0.8', 'image/webp', 'jpeg'],
      ['image/avif;q=0,image/webp', 'image/webp', 'jpeg'],
      ['*/*', 'image/jpeg', 'jpeg'],
      [undefined, 'image/png', 'png'],
      // The same headers again, for the other source: the edge remembers verdicts per source.
      ['*/*', 'image/png', 'png'],
      [undefined, 'image/jpeg', 'jpeg'],
      ['image/webp,*/*;q=0.8', 'image/webp', 'png'],
      ['image/avif,image/webp,*/*', 'image/avif', 'jpeg'],
    ];
    for (const [accept, type, source] of cases) {
      const res = await get(ids[source]!, 'w=10&format=auto', accept ? { accept } : {});
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type'), accept).toBe(type);
      expect(res.headers.get('vary')).toBe('Accept');
    }
  });

  test('q trades size for quality', async () => {
    const low = await get(ids.jpeg!, 'format=webp&q=5');
    const high = await get(ids.jpeg!, 'format=webp&q=100');
    expect(low.status).toBe(200);
    expect(high.status).toBe(200);
    expect(low.body.length).toBeLessThan(high.body.length);
    expect((await image(ids.png!, 'q=20')).meta).toMatchObject({ format: 'png', isPalette: true });
  });

  test('metadata is stripped: no EXIF, no orientation, no ICC profile', async () => {
    const source = await sharp(Buffer.from(await (await fetch(`${edge.url}/files/${ids.jpeg}`)).arrayBuffer())).metadata();
    expect(source.orientation).toBe(6);
    expect(source.exif).toBeDefined();
    const { meta } = await image(ids.jpeg!, 'w=20');
    expect(meta.exif).toBeUndefined();
    expect(meta.orientation).toBeUndefined();
    expect(meta.icc).toBeUndefined();
  });
});

describe('answers', () => {
  test('made once, then kept: MISS then HIT with the same bytes, within the cache bound', async () => {
    const before = edge.cache.usedBytes;
    const first = await get(ids.jpeg!, 'w=33&format=png');
    const second = await get(ids.jpeg!, 'w=33&format=png');
    expect([first.headers.get('x-cache'), second.headers.get('x-cache')]).toEqual(['MISS', 'HIT']);
    expect(second.body.equals(first.body)).toBe(true);
    expect(edge.cache.usedBytes - before).toBeGreaterThanOrEqual(first.body.length);
    expect(first.headers.get('etag')).toBe(second.headers.get('etag'));
    expect(first.headers.get('etag')).not.toBe(`"${(await o.post('/collections/file/get', { file_id: ids.jpeg })).body.sha256}"`);
  });

  test('concurrent requests for a new variant share one transform', async () => {
    const made = edge.variants.made;
    const answers = await Promise.all(Array.from({ length: 8 }, () => get(ids.jpeg!, 'w=17&format=webp')));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(edge.variants.made - made).toBe(1);
    expect(answers.filter((a) => a.headers.get('x-cache') === 'MISS')).toHaveLength(1);
    expect(new Set(answers.map((a) => a.body.toString('base64'))).size).toBe(1);
  });

  test('ETag revalidation, ranges, HEAD and download', async () => {
    const full = await get(ids.png!, 'w=20&format=webp');
    const etag = full.headers.get('etag')!;
    expect((await get(ids.png!, 'w=20&format=webp', { 'if-none-match': etag })).status).toBe(304);
    const part = await get(ids.png!, 'w=20&format=webp', { range: 'bytes=0-9' });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 0-9/${full.body.length}`);
    expect(part.body.equals(full.body.subarray(0, 10))).toBe(true);
    expectError(await get(ids.png!, 'w=20&format=webp', { range: `bytes=${full.body.length}-` }), 416, 'range_not_satisfiable');
    const head = await get(ids.png!, 'w=20&format=webp', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(full.body.length));
    const download = await get(ids.png!, 'w=20&format=webp&download=1');
    expect(download.headers.get('content-disposition')).toMatch(/^attachment; filename="logo\.webp"/);
    expect(full.headers.get('cache-control')).toBe('public, no-cache');
    expect(full.headers.get('x-content-type-options')).toBe('nosniff');
  });

  test('a variant over 1 MiB is kept on disk and sent from there, whole and in ranges', async () => {
    const noise = await sharp({ create: { width: 800, height: 800, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();
    const id = (await uploadBytes(o, noise, { name: 'noise.png', file_type: 'image', content_type: 'image/png' })).file_id;
    const first = await get(id, 'w=790');
    const second = await get(id, 'w=790');
    expect(first.body.length).toBeGreaterThan(1024 * 1024);
    expect([first.status, first.headers.get('x-cache'), second.status, second.headers.get('x-cache')]).toEqual([200, 'MISS', 200, 'HIT']);
    expect(second.body.equals(first.body)).toBe(true);
    expect(Number(first.headers.get('content-length'))).toBe(first.body.length);
    expect((await sharp(second.body).metadata()).width).toBe(790);
    const tail = await get(id, 'w=790', { range: 'bytes=-1000' });
    expect(tail.status).toBe(206);
    expect(tail.body.equals(first.body.subarray(first.body.length - 1000))).toBe(true);
  });

  test('a query without variant parameters still gets the original', async () => {
    const res = await get(ids.png!, 'utm=1');
    expect(res.headers.get('content-type')).toBe('image/png');
    expect((await sharp(res.body).metadata()).width).toBe(40);
  });
});

describe('errors', () => {
  test('every wrong parameter: 400 invalid_variant naming it', async () => {
    const wrong: Array<[string, string]> = [
      ['w=0', 'w'], ['w=4097', 'w'], ['w=abc', 'w'], ['w=012', 'w'], ['w=1.5', 'w'], ['w=', 'w'], ['w=10&w=20', 'w'],
      ['h=0', 'h'], ['h=99999', 'h'], ['h=-1', 'h'],
      ['fit=fill', 'fit'], ['fit=COVER', 'fit'],
      ['format=gif', 'format'], ['format=jpg', 'format'], ['format=', 'format'],
      ['q=0', 'q'], ['q=101', 'q'], ['q=high', 'q'],
    ];
    for (const [query, field] of wrong) expectError(await get(ids.jpeg!, query), 400, 'invalid_variant', { field }, query);
  });

  test('variant parameters on a file that is no image: 400 not_an_image', async () => {
    expectError(await get(ids.text!, 'w=10'), 400, 'not_an_image');
    // The file itself is still served.
    expect((await get(ids.text!, '')).status).toBe(200);
  });

  test('an image that cannot be decoded: 422', async () => {
    expectError(await get(ids.broken!, 'w=10'), 422, 'invalid_image');
    expect((await get(ids.broken!, '')).status).toBe(200);
  });

  test('a decompression bomb is refused from its header, without the memory it claims', async () => {
    // Transforms run in the edge's helper process: its high-water mark is what a decode would raise.
    expect((await get(ids.png!, 'w=12')).status).toBe(200);
    const helper = edge.variants.helper.pid!;
    const highWater = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${helper}/status`, 'utf8'))![1]) * 1024;
    const before = highWater();
    const res = await get(ids.bomb!, 'w=100');
    expectError(res, 422, 'image_too_large');
    // 20,000² pixels decode to 400 MB; refused before decoding, the helper grew by far less.
    expect(highWater() - before).toBeLessThan(100 * 1024 * 1024);
    expect(edge.variants.helper.pid).toBe(helper);
    expect((await get(ids.png!, 'w=11')).status).toBe(200);
  });

  test('transforms run in a helper process at a lower priority than the edge', () => {
    const helper = edge.variants.helper.pid!;
    expect(helper).not.toBe(process.pid);
    // Field 19 of /proc/<pid>/stat is the niceness (after the command, which is in parentheses).
    const nice = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
    expect(nice(helper)).toBe(nice(process.pid) + HELPER_NICE);
  });

  test('a helper that dies mid-transform costs those requests a 503, and the next variant starts a new one', async () => {
    const first = edge.variants.helper.pid!;
    const pending = get(ids.png!, 'w=13');
    process.kill(first, 'SIGKILL');
    const res = await pending;
    // Killed before or after it answered: either way the request got a contract answer.
    if (res.status !== 200) expectError(res, 503, 'edge_unavailable');
    await vi.waitFor(() => expect(edge.variants.helper.pid).not.toBe(first));
    expect((await get(ids.png!, 'w=14')).status).toBe(200);
    expect(edge.variants.helper.pid).not.toBe(first);
  });

  test('the delivery rules come first: an unknown file is 404 whatever its parameters', async () => {
    expectError(await get('nosuchfile', 'w=0'), 404, 'not_found');
  });
});
