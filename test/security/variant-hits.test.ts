/**
 * Attacks on the edge's synchronous variant hits (src/edge/variants/serve.ts, `hitNow`) and its
 * memos: source format per content type, `format=auto` verdict per (source, Accept), cache key
 * per output on the read query. Every refusal here is asked for a variant that is already kept,
 * so it is the hit path that must refuse it:
 * - Private files: unsigned, expired, signed for other parameters / another file / the original,
 *   re-spelled, revoked, after a switch to Private, after a delete; with HEAD, Range, If-None-Match;
 * - format=auto: one client's Accept never decides another's format, whatever the order, the
 *   length (around and over the 512-character memo limit), casing, q=0 or duplicated headers;
 * - odd query spellings; and the memos stay bounded under endless distinct Accepts and types.
 */
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { nodeHmac } from '../../src/core/hmac-node.js';
import { signPath } from '../../src/core/signing.js';
import { outputFormat, readVariant, type VariantParams } from '../../src/core/variants.js';
import type { RunningEdge } from '../../src/edge/server.js';
import { variantResponder, type VariantDeps } from '../../src/edge/variants/serve.js';
import { expectError } from '../helpers/api.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { rawRequest } from '../helpers/raw-http.js';
import { solidImage } from '../helpers/images.js';
import { ManualClock } from '../kit/index.js';

let o: TestOrigin;
let running: TestEdge;
let edge: RunningEdge;
/** The edge's time: links expire on it without a wait. */
const clock = new ManualClock(Date.now());
const clockSeconds = () => Math.floor(clock.now() / 1000);
/**
 * The edge's heartbeats run on its clock, so it acknowledges only the changes it applies: a lease
 * longer than this file keeps the origin, on its own time, waiting for it on every change.
 */
const LEASE = { COFFER_EDGE_LEASE_MS: '60000' };

beforeAll(async () => {
  o = await startTestOrigin(LEASE);
  running = await startTestEdge(o, () => LEASE, undefined, { clock });
  edge = running.edge;
});

afterAll(async () => {
  await running?.close();
  await o?.close();
});

const upload = async (format: 'png' | 'jpeg', visibility: 'Public' | 'Private') =>
  (await uploadBytes(o, await solidImage(format, 48, 32), { name: `f.${format}`, file_type: 'image', content_type: `image/${format}`, visibility })).file_id as string;

async function get(pathAndQuery: string, headers: Record<string, string | string[]> = {}, method = 'GET') {
  return rawRequest(edge.url, pathAndQuery, { method, headers: headers as Record<string, string> });
}

/** A link signed the way create-link and the SDK sign it; `now` in the past makes an expired one. */
const sign = (id: string, params: Record<string, string>, opts: { expiresIn?: number; now?: number } = {}) =>
  signPath(`/files/${id}`, o.secret, { expiresIn: opts.expiresIn ?? 600, now: opts.now, params }, nodeHmac).pathAndQuery;

/** Asks twice; the second answer must be a hit, so what follows attacks a kept variant. */
async function warm(pathAndQuery: string, headers: Record<string, string> = {}) {
  expect((await get(pathAndQuery, headers)).status).toBe(200);
  const hit = await get(pathAndQuery, headers);
  expect([hit.status, hit.headers['x-cache']]).toEqual([200, 'HIT']);
  return hit;
}

/** The same request in every shape the hit path answers: GET, HEAD, a Range, a matching If-None-Match. */
async function expectRefusedEveryWay(pathAndQuery: string, etag: string, status: number, code: string) {
  for (const [method, headers] of [['GET', {}], ['HEAD', {}], ['GET', { range: 'bytes=0-9' }], ['GET', { 'if-none-match': etag }]] as const) {
    const res = await get(pathAndQuery, headers, method);
    const where = `${method} ${JSON.stringify(headers)} ${pathAndQuery}`;
    if (method === 'HEAD') expect([res.status, res.body.length], where).toEqual([status, 0]);
    else expectError(res, status, code, where);
  }
}

