/** Variant parameters (contract §13), the keyed coalescing and the transform limit. */
import { expect, test } from 'vitest';
import { Coalescer } from '../../src/core/coalesce.js';
import { parseQuery } from '../../src/core/signing.js';
import { outputFormat, readVariant, sourceFormat, variantKey, variantName, variantQuery } from '../../src/core/variants.js';
import { Limiter } from '../../src/edge/variants/limiter.js';

const read = (query: string) => readVariant(parseQuery(query)!);

test('a query names a variant only through the five parameters, each read exactly', () => {
  expect(read('')).toBeNull();
  expect(read('download=1&utm=x')).toBeNull();
  expect(read('w=320&h=1&fit=cover&format=auto&q=100&download=1')).toEqual({ params: { w: 320, h: 1, fit: 'cover', format: 'auto', q: 100 } });
  expect(read('w=4096')).toEqual({ params: { w: 4096 } });
  for (const [query, field] of [['w=4097', 'w'], ['w=0320', 'w'], ['w=+3', 'w'], ['h=1e3', 'h'], ['q=1.0', 'q'], ['fit=Cover', 'fit'], ['format=webp&format=webp', 'format']]) {
    expect(read(query!), query).toMatchObject({ problem: { field } });
  }
});

test('values from create-link and the SDK are checked the same way and written as a URL would be', () => {
  expect(variantQuery({ w: 320, format: 'auto', h: undefined })).toEqual({ query: { w: '320', format: 'auto' } });
  expect(variantQuery({ w: 1.5 })).toMatchObject({ problem: { field: 'w' } });
  expect(variantQuery({ q: '50' })).toEqual({ query: { q: '50' } });
  expect(variantQuery({ size: 3 })).toMatchObject({ problem: { field: 'size' } });
});

test('output formats: asked, auto by Accept, or the source own', () => {
  expect(sourceFormat('image/JPEG; foo=bar')).toBe('jpeg');
  expect(sourceFormat('image/svg+xml')).toBeNull();
  expect(outputFormat({ format: 'png' }, 'jpeg', 'image/avif')).toBe('png');
  expect(outputFormat({ format: 'auto' }, 'jpeg', 'image/avif,image/webp')).toBe('avif');
  expect(outputFormat({ format: 'auto' }, 'jpeg', 'image/webp, image/avif;q=0')).toBe('webp');
  expect(outputFormat({ format: 'auto' }, 'gif', '*/*')).toBe('png');
  expect(outputFormat({ w: 3 }, 'tiff', undefined)).toBe('png');
  expect(outputFormat({ w: 3 }, 'gif', undefined)).toBe('gif');
  expect(variantKey({ w: 3 }, 'png')).not.toBe(variantKey({ h: 3 }, 'png'));
  expect(variantKey({ w: 3 }, 'png')).toBe(variantKey({ w: 3, fit: 'inside' }, 'png'));
  expect(variantName('holiday.photo.JPG', 'webp')).toBe('holiday.photo.webp');
  expect(variantName('noext', 'jpeg')).toBe('noext.jpg');
});

test('coalescing: one run per key while it is under way, released however it ends', async () => {
  const c = new Coalescer<string, number>();
  let runs = 0;
  let release!: (n: number) => void;
  const make = () => {
    runs++;
    return new Promise<number>((r) => (release = r));
  };
  const a = c.run('k', make);
  const b = c.run('k', make);
  expect([a.joined, b.joined]).toEqual([false, true]);
  await Promise.resolve();
  release(7);
  expect(await Promise.all([a.promise, b.promise])).toEqual([7, 7]);
  expect(runs).toBe(1);
  expect(c.has('k')).toBe(false);
  const failing = c.run('k', () => Promise.reject(new Error('no')));
  await expect(failing.promise).rejects.toThrow('no');
  expect(c.run('k', async () => 8).joined).toBe(false);
});

test('the limit: never more than its concurrency at once, in order, and full once its queue is', async () => {
  const limiter = new Limiter({ concurrency: 2, maxQueued: 3, perClient: 100, maxWaitMs: 60_000 });
  let running = 0;
  let most = 0;
  const order: number[] = [];
  const releases: Array<() => void> = [];
  const task = (n: number) => limiter.run('client', async () => {
    running++;
    most = Math.max(most, running);
    await new Promise<void>((r) => releases.push(r));
    order.push(n);
    running--;
  });
  const all = [1, 2, 3, 4, 5].map(task);
  await Promise.resolve();
  expect([limiter.active, limiter.queued, limiter.refusal('another')]).toEqual([2, 3, 'full']);
  while (order.length < 5) {
    releases.shift()?.();
    await new Promise((r) => setTimeout(r, 0));
  }
  await Promise.all(all);
  expect(most).toBe(2);
  expect(order).toEqual([1, 2, 3, 4, 5]);
  expect([limiter.active, limiter.queued, limiter.refusal('another')]).toEqual([0, 0, null]);
});
