/**
 * Contract §5–§7: the delivery network, black box. One origin and three edges run as
 * child processes of the built CLI (`dist/cli/main.js`); every edge reaches the origin
 * through its own TCP proxy in this process, so one can be cut off silently. Every check
 * is made at every edge, with the path and query of the URLs the origin returns (links
 * are host-independent). Edge C runs with COFFER_PUBLIC_MAX_AGE.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCoffer, stopAll, type CofferProcess } from '../helpers/processes.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { expectError } from '../helpers/api.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';
import { tusClient } from '../helpers/tus.js';
import { isInlineSafe } from '../../src/edge/delivery.js';
import { jsonClient, sha256, sleep, upload as uploadBytes } from '../kit/index.js';

// Long enough that a test process busy with a large body (it proxies every edge's feed) does
// not starve an edge of its lease; the timing checks below are relative to it (and a recheck
// with the origin gives up after a third of it, under the 1 s a cut-off edge may keep a request).
// They are on the wall clock: the origin and edges are processes, out of reach of a clock moved
// by hand (the lease rules run on one in test/unit/feed-*.test.ts).
const LEASE_MS = 2400;
const MAX_AGE = 120;
const CDN = 'http://cdn.test';
const KEY = 'edge-key-' + randomBytes(8).toString('hex');
const SECRET = 'edge-secret-' + randomBytes(8).toString('hex');
const EDGE_TOKEN = 'edge-token-' + randomBytes(8).toString('hex');
const CHUNK = 5 * 1024 * 1024;

const nowSeconds = () => Math.floor(Date.now() / 1000);

// ---------------------------------------------------------------- HTTP

type Res = RawAnswer;
const request = (base: string, path: string, opts: { method?: 'GET' | 'HEAD'; headers?: Record<string, string>; timeoutMs?: number } = {}) =>
  rawRequest(base, path, opts);

// ---------------------------------------------------------------- the fleet

interface Edge {
  name: string;
  proc: CofferProcess;
  url: string;
  port: number;
  proxy: TcpProxy;
  dataDir: string;
  maxAge: number | null;
}

let root = '';
let origin: CofferProcess;
let originUrl = '';
const edges: Edge[] = [];

function edgeEnv(e: { dataDir: string; maxAge: number | null }, port = 0): Record<string, string | undefined> {
  return {
    COFFER_EDGE_PORT: String(port), COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: e.dataDir, COFFER_SIGNING_SECRET: SECRET, COFFER_EDGE_TOKEN: EDGE_TOKEN,
    COFFER_EDGE_LEASE_MS: String(LEASE_MS), COFFER_LOG_LEVEL: 'warn',
    COFFER_PUBLIC_MAX_AGE: e.maxAge === null ? undefined : String(e.maxAge),
  };
}

function spawnEdge(e: { name: string; dataDir: string; maxAge: number | null; proxy: TcpProxy }, port = 0): CofferProcess {
  return spawnCoffer({ kind: 'edge', name: `edge ${e.name}`, args: ['edge', '--origin', e.proxy.url], env: edgeEnv(e, port) });
}

/** The origin's API with the root key. */
const api = <T = any>(path: string, body: unknown) => jsonClient(originUrl, KEY).post<T>(path, body);

async function ok<T = any>(path: string, body: unknown): Promise<T> {
  const r = await api<T>(path, body);
  expect(r.status, `${path} ${JSON.stringify(body)} → ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
}

interface Uploaded {
  rec: any;
  bytes: Buffer;
  /** Path of its delivery URL, e.g. /files/ID. */
  path: string;
}

async function upload(bytes: Buffer, fields: Record<string, unknown>): Promise<Uploaded> {
  const rec = await uploadBytes(jsonClient(originUrl, KEY), bytes, fields, { parallel: true });
  expect(rec.status).toBe('ready');
  expect(rec.sha256).toBe(sha256(bytes));
  return { rec, bytes, path: pathOf(rec.delivery_url) };
}

/** The path and query of a URL the origin returned, to be asked of each edge. */
function pathOf(url: string): string {
  expect(url.startsWith(CDN + '/'), url).toBe(true);
  return url.slice(CDN.length);
}

async function signedPath(fileId: string, fileType: string, expiry?: number): Promise<string> {
  const r = await ok('/collections/create-link', { file_id: fileId, file_type: fileType, ...(expiry === undefined ? {} : { expiry }) });
  return pathOf(r.presigned_url);
}

/** Runs `fn` at every edge at once. */
/** Runs a check at every edge; a failing one carries that edge's recent log lines. */
function atEvery<T>(fn: (e: Edge) => Promise<T>, list: Edge[] = edges): Promise<T[]> {
  return Promise.all(list.map((e) => fn(e).catch((err: unknown) => {
    const log = e.proc.stdout().trim().split('\n').slice(-8).join('\n');
    if (err instanceof Error && log) err.message += `\n${e.name}'s last log lines:\n${log}`;
    throw err;
  })));
}

// ---------------------------------------------------------------- expectations

/** An error answer to HEAD: the status, and no file bytes. */
function expectHeadError(r: Res, status: number, where: string): void {
  expect(r.status, where).toBe(status);
  expect(r.body.length, where).toBe(0);
}