describe('a kept variant of a Private file', () => {
  let id: string;
  let link: string;
  let etag: string;
  beforeAll(async () => {
    id = await upload('png', 'Private');
    link = sign(id, { w: '24', format: 'webp' });
    etag = (await warm(link)).headers.etag as string;
  });

  test('unsigned, expired, signed for other parameters, another file or the original, re-spelled: refused', async () => {
    const kept = edge.cache.variantCount;
    const query = link.split('?')[1]!;
    const other = await upload('png', 'Private');
    const cases: Array<[string, number, string]> = [
      [`/files/${id}?w=24&format=webp`, 403, 'signature_required'],
      [`/files/${id}?format=webp&w=24`, 403, 'signature_required'],
      [`/files/${id}?%77=24&format=webp`, 403, 'signature_required'],
      [sign(id, { w: '24', format: 'webp' }, { now: clockSeconds() - 120, expiresIn: 60 }), 403, 'link_expired'],
      [`/files/${id}?${query.replace('w=24', 'w=25')}`, 403, 'invalid_signature'],
      [`/files/${id}?${query.replace('format=webp', 'format=auto')}`, 403, 'invalid_signature'],
      [`/files/${id}?${query.replace('w=24', '%77=24')}`, 403, 'invalid_signature'],
      [`/files/${id}?${query}&w=24`, 403, 'invalid_signature'],
      [`/files/${id}?${query}&W=24`, 403, 'invalid_signature'],
      [`/files/${id}?${sign(other, { w: '24', format: 'webp' }).split('?')[1]}`, 403, 'invalid_signature'],
      [`${sign(id, {})}&w=24&format=webp`, 403, 'invalid_signature'],
      // A refusal comes before a wrong parameter.
      [`/files/${id}?w=24&w=25&format=webp`, 403, 'signature_required'],
    ];
    for (const [pq, status, code] of cases) await expectRefusedEveryWay(pq, etag, status, code);
    // Still kept, and the right link still hits.
    expect(edge.cache.variantCount).toBe(kept);
    expect((await get(link)).headers['x-cache']).toBe('HIT');
  });

  test('a link that expires while its variant is kept, and whose signature the edge remembers, is refused', async () => {
    const short = sign(id, { w: '24', format: 'webp' }, { expiresIn: 1, now: clockSeconds() });
    const hit = await warm(short);
    expect(hit.headers.etag).toBe(etag);
    await clock.advance(2100);
    await expectRefusedEveryWay(short, etag, 403, 'link_expired');
  });

  test('revoked links are refused on the hit path; a link made afterwards hits the same variant', async () => {
    const before = sign(id, { w: '24', format: 'webp' });
    await warm(before);
    expect((await o.post('/collections/file/revoke-links', { file_id: id })).status).toBe(200);
    await expectRefusedEveryWay(before, etag, 403, 'link_revoked');
    await expectRefusedEveryWay(link, etag, 403, 'link_revoked');
    await new Promise((r) => setTimeout(r, 5));
    const after = await get(sign(id, { w: '24', format: 'webp' }));
    expect([after.status, after.headers['x-cache'], after.headers.etag]).toEqual([200, 'HIT', etag]);
  });
});

