/**
 * Contract §13 across three edges: a file's variants are gone or unreachable at every edge
 * once its delete or its switch to Private has answered, and a signed link signs one variant.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { RunningEdge } from '../../src/edge/server.js';
import { signLink } from '../../src/sdk/index.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { expectError } from '../helpers/api.js';
import { solidImage } from '../helpers/images.js';

let o: TestOrigin;
const running: TestEdge[] = [];
const edges: RunningEdge[] = [];

beforeAll(async () => {
  o = await startTestOrigin();
  for (let i = 0; i < 3; i++) {
    running.push(await startTestEdge(o));
    edges.push(running.at(-1)!.edge);
  }
});

afterAll(async () => {
  await Promise.all(running.map((e) => e.close()));
  await o?.close();
});

async function get(edge: RunningEdge, pathAndQuery: string) {
  const res = await fetch(`${edge.url}${pathAndQuery}`);
  const body = Buffer.from(await res.arrayBuffer());
  let json: unknown;
  try {
    json = JSON.parse(body.toString());
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, body, json };
}

const upload = async (name: string, visibility = 'Public') =>
  (await uploadBytes(o, await solidImage('png', 48, 32), { name, file_type: 'image', content_type: 'image/png', visibility })).file_id as string;

/** Makes a variant at every edge and checks each one keeps it. */
async function warm(id: string, query: string): Promise<void> {
  for (const edge of edges) {
    const first = await get(edge, `/files/${id}?${query}`);
    expect(first.status).toBe(200);
    expect((await get(edge, `/files/${id}?${query}`)).headers.get('x-cache')).toBe('HIT');
  }
}

describe('purges', () => {
  test('a delete drops the variants at every edge before it answers', async () => {
    const id = await upload('gone.png');
    await warm(id, 'w=20&format=webp');
    await warm(id, 'w=10');
    const kept = edges.map((e) => e.cache.variantCount);
    expect(kept.every((n) => n >= 2)).toBe(true);
    expect((await o.post('/collections/file/delete', { file_id: id })).status).toBe(200);
    for (const [i, edge] of edges.entries()) {
      expectError(await get(edge, `/files/${id}?w=20&format=webp`), 404, 'not_found');
      expectError(await get(edge, `/files/${id}?w=10`), 404, 'not_found');
      expect(edge.cache.variantCount, `edge ${i}`).toBe(kept[i]! - 2);
    }
  });

  test('a variant being made while its file is deleted is not kept, whichever finishes first', async () => {
    const big = await solidImage('jpeg', 1600, 1200);
    const id = (await uploadBytes(o, big, { name: 'race.jpg', file_type: 'image', content_type: 'image/jpeg' })).file_id as string;
    const before = edges.map((e) => e.cache.variantCount);
    const asked = edges.map((e) => get(e, `/files/${id}?w=300&format=avif`));
    expect((await o.post('/collections/file/delete', { file_id: id })).status).toBe(200);
    for (const [i, res] of (await Promise.all(asked)).entries()) {
      // Bytes only if the transform ended before the delete reached the edge; a 404 otherwise.
      expect([200, 404], `edge ${i}`).toContain(res.status);
      expect(edges[i]!.cache.variantCount, `edge ${i}`).toBe(before[i]);
      expectError(await get(edges[i]!, `/files/${id}?w=300&format=avif`), 404, 'not_found');
    }
  });

  test('a switch to Private makes every edge refuse unsigned variants before it answers; a signed one still works', async () => {
    const id = await upload('private.png');
    await warm(id, 'w=20&format=webp');
    const update = await o.post('/collections/file/update', { file_id: id, visibility: 'Private' });
    expect(update.status).toBe(200);
    for (const edge of edges) expectError(await get(edge, `/files/${id}?w=20&format=webp`), 403, 'signature_required');
    const link = await o.post('/collections/create-link', { file_id: id, file_type: 'image', variant: { w: 20, format: 'webp' } });
    expect(link.status).toBe(200);
    const signed = new URL(link.body.presigned_url);
    for (const edge of edges) {
      const res = await get(edge, signed.pathname + signed.search);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/webp');
      expect(res.headers.get('cache-control')).toBe('private, no-store');
      expect((await sharp(res.body).metadata()).width).toBe(20);
    }
  });
});

describe('signatures over variants', () => {
  let id: string;
  let query: string;
  beforeAll(async () => {
    id = await upload('secret.png', 'Private');
    const link = await o.post('/collections/create-link', { file_id: id, file_type: 'image', expiry: 600, variant: { w: 24, h: 24, fit: 'cover', format: 'jpeg', q: 70 } });
    expect(link.status).toBe(200);
    query = new URL(link.body.presigned_url).search.slice(1);
  });

  test('the signed variant is served at every edge, exactly as signed', async () => {
    for (const edge of edges) {
      const res = await get(edge, `/files/${id}?${query}`);
      expect(res.status).toBe(200);
      expect(await sharp(res.body).metadata()).toMatchObject({ width: 24, height: 24, format: 'jpeg' });
    }
  });

  test('unsigned, or with any parameter changed, added or removed: refused like any signature mismatch', async () => {
    const edge = edges[0]!;
    expectError(await get(edge, `/files/${id}?w=24`), 403, 'signature_required');
    const changed = [
      query.replace('w=24', 'w=25'),
      query.replace('fit=cover', 'fit=contain'),
      query.replace('format=jpeg', 'format=png'),
      query.replace('q=70', 'q=71'),
      query.replace('q=70&', ''),
      `${query}&format=webp`,
      `${query}&w=24`,
    ];
    for (const q of changed) expectError(await get(edge, `/files/${id}?${q}`), 403, 'invalid_signature', q);
    // A link to the original does not stretch to a variant.
    const plain = await o.post('/collections/create-link', { file_id: id, file_type: 'image' });
    const original = new URL(plain.body.presigned_url);
    expect((await get(edge, original.pathname + original.search)).status).toBe(200);
    expectError(await get(edge, `${original.pathname}${original.search}&w=10`), 403, 'invalid_signature');
  });

  test("the SDK's signLink signs a variant the edges accept", async () => {
    const path = await signLink(`/files/${id}`, { secret: o.secret, expiresIn: 60, variant: { w: 12, format: 'png' } });
    const res = await get(edges[1]!, path);
    expect(res.status).toBe(200);
    expect(await sharp(res.body).metadata()).toMatchObject({ width: 12, format: 'png' });
    await expect(signLink(`/files/${id}`, { secret: o.secret, expiresIn: 60, variant: { w: 0 } })).rejects.toThrow(/"w"/);
  });

  test('create-link checks the variant: 400 invalid_variant naming the field, 400 not_an_image', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ w: 0 }, 'variant.w'], [{ h: 5000 }, 'variant.h'], [{ fit: 'fill' }, 'variant.fit'], [{ format: 'bmp' }, 'variant.format'], [{ q: 101 }, 'variant.q'],
    ];
    for (const [variant, field] of cases) {
      expectError(await o.post('/collections/create-link', { file_id: id, file_type: 'image', variant }), 400, 'invalid_variant', { field });
    }
    const text = (await uploadBytes(o, Buffer.from('plain text'), { name: 'a.txt', file_type: 'document', content_type: 'text/plain' })).file_id;
    expectError(await o.post('/collections/create-link', { file_id: text, file_type: 'document', variant: { w: 10 } }), 400, 'not_an_image', { field: 'variant' });
  });
});