/** RFC 6266 / RFC 8187: the disposition type and the decoded `filename*`. */
function parseDisposition(h: string | undefined, where: string): { type: string; filename: string } {
  expect(h, `${where}: Content-Disposition`).toBeTypeOf('string');
  const type = h!.split(';')[0]!.trim().toLowerCase();
  const m = /(?:^|;)\s*filename\*\s*=\s*UTF-8''([^;\s]*)/i.exec(h!);
  expect(m, `${where}: filename* in ${h}`).not.toBeNull();
  // attr-char of RFC 8187, plus percent escapes.
  expect(m![1], `${where}: ${h}`).toMatch(/^[A-Za-z0-9!#$&+\-.^_`|~%]+$/);
  return { type, filename: decodeURIComponent(m![1]!) };
}

interface BytesExpectation {
  file: Uploaded;
  signed: boolean;
  disposition?: 'inline' | 'attachment';
  name?: string;
}

/** The headers every answer with bytes carries (contract §7). */
function expectByteHeaders(r: Res, e: Edge, x: BytesExpectation, where: string): void {
  const h = r.headers;
  expect(h['content-type'], where).toBe(x.file.rec.content_type);
  expect(h['etag'], where).toBe(`"${x.file.rec.sha256}"`);
  expect(h['accept-ranges'], where).toBe('bytes');
  expect(h['x-content-type-options'], where).toBe('nosniff');
  expect(h['x-cache'], where).toMatch(/^(HIT|MISS)$/);
  const lm = h['last-modified'];
  expect(lm, where).toBeTypeOf('string');
  // Last-Modified is the completion time (the record's updated_at at completion), to the second.
  expect(Date.parse(lm!), `${where}: Last-Modified ${lm}`).toBe(Math.floor(Date.parse(x.file.rec.updated_at) / 1000) * 1000);
  const cc = h['cache-control'];
  if (x.signed) expect(cc, where).toBe('private, no-store');
  else expect(cc, where).toBe(e.maxAge === null ? 'public, no-cache' : `public, max-age=${e.maxAge}`);
  const d = parseDisposition(h['content-disposition'], where);
  expect(d.type, `${where}: ${h['content-disposition']}`).toBe(x.disposition ?? (isInlineSafe(x.file.rec.content_type) ? 'inline' : 'attachment'));
  expect(d.filename, where).toBe(x.name ?? x.file.rec.name);
}

/** 200 with exactly the file's bytes and every header. */
function expectBytes(r: Res, e: Edge, x: BytesExpectation, where: string): void {
  expect(r.status, `${where}: ${r.body.toString().slice(0, 300)}`).toBe(200);
  expect(r.headers['content-length'], where).toBe(String(x.file.bytes.length));
  expect(r.body.length, where).toBe(x.file.bytes.length);
  expect(sha256(r.body), where).toBe(x.file.rec.sha256);
  expectByteHeaders(r, e, x, where);
}

// ---------------------------------------------------------------- fixtures

const UNICODE_NAME = 'Fotó 日本 ☀ "q";%20.png';
let big: Uploaded;
let priv: Uploaded;
let priv2: Uploaded;
let html: Uploaded;
let svg: Uploaded;
let privLink = '';
let shortLink = '';
let shortLinkExpires = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'coffer-edge-e2e-'));
  origin = spawnCoffer({
    kind: 'origin', name: 'origin', args: ['origin'],
    env: {
      COFFER_HOST: '127.0.0.1', COFFER_PORT: '0', COFFER_DATA_DIR: join(root, 'origin'), COFFER_ACCESS_KEY: KEY,
      COFFER_SIGNING_SECRET: SECRET, COFFER_EDGE_TOKEN: EDGE_TOKEN, COFFER_CDN_URL: CDN, COFFER_EDGE_LEASE_MS: String(LEASE_MS),
      COFFER_RATE_LIMIT: '100000', COFFER_LOG_LEVEL: 'warn',
    },
  });
  originUrl = await origin.ready;
  const o = new URL(originUrl);
  const specs = [
    { name: 'A', maxAge: null },
    { name: 'B', maxAge: null },
    { name: 'C', maxAge: MAX_AGE },
  ];
  const started = await Promise.all(specs.map(async (s) => {
    const proxy = await TcpProxy.start(o.hostname, Number(o.port));
    const e = { ...s, proxy, dataDir: join(root, `edge-${s.name}`) };
    const proc = spawnEdge(e);
    const url = await proc.ready;
    return { ...e, proc, url, port: Number(new URL(url).port) } satisfies Edge;
  }));
  edges.push(...started);

  [big, priv, priv2, html, svg] = await Promise.all([
    // Two parts: the edge must put the chunks together.
    upload(randomBytes(CHUNK + 12_345), { name: UNICODE_NAME, file_type: 'image' }),
    upload(randomBytes(1000), { name: 'secret notes.txt', visibility: 'Private', file_type: 'document' }),
    upload(randomBytes(700), { name: 'other secret.bin', visibility: 'Private', file_type: 'other' }),
    upload(Buffer.from('<!doctype html><script>alert(document.cookie)</script>'), { name: 'page.html', file_type: 'document' }),
    upload(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), { name: 'icon.svg', file_type: 'image' }),
  ]);
  privLink = await signedPath(priv.rec.file_id, 'document');
  // Made now so that it has expired by the time its test runs.
  shortLink = await signedPath(priv.rec.file_id, 'document', 1);
  shortLinkExpires = Number(new URLSearchParams(shortLink.split('?')[1]).get('X-Expires'));
}, 60_000);