describe('a kept variant of a file that changes under it', () => {
  test('switched to Private: every shape of unsigned request is refused, format=auto too; back to Public it hits again', async () => {
    const id = await upload('jpeg', 'Public');
    const webp = await warm(`/files/${id}?w=20&format=webp`);
    const auto = await warm(`/files/${id}?w=20&format=auto`, { accept: 'image/avif' });
    expect((await o.post('/collections/file/update', { file_id: id, visibility: 'Private' })).status).toBe(200);
    await expectRefusedEveryWay(`/files/${id}?w=20&format=webp`, webp.headers.etag as string, 403, 'signature_required');
    for (const accept of ['image/avif', '*/*', 'x'.repeat(600)]) {
      expectError(await get(`/files/${id}?w=20&format=auto`, { accept, 'if-none-match': auto.headers.etag as string }), 403, 'signature_required');
    }
    expect((await o.post('/collections/file/update', { file_id: id, visibility: 'Public' })).status).toBe(200);
    const again = await get(`/files/${id}?w=20&format=webp`);
    expect([again.status, again.headers['x-cache'], again.body.equals(webp.body)]).toEqual([200, 'HIT', true]);
  });

  test('deleted: 404 in every shape, signed or not, and its variants are gone', async () => {
    const id = await upload('png', 'Public');
    const hit = await warm(`/files/${id}?w=20&format=webp`);
    const kept = edge.cache.variantCount;
    expect((await o.post('/collections/file/delete', { file_id: id })).status).toBe(200);
    await expectRefusedEveryWay(`/files/${id}?w=20&format=webp`, hit.headers.etag as string, 404, 'not_found');
    await expectRefusedEveryWay(sign(id, { w: '20', format: 'webp' }), hit.headers.etag as string, 404, 'not_found');
    expect(edge.cache.variantCount).toBe(kept - 1);
  });
});

describe('format=auto', () => {
  const long = (tail: string, length: number) => `${'text/x-pad;q=0.1,'.repeat(Math.ceil(length / 17)).slice(0, length - tail.length - 1)},${tail}`;
  const accepts: Array<string | undefined> = [
    undefined, '*/*', 'image/avif,image/webp,*/*', 'image/webp', 'IMAGE/AVIF', 'Image/WebP;Q=1',
    'image/avif;q=0,image/webp', 'image/avif;Q=0', 'image/avif;q=0.0,image/webp;q=0', 'image/avif;q=0, image/avif',
    // Around the memo's 512-character limit ("png " + Accept), and far over it.
    ...[506, 507, 508, 509, 510, 600, 4000].flatMap((n) => [long('image/avif', n), long('image/webp', n), long('image/jpeg', n)]),
  ];

  test("one client's Accept never decides another's format, in any order, for either source", async () => {
    const ids = { jpeg: await upload('jpeg', 'Public'), png: await upload('png', 'Public') };
    const params = readVariant([['w', '18'], ['format', 'auto']]) as { params: VariantParams };
    // Forwards, backwards and interleaved by source: every verdict is read from the memo at least once.
    const order = [...accepts, ...[...accepts].reverse()];
    for (const accept of order) {
      for (const source of ['jpeg', 'png', 'jpeg'] as const) {
        const res = await get(`/files/${ids[source]}?w=18&format=auto`, accept === undefined ? {} : { accept });
        const want = outputFormat(params.params, source, accept);
        const where = `${source} ${accept?.slice(-40)}`;
        expect([res.status, res.headers['content-type'], res.headers.vary], where).toEqual([200, `image/${want}`, 'Accept']);
        const got = (await sharp(res.body).metadata()).format;
        expect(got === 'heif' ? 'avif' : got, where).toBe(want);
      }
    }
  });

  test('duplicated Accept headers are read together; an ETag of one format never revalidates another', async () => {
    const id = await upload('jpeg', 'Public');
    const q = `/files/${id}?w=19&format=auto`;
    const avif = await warm(q, { accept: 'image/avif' });
    const webp = await warm(q, { accept: 'image/webp' });
    expect(avif.headers.etag).not.toBe(webp.headers.etag);
    expect((await get(q, { accept: ['text/html', 'image/avif'] })).headers['content-type']).toBe('image/avif');
    expect((await get(q, { accept: ['image/avif;q=0', 'image/webp'] })).headers['content-type']).toBe('image/webp');
    const cross = await get(q, { accept: 'image/webp', 'if-none-match': avif.headers.etag as string });
    expect([cross.status, cross.headers['content-type'], cross.body.equals(webp.body)]).toEqual([200, 'image/webp', true]);
    const same = await get(q, { accept: 'image/avif', 'if-none-match': avif.headers.etag as string });
    expect([same.status, same.headers.vary]).toEqual([304, 'Accept']);
    const part = await get(q, { accept: 'image/webp', range: 'bytes=2-9' });
    expect([part.status, part.body.equals(webp.body.subarray(2, 10))]).toEqual([206, true]);
    const head = await get(q, { accept: 'image/avif' }, 'HEAD');
    expect([head.status, head.headers['content-type'], head.headers['content-length'], head.body.length]).toEqual([200, 'image/avif', String(avif.body.length), 0]);
  });
});

describe('odd spellings of a kept variant', () => {
  test('repeated, re-cased, percent-encoded, empty or upper-case values', async () => {
    const id = await upload('png', 'Public');
    const hit = await warm(`/files/${id}?w=20&format=webp`);
    const encoded = await get(`/files/${id}?%77=20&%66ormat=webp`);
    expect([encoded.status, encoded.headers['x-cache'], encoded.headers.etag]).toEqual([200, 'HIT', hit.headers.etag]);
    for (const [q, field] of [['w=20&w=21&format=webp', 'w'], ['w=20&format=webp&format=webp', 'format'], ['w=20&%77=20&format=webp', 'w'],
      ['w=&format=webp', 'w'], ['w&format=webp', 'w'], ['w=20&format=AUTO', 'format'], ['w=20&format=WEBP', 'format'], ['w=20+&format=webp', 'w']]) {
      expectError(await get(`/files/${id}?${q}`), 400, 'invalid_variant', { field }, q);
    }
    // Names are case-sensitive: W and Format are no variant parameters, the original comes back.
    for (const q of ['W=20&Format=webp', 'W=20']) {
      const res = await get(`/files/${id}?${q}`);
      expect([res.status, res.headers['content-type']], q).toEqual([200, 'image/png']);
      expect((await sharp(res.body).metadata()).width, q).toBe(48);
    }
    const mixed = await get(`/files/${id}?w=20&Format=webp`);
    expect([mixed.status, mixed.headers['content-type']]).toEqual([200, 'image/png']);
    expect((await sharp(mixed.body).metadata()).width).toBe(20);
  });
});

describe('the memos stay bounded', () => {
  test('endless distinct Accept headers and content types leave the heap where it was', () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const variant = { memory: Buffer.from('v'), size: 1, etag: 'e' };
    const deps = {
      cache: { lookupVariant: () => variant, capacity: 1 << 20 }, metrics: { body() {} }, publicCache: 'public, no-cache',
      judge: () => 'unavailable', refused: () => true, sendError() {}, track: () => null, stillWanted: () => true,
      maker: { options: { allowed: { sizes: null, qualities: null } } },
    } as unknown as VariantDeps;
    const serve = variantResponder(deps);
    const asked = { params: { w: 10, format: 'auto' as const } };
    const answered: string[] = [];
    const res = { writeHead: (_s: number, h: string[]) => { answered.push(h[1]!); }, end() {} } as unknown as http.ServerResponse;
    const round = (from: number, n: number) => {
      for (let i = from; i < from + n; i++) {
        const file = { file_id: 'f', sha256: 's', name: 'a.png', completed_at: 0, content_type: `image/png; v=${i}${'x'.repeat(400)}` };
        // ~500 characters: under the memo's limit, so each one would be kept if nothing bounded it.
        const accept = `${i},${'a'.repeat(480)},${i % 2 ? 'image/webp' : 'image/jpeg'}`;
        const req = { method: 'GET', headers: { accept } } as unknown as http.IncomingMessage;
        serve(req, res, { sha256: '' } as never, { file, decision: { kind: 'serve', signed: false, download: false } } as never, asked);
      }
    };
    round(0, 2000);
    gc();
    const before = process.memoryUsage().heapUsed;
    // Unbounded, 40,000 × (a ~500-character Accept + a ~420-character type) would be over 35 MB.
    round(2000, 40_000);
    answered.length = 0;
    round(0, 2);
    expect(answered).toEqual(['image/png', 'image/webp']);
    gc();
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(8 * 1024 * 1024);
  });
});