afterAll(async () => {
  await stopAll();
  await Promise.all(edges.map((e) => e.proxy.close()));
  if (root) await rm(root, { recursive: true, force: true });
});

// ---------------------------------------------------------------- tests

describe('edge fleet', () => {
  it('answers GET /healthz with 200 {"status":"ok"} at every edge', async () => {
    await atEvery(async (e) => {
      const r = await request(e.url, '/healthz');
      expect(r.status, e.name).toBe(200);
      expect(r.json, e.name).toEqual({ status: 'ok' });
    });
  });

  it('has a file at every edge once complete-upload returns: the first request anywhere is a HIT', async () => {
    const [pub, sec] = await Promise.all([
      upload(randomBytes(300_000), { name: 'fresh.bin' }),
      upload(randomBytes(20_000), { name: 'fresh secret.bin', visibility: 'Private' }),
    ]);
    const link = await signedPath(sec.rec.file_id, 'other');
    await atEvery(async (e) => {
      const [a, b] = await Promise.all([request(e.url, pub.path), request(e.url, link)]);
      expectBytes(a, e, { file: pub, signed: false }, `${e.name} public`);
      expect(a.headers['x-cache'], e.name).toBe('HIT');
      expectBytes(b, e, { file: sec, signed: true }, `${e.name} signed`);
      expect(b.headers['x-cache'], e.name).toBe('HIT');
    });
  });

  it('has a file uploaded through /tus at every edge once its last PATCH returns, as after complete-upload', async () => {
    const t = tusClient(originUrl, `Bearer ${KEY}`);
    const folder = await ok('/collections/folder/create', { name: 'by tus', visibility: 'Public' });
    const viaTus = async (bytes: Buffer, meta: Record<string, string>): Promise<Uploaded> => {
      const location = (await t.create(bytes.length, { ...meta, folder_id: folder.folder_id })).headers.location!;
      // The first PATCH ends inside a part; the last crosses into the next.
      const cut = 3 * 1024 * 1024 + 7;
      expect((await t.patch(location, 0, bytes.subarray(0, cut))).status).toBe(204);
      const last = await t.patch(location, cut, bytes.subarray(cut));
      expect(last.status).toBe(204);
      const rec = await ok('/collections/file/get', { file_id: last.headers['coffer-file-id'] });
      expect([rec.status, rec.sha256]).toEqual(['ready', sha256(bytes)]);
      return { rec, bytes, path: pathOf(rec.delivery_url) };
    };
    const [pub, sec] = await Promise.all([
      viaTus(randomBytes(CHUNK + 1000), { filename: 'tus public.bin', visibility: 'Public' }),
      viaTus(randomBytes(CHUNK + 2000), { filename: 'tus private.txt', filetype: 'text/plain', visibility: 'Private' }),
    ]);
    const link = await signedPath(sec.rec.file_id, 'document');
    await atEvery(async (e) => {
      const [a, b] = await Promise.all([request(e.url, pub.path), request(e.url, link)]);
      expectBytes(a, e, { file: pub, signed: false }, `${e.name} public`);
      expect(a.headers['x-cache'], e.name).toBe('HIT');
      expectBytes(b, e, { file: sec, signed: true }, `${e.name} signed`);
      expect(b.headers['x-cache'], e.name).toBe('HIT');
    });
  });

  it('has every file at every edge when many complete at once: each first request is a HIT', async () => {
    // Each file is asked for at every edge the moment its own complete-upload returns.
    const results = await Promise.all(Array.from({ length: 16 }, async (_, i) => {
      const f = await upload(randomBytes(1_000_000), { name: `burst-${i}.bin` });
      return atEvery(async (e) => {
        const r = await request(e.url, f.path);
        expectBytes(r, e, { file: f, signed: false }, `${e.name} burst-${i}`);
        return `${e.name} burst-${i}: ${r.headers['x-cache']}`;
      });
    }));
    const misses = results.flat().filter((line) => !line.endsWith('HIT'));
    expect(misses, 'first requests answered from outside the cache').toEqual([]);
  });

  it('serves a Public two-part file with exactly its bytes and every header at every edge', async () => {
    await atEvery(async (e) => {
      const r = await request(e.url, big.path);
      expectBytes(r, e, { file: big, signed: false }, e.name);
      // Nobody asked this edge for it before: it was prewarmed at completion.
      expect(r.headers['x-cache'], e.name).toBe('HIT');
      const again = await request(e.url, big.path);
      expectBytes(again, e, { file: big, signed: false }, `${e.name} again`);
      expect(again.headers['x-cache'], e.name).toBe('HIT');
    });
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    await atEvery(async (e) => {
      const r = await request(e.url, big.path, { method: 'HEAD' });
      expect(r.status, e.name).toBe(200);
      expect(r.body.length, e.name).toBe(0);
      expect(r.headers['content-length'], e.name).toBe(String(big.bytes.length));
      expectByteHeaders(r, e, { file: big, signed: false }, `${e.name} HEAD`);
      const s = await request(e.url, privLink, { method: 'HEAD' });
      expect(s.status, e.name).toBe(200);
      expect(s.body.length, e.name).toBe(0);
      expect(s.headers['content-length'], e.name).toBe(String(priv.bytes.length));
      expectByteHeaders(s, e, { file: priv, signed: true }, `${e.name} signed HEAD`);
    });
  });

  it('answers Range with 206 and Content-Range, and an unsatisfiable one with 416', async () => {
    const size = big.bytes.length;
    const cases: Array<[string, number, number]> = [
      ['bytes=0-99', 0, 99],
      [`bytes=${CHUNK - 10}-${CHUNK + 9}`, CHUNK - 10, CHUNK + 9], // across the part boundary
      ['bytes=-25', size - 25, size - 1],
      [`bytes=${size - 7}-`, size - 7, size - 1],
      [`bytes=${size - 3}-${size + 1000}`, size - 3, size - 1],
    ];
    await atEvery(async (e) => {
      for (const [range, first, last] of cases) {
        const where = `${e.name} ${range}`;
        const r = await request(e.url, big.path, { headers: { range } });
        expect(r.status, where).toBe(206);
        expect(r.headers['content-range'], where).toBe(`bytes ${first}-${last}/${size}`);
        expect(r.headers['content-length'], where).toBe(String(last - first + 1));
        expect(r.body.equals(big.bytes.subarray(first, last + 1)), where).toBe(true);
        expect(r.headers['etag'], where).toBe(`"${big.rec.sha256}"`);
        expect(r.headers['accept-ranges'], where).toBe('bytes');
        expect(r.headers['x-content-type-options'], where).toBe('nosniff');
        expect(r.headers['x-cache'], where).toMatch(/^(HIT|MISS)$/);
      }
      const signed = await request(e.url, privLink, { headers: { range: 'bytes=10-19' } });
      expect(signed.status, e.name).toBe(206);
      expect(signed.body.equals(priv.bytes.subarray(10, 20)), e.name).toBe(true);
      expect(signed.headers['cache-control'], e.name).toBe('private, no-store');
      for (const range of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`]) {
        const r = await request(e.url, big.path, { headers: { range } });
        expect(r.status, `${e.name} ${range}`).toBe(416);
        expect(r.headers['content-range'], `${e.name} ${range}`).toBe(`bytes */${size}`);
        expect(r.body.length < 1000, `${e.name} ${range}: no file bytes`).toBe(true);
      }
    });
  });

  it('answers 304 to If-None-Match with the ETag and to If-Modified-Since at or after Last-Modified', async () => {
    await atEvery(async (e) => {
      const first = await request(e.url, big.path, { method: 'HEAD' });
      const etag = first.headers['etag']!;
      const lastModified = first.headers['last-modified']!;
      const inm = await request(e.url, big.path, { headers: { 'if-none-match': etag } });
      expect(inm.status, `${e.name} If-None-Match`).toBe(304);
      expect(inm.body.length, e.name).toBe(0);
      expect(inm.headers['etag'], e.name).toBe(etag);
      const listed = await request(e.url, big.path, { headers: { 'if-none-match': `"0000", ${etag}` } });
      expect(listed.status, `${e.name} If-None-Match list`).toBe(304);
      const other = await request(e.url, big.path, { headers: { 'if-none-match': '"not-the-etag"' } });
      expect(other.status, `${e.name} other ETag`).toBe(200);
      expect(sha256(other.body), e.name).toBe(big.rec.sha256);
      const ims = await request(e.url, big.path, { headers: { 'if-modified-since': lastModified } });
      expect(ims.status, `${e.name} If-Modified-Since =`).toBe(304);
      expect(ims.body.length, e.name).toBe(0);
      const later = new Date(Date.parse(lastModified) + 60_000).toUTCString();
      expect((await request(e.url, big.path, { headers: { 'if-modified-since': later } })).status, `${e.name} later`).toBe(304);
      const earlier = new Date(Date.parse(lastModified) - 60_000).toUTCString();
      const old = await request(e.url, big.path, { headers: { 'if-modified-since': earlier } });
      expect(old.status, `${e.name} If-Modified-Since earlier`).toBe(200);
      expect(sha256(old.body), e.name).toBe(big.rec.sha256);
      // Signed answers revalidate too.
      const s = await request(e.url, privLink, { headers: { 'if-none-match': `"${priv.rec.sha256}"` } });
      expect(s.status, `${e.name} signed If-None-Match`).toBe(304);
    });
  });

  it('makes ?download=1 and the download_url an attachment with a UTF-8 filename*', async () => {
    const pubDl = await ok('/collections/file/download', { file_id: big.rec.file_id });
    const privDl = await ok('/collections/file/download', { file_id: priv.rec.file_id });
    await atEvery(async (e) => {
      const r = await request(e.url, `${big.path}?download=1`);
      expectBytes(r, e, { file: big, signed: false, disposition: 'attachment', name: UNICODE_NAME }, `${e.name} ?download=1`);
      const d = await request(e.url, pathOf(pubDl.download_url));
      expectBytes(d, e, { file: big, signed: false, disposition: 'attachment' }, `${e.name} public download_url`);
      const p = await request(e.url, pathOf(privDl.download_url));
      expectBytes(p, e, { file: priv, signed: true, disposition: 'attachment' }, `${e.name} private download_url`);
    });
  });

  it('never serves HTML or SVG inline', async () => {
    const link = await signedPath(html.rec.file_id, 'document');
    await atEvery(async (e) => {
      for (const f of [html, svg]) {
        const r = await request(e.url, f.path);
        expectBytes(r, e, { file: f, signed: false, disposition: 'attachment' }, `${e.name} ${f.rec.name}`);
        expect(r.headers['content-type'], e.name).toMatch(/^(text\/html|image\/svg\+xml)/);
      }
      const s = await request(e.url, link);
      expectBytes(s, e, { file: html, signed: true, disposition: 'attachment' }, `${e.name} signed html`);
    });
  });

  it('refuses a Private file unsigned (403 signature_required) and serves it signed', async () => {
    const pubLink = await signedPath(big.rec.file_id, 'image');
    await atEvery(async (e) => {
      expectError(await request(e.url, priv.path), 403, 'signature_required', `${e.name} unsigned`);
      expectError(await request(e.url, `${priv.path}?download=1`), 403, 'signature_required', `${e.name} unsigned download`);
      expectHeadError(await request(e.url, priv.path, { method: 'HEAD' }), 403, `${e.name} unsigned HEAD`);
      expectError(await request(e.url, priv.path, { headers: { range: 'bytes=0-9' } }), 403, 'signature_required', `${e.name} unsigned Range`);
      expectBytes(await request(e.url, privLink), e, { file: priv, signed: true }, `${e.name} signed`);
      // A signed answer is private even for a Public file.
      expectBytes(await request(e.url, pubLink), e, { file: big, signed: true }, `${e.name} Public file, signed`);
    });
  });

  it('refuses a wrong signature with 403 invalid_signature: tampered, changed expiry, another file, an added parameter', async () => {
    const [path, query] = privLink.split('?') as [string, string];
    const params = new URLSearchParams(query);
    const sig = params.get('X-Sig')!;
    const expires = params.get('X-Expires')!;
    const flipped = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
    const pubLink = await signedPath(big.rec.file_id, 'image');
    const bad: Array<[string, string]> = [
      ['tampered signature', `${path}?X-Expires=${expires}&X-Sig=${flipped}`],
      ['truncated signature', `${path}?X-Expires=${expires}&X-Sig=${sig.slice(0, -1)}`],
      ['changed expiry', `${path}?X-Expires=${Number(expires) + 1}&X-Sig=${sig}`],
      ['link for another file', `${priv2.path}?${query}`],
      ['added parameter', `${privLink}&foo=bar`],
      ['added download=1', `${privLink}&download=1`],
      ['X-Expires without X-Sig', `${path}?X-Expires=${expires}`],
      ['X-Sig without X-Expires', `${path}?X-Sig=${sig}`],
      ['tampered signature on a Public file', `${pubLink.split('&X-Sig=')[0]}&X-Sig=${flipped}`],
    ];
    await atEvery(async (e) => {
      for (const [what, p] of bad) {
        expectError(await request(e.url, p), 403, 'invalid_signature', `${e.name} ${what}`);
        expectHeadError(await request(e.url, p, { method: 'HEAD' }), 403, `${e.name} ${what} HEAD`);
      }
      expectError(await request(e.url, `${path}?X-Expires=${expires}&X-Sig=${flipped}`, { headers: { range: 'bytes=0-9' } }), 403, 'invalid_signature', `${e.name} tampered Range`);
      // An unknown file is 404 before any signature check.
      expectError(await request(e.url, `/files/${'x'.repeat(22)}?${query}`), 404, 'not_found', `${e.name} unknown id, signed`);
    });
  });

  it('refuses an expired link with 403 link_expired, Range included', async () => {
    while (nowSeconds() <= shortLinkExpires) await sleep(100);
    const [path, query] = shortLink.split('?') as [string, string];
    const sig = new URLSearchParams(query).get('X-Sig')!;
    await atEvery(async (e) => {
      expectError(await request(e.url, shortLink), 403, 'link_expired', `${e.name} expired`);
      expectError(await request(e.url, shortLink, { headers: { range: 'bytes=0-9' } }), 403, 'link_expired', `${e.name} expired Range`);
      expectError(await request(e.url, shortLink, { headers: { 'if-none-match': `"${priv.rec.sha256}"` } }), 403, 'link_expired', `${e.name} expired If-None-Match`);
      expectHeadError(await request(e.url, shortLink, { method: 'HEAD' }), 403, `${e.name} expired HEAD`);
      // A wrong signature is refused as such, before its expiry is looked at.
      const flipped = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
      expectError(await request(e.url, `${path}?X-Expires=${shortLinkExpires}&X-Sig=${flipped}`), 403, 'invalid_signature', `${e.name} expired and tampered`);
    });
  });

  it('answers 404 not_found for an unknown file and for one still uploading', async () => {
    const s = await ok('/collections/upload/file', { name: 'pending.bin', visibility: 'Public', size: 10, file_type: 'other' });
    await ok('/collections/upload/file-progress', { bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 1, body: randomBytes(10).toString('base64') });
    await atEvery(async (e) => {
      expectError(await request(e.url, `/files/${s.fileId}`), 404, 'not_found', `${e.name} uploading`);
      expectError(await request(e.url, `/files/${'N'.repeat(22)}`), 404, 'not_found', `${e.name} unknown`);
      expectHeadError(await request(e.url, `/files/${'N'.repeat(22)}`, { method: 'HEAD' }), 404, `${e.name} unknown HEAD`);
    });
  });

  it('refuses .., encoded slashes and NUL in the path with a 4xx JSON error', async () => {
    const id = big.rec.file_id as string;
    const paths = [
      `/files/..`,
      `/files/../files/${id}`,
      `/files/${id}/..`,
      `/files/%2e%2e/files/${id}`,
      `/files/..%2Ffiles%2F${id}`,
      `/files/${id}%2F..`,
      `/files/x%2F${id}`,
      `/files/x%2f${id}`,
      `/files/${id}%00`,
      `/files/%00${id}`,
      `/files/../healthz`,
    ];
    await atEvery(async (e) => {
      for (const p of paths) {
        const r = await request(e.url, p);
        expect(r.status, `${e.name} ${p}`).toBeGreaterThanOrEqual(400);
        expect(r.status, `${e.name} ${p}`).toBeLessThan(500);
        expect(typeof r.json?.error?.code, `${e.name} ${p}: ${r.body.toString().slice(0, 200)}`).toBe('string');
      }
    });
  });

  it('applies a switch to Private, back to Public, and a rename at every edge before the update answers', async () => {
    const f = await upload(randomBytes(4000), { name: 'switch.bin' });
    await atEvery(async (e) => expectBytes(await request(e.url, f.path), e, { file: f, signed: false }, `${e.name} before`));
    const link = await signedPath(f.rec.file_id, 'other');

    await ok('/collections/file/update', { file_id: f.rec.file_id, visibility: 'Private' });
    await atEvery(async (e) => {
      expectError(await request(e.url, f.path), 403, 'signature_required', `${e.name} after the switch to Private`);
      expectBytes(await request(e.url, link), e, { file: f, signed: true }, `${e.name} signed after the switch`);
    });

    await ok('/collections/file/update', { file_id: f.rec.file_id, visibility: 'Public' });
    await atEvery(async (e) => expectBytes(await request(e.url, f.path), e, { file: f, signed: false }, `${e.name} after the switch back`));

    await ok('/collections/file/update', { file_id: f.rec.file_id, name: 'renamé ✓.bin' });
    await atEvery(async (e) => {
      expectBytes(await request(e.url, f.path), e, { file: f, signed: false, name: 'renamé ✓.bin' }, `${e.name} after the rename`);
      // The link issued before the rename still works.
      expectBytes(await request(e.url, link), e, { file: f, signed: true, name: 'renamé ✓.bin' }, `${e.name} old link after the rename`);
    });
  });

  it('applies a flip of a folder to every file below it, two levels down included, at every edge', async () => {
    const top = await ok('/collections/folder/create', { name: 'top-' + randomBytes(4).toString('hex'), visibility: 'Public' });
    const sub = await ok('/collections/folder/create', { name: 'sub', visibility: 'Public', parent_id: top.folder_id });
    const [direct, deep] = await Promise.all([
      upload(randomBytes(3000), { name: 'direct.bin', folder_id: top.folder_id }),
      upload(randomBytes(3000), { name: 'deep.bin', folder_id: sub.folder_id }),
    ]);
    const files = [direct, deep];
    await atEvery(async (e) => {
      for (const f of files) expectBytes(await request(e.url, f.path), e, { file: f, signed: false }, `${e.name} ${f.rec.name} before`);
    });
    const links = await Promise.all(files.map((f) => signedPath(f.rec.file_id, 'other')));

    await ok('/collections/folder/update', { folder_id: top.folder_id, visibility: 'Private' });
    await atEvery(async (e) => {
      for (const [i, f] of files.entries()) {
        expectError(await request(e.url, f.path), 403, 'signature_required', `${e.name} ${f.rec.name} after the folder flip`);
        expectBytes(await request(e.url, links[i]!), e, { file: f, signed: true }, `${e.name} ${f.rec.name} signed`);
      }
    });

    await ok('/collections/folder/update', { folder_id: top.folder_id, visibility: 'Public' });
    await atEvery(async (e) => {
      for (const f of files) expectBytes(await request(e.url, f.path), e, { file: f, signed: false }, `${e.name} ${f.rec.name} after the flip back`);
    });

    // Moving the subfolder under a Private folder makes its file Private too.
    const closed = await ok('/collections/folder/create', { name: 'closed-' + randomBytes(4).toString('hex'), visibility: 'Private' });
    await ok('/collections/folder/update', { folder_id: sub.folder_id, parent_id: closed.folder_id });
    await atEvery(async (e) => {
      expectError(await request(e.url, deep.path), 403, 'signature_required', `${e.name} deep after moving its folder`);
      expectBytes(await request(e.url, direct.path), e, { file: direct, signed: false }, `${e.name} direct stays Public`);
    });

    // And moving a file into a Private folder.
    await ok('/collections/file/update', { file_id: direct.rec.file_id, folder_id: closed.folder_id });
    await atEvery(async (e) => expectError(await request(e.url, direct.path), 403, 'signature_required', `${e.name} direct after its move`));
  });

  it('removes a deleted file from every edge before the delete answers, plain and signed links alike', async () => {
    const [pub, sec] = await Promise.all([
      upload(randomBytes(5000), { name: 'doomed.bin' }),
      upload(randomBytes(5000), { name: 'doomed secret.bin', visibility: 'Private' }),
    ]);
    const link = await signedPath(sec.rec.file_id, 'other');
    const pubLink = await signedPath(pub.rec.file_id, 'other');
    const dl = pathOf((await ok('/collections/file/download', { file_id: sec.rec.file_id })).download_url);
    await atEvery(async (e) => {
      expectBytes(await request(e.url, pub.path), e, { file: pub, signed: false }, `${e.name} before`);
      expectBytes(await request(e.url, link), e, { file: sec, signed: true }, `${e.name} signed before`);
    });

    await Promise.all([ok('/collections/file/delete', { file_id: pub.rec.file_id }), ok('/collections/file/delete', { file_id: sec.rec.file_id })]);
    await atEvery(async (e) => {
      expectError(await request(e.url, pub.path), 404, 'not_found', `${e.name} plain after delete`);
      expectError(await request(e.url, pubLink), 404, 'not_found', `${e.name} signed link of the Public file after delete`);
      expectError(await request(e.url, link), 404, 'not_found', `${e.name} signed after delete`);
      expectError(await request(e.url, dl), 404, 'not_found', `${e.name} download_url after delete`);
      expectError(await request(e.url, sec.path), 404, 'not_found', `${e.name} Private plain after delete`);
      expectHeadError(await request(e.url, pub.path, { method: 'HEAD' }), 404, `${e.name} HEAD after delete`);
      expectError(await request(e.url, pub.path, { headers: { range: 'bytes=0-9' } }), 404, 'not_found', `${e.name} Range after delete`);
    });
  });

  it('an edge killed with SIGKILL, with a delete made while it is down, never serves the deleted file after a restart on its cache', async () => {
    const b = edges[1]!;
    const [pub, sec, kept] = await Promise.all([
      upload(randomBytes(8000), { name: 'gone while down.bin' }),
      upload(randomBytes(8000), { name: 'gone while down secret.bin', visibility: 'Private' }),
      upload(randomBytes(8000), { name: 'kept.bin' }),
    ]);
    const link = await signedPath(sec.rec.file_id, 'other');
    // B has them all in its cache.
    expectBytes(await request(b.url, pub.path), b, { file: pub, signed: false }, 'B before');
    expectBytes(await request(b.url, link), b, { file: sec, signed: true }, 'B signed before');
    expectBytes(await request(b.url, kept.path), b, { file: kept, signed: false }, 'B kept before');

    expect((await b.proc.stop('SIGKILL')).signal).toBe('SIGKILL');
    const t = Date.now();
    await Promise.all([ok('/collections/file/delete', { file_id: pub.rec.file_id }), ok('/collections/file/delete', { file_id: sec.rec.file_id })]);
    expect(Date.now() - t, 'the deletes wait at most about one lease for the dead edge').toBeLessThan(LEASE_MS + 1000);

    // Restart on the same cache and port, and ask it from the first moment, as fast as possible.
    const proc = spawnEdge(b, b.port);
    let ready = false;
    const seen: Array<{ path: string; status: number; atMs: number }> = [];
    let refused = 0;
    const spawnedAt = Date.now();
    const hammer = async (path: string) => {
      let after = 0;
      // Until the listening line, and a few more requests after it.
      while (after < 5 && !proc.exit && Date.now() - spawnedAt < 15_000) {
        if (ready) after++;
        try {
          const r = await request(b.url, path, { timeoutMs: 3000 });
          seen.push({ path, status: r.status, atMs: Date.now() - spawnedAt });
        } catch {
          refused++;
        }
      }
    };
    const polls = Promise.all([hammer(pub.path), hammer(link), hammer(pub.path), hammer(link)]);
    const url = await proc.ready;
    ready = true;
    await polls;
    b.proc = proc;
    expect(url).toBe(b.url);
    const served = seen.filter((s) => s.status === 200 || s.status === 206);
    expect(served, `answers with bytes for the deleted file: ${JSON.stringify(served)}`).toEqual([]);
    expect(seen.length + refused, 'requests made while it started').toBeGreaterThan(10);

    expectError(await request(b.url, pub.path), 404, 'not_found', 'B plain after restart');
    expectError(await request(b.url, link), 404, 'not_found', 'B signed after restart');
    expectBytes(await request(b.url, kept.path), b, { file: kept, signed: false }, 'B kept after restart');
    await atEvery(async (e) => {
      expectError(await request(e.url, pub.path), 404, 'not_found', `${e.name} plain`);
      expectError(await request(e.url, link), 404, 'not_found', `${e.name} signed`);
    });
  });

  it('an edge cut off from the origin stops serving within the lease, does not hold deletes up, and catches up after', async () => {
    const c = edges[2]!;
    const others = edges.filter((e) => e !== c);
    const [kept, doomed, hidden] = await Promise.all([
      upload(randomBytes(6000), { name: 'cut kept.bin' }),
      upload(randomBytes(6000), { name: 'cut doomed.bin' }),
      upload(randomBytes(6000), { name: 'cut hidden.bin' }),
    ]);
    await atEvery(async (e) => {
      for (const f of [kept, doomed, hidden]) expectBytes(await request(e.url, f.path), e, { file: f, signed: false }, `${e.name} ${f.rec.name} before`);
    });

    c.proxy.freeze();
    const frozenAt = Date.now();
    const deadline = frozenAt + LEASE_MS + 1000;
    type Probe = { startMs: number; endMs: number; status: number | null; body: string };
    const probes: Probe[] = [];
    const pending: Array<Promise<void>> = [];
    const probe = (path: string): Promise<void> => {
      const startMs = Date.now() - frozenAt;
      return request(c.url, path, { timeoutMs: Math.max(300, deadline + 1000 - Date.now()) }).then(
        (r) => { probes.push({ startMs, endMs: Date.now() - frozenAt, status: r.status, body: r.body.toString().slice(0, 120) }); },
        () => { probes.push({ startMs, endMs: Date.now() - frozenAt, status: null, body: 'no answer' }); },
      );
    };

    // A delete right at the cut: the origin waits for C at most about a lease, and
    // once it answers, C must no longer serve the file it has not heard was deleted.
    const deleting = (async () => {
      const t = Date.now();
      await ok('/collections/file/delete', { file_id: doomed.rec.file_id });
      const took = Date.now() - t;
      const [stale, ...rest] = await Promise.all([
        request(c.url, doomed.path, { timeoutMs: 5000 }).catch((err: Error) => err),
        ...others.map((e) => request(e.url, doomed.path)),
      ]);
      return { took, stale, rest };
    })();
    const hiding = (async () => {
      const t = Date.now();
      await ok('/collections/file/update', { file_id: hidden.rec.file_id, visibility: 'Private' });
      const took = Date.now() - t;
      const [stale, ...rest] = await Promise.all([
        request(c.url, hidden.path, { timeoutMs: 5000 }).catch((err: Error) => err),
        ...others.map((e) => request(e.url, hidden.path)),
      ]);
      return { took, stale, rest };
    })();
    while (Date.now() < deadline && !probes.some((p) => p.status === 503)) {
      pending.push(probe(kept.path));
      await sleep(100);
    }
    await Promise.all(pending);
    const del = await deleting;
    const hid = await hiding;

    expect.soft(del.took, 'delete while an edge is cut off').toBeLessThanOrEqual(LEASE_MS + 1000);
    for (const [i, r] of del.rest.entries()) expectError(r, 404, 'not_found', `${others[i]!.name} right after the delete`);
    expect(del.stale instanceof Error ? del.stale.message : del.stale.status, 'C right after the delete, cut off').toBe(503);
    expect.soft(hid.took, 'switch to Private while an edge is cut off').toBeLessThanOrEqual(LEASE_MS + 1000);
    for (const [i, r] of hid.rest.entries()) expectError(r, 403, 'signature_required', `${others[i]!.name} right after the switch`);
    expect(hid.stale instanceof Error ? hid.stale.message : hid.stale.status, 'C right after the switch, cut off').toBe(503);

    const late200 = probes.filter((p) => p.status === 200 && p.startMs > LEASE_MS + 200).map((p) => ({ startMs: p.startMs, endMs: p.endMs }));
    expect(late200, `served from cache after the lease: ${JSON.stringify(late200)}`).toEqual([]);
    const first503 = probes.filter((p) => p.status === 503).sort((a, b) => a.endMs - b.endMs)[0];
    expect(first503, `no 503 at all; probes: ${JSON.stringify(probes)}`).toBeDefined();
    // Soft, so that the catch-up below is checked even when this is late.
    const brief = probes.map((p) => ({ startMs: p.startMs, endMs: p.endMs, status: p.status }));
    expect.soft(first503!.endMs, `first 503 later than lease + 1 s; probes: ${JSON.stringify(brief)}`).toBeLessThanOrEqual(LEASE_MS + 1000);
    const unanswered = probes.filter((p) => p.status === null || (p.status === 503 && p.endMs - p.startMs > 1000));
    expect.soft(unanswered.map((p) => ({ startMs: p.startMs, endMs: p.endMs, status: p.status })), 'requests to a cut-off edge left waiting over 1 s').toEqual([]);
    const cut = await request(c.url, kept.path, { timeoutMs: 5000 });
    expect(cut.status, 'C while cut off').toBe(503);
    expect(String(cut.headers['content-type'])).toMatch(/^application\/json/);
    expect(typeof cut.json?.error?.code, `C while cut off: ${cut.body.toString().slice(0, 200)}`).toBe('string');

    c.proxy.thaw();
    const caughtUpBy = Date.now() + 10_000;
    const afterThaw: number[] = [];
    for (;;) {
      const r = await request(c.url, doomed.path, { timeoutMs: 3000 }).catch(() => null);
      if (r) afterThaw.push(r.status);
      if (r?.status === 404 || Date.now() > caughtUpBy) break;
      await sleep(50);
    }
    expect(afterThaw.filter((s) => s === 200), 'C served the deleted file after the thaw').toEqual([]);
    expectError(await request(c.url, doomed.path), 404, 'not_found', 'C after catching up');
    expectError(await request(c.url, hidden.path), 403, 'signature_required', 'C after catching up: the switch to Private');
    expectBytes(await request(c.url, kept.path), c, { file: kept, signed: false }, 'C kept after catching up');
  });

  it('an edge started without COFFER_SIGNING_SECRET exits non-zero and says so', async () => {
    const proc = spawnCoffer({
      kind: 'edge', name: 'edge without secret', args: ['edge', '--origin', originUrl],
      env: { COFFER_EDGE_PORT: '0', COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: join(root, 'edge-no-secret'), COFFER_EDGE_TOKEN: EDGE_TOKEN },
    });
    const timer = setTimeout(() => void proc.stop('SIGKILL'), 10_000);
    const exit = await proc.exited;
    clearTimeout(timer);
    expect(exit.signal, `still running after 10 s: ${proc.stdout()}${proc.stderr()}`).toBeNull();
    expect(exit.code).not.toBe(0);
    expect(proc.stdout() + proc.stderr()).toMatch(/COFFER_SIGNING_SECRET/);
    expect(proc.stdout()).not.toMatch(/edge listening on/);
  });
});
