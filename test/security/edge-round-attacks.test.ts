/**
 * Attacks on this round's edge changes, from outside (the lease, prefetch gate and fill hold
 * attacks are in edge-round-attacks-lease.test.ts):
 * - `coffer edge`'s own option reader (cli/edge-args.ts) against commander on odd spellings,
 *   and a parent given with credentials;
 * - the hot path's conditional and range headers read from rawHeaders (edge/request-headers.ts)
 *   against what Node puts in req.headers, on the wire, and at a real edge on a hit, with the
 *   same headers never opening a Private file;
 * - /metrics at the edge before and after its first scrape (prom-client loads at the first).
 */
import http from 'node:http';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { Command, CommanderError } from 'commander';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { quickEdgeOptions } from '../../src/cli/edge-args.js';
import { buildProgram } from '../../src/cli/program.js';
import { askedHeaders } from '../../src/edge/request-headers.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { rawRequest } from '../helpers/raw-http.js';
import { eventually } from '../kit/index.js';

// ---------------------------------------------------------------- coffer edge's options

/** What commander hands `coffer edge`'s action for these words, or its error. */
function commanderReads(words: string[]): { options: Record<string, unknown> } | { error: string } {
  const program = buildProgram();
  let options: Record<string, unknown> | null = null;
  const quiet = { writeOut: () => undefined, writeErr: () => undefined };
  program.exitOverride().configureOutput(quiet);
  const edge = program.commands.find((c: Command) => c.name() === 'edge')!;
  edge.exitOverride().configureOutput(quiet).action((opts: Record<string, unknown>) => {
    options = opts;
  });
  try {
    program.parse(['node', 'coffer', 'edge', ...words]);
  } catch (err) {
    if (err instanceof CommanderError) return { error: err.code };
    throw err;
  }
  return { options: Object.fromEntries(Object.entries(options ?? {}).filter(([, v]) => v !== undefined)) };
}

describe('coffer edge reads its options as commander would, or leaves them to it', () => {
  const spellings: string[][] = [
    ['--origin', 'http://o', '--port=1', '--port', '2'],
    ['--origin', 'http://o', '--edge-port=1', '--edge-port', '2'],
    ['--origin', 'http://a', '--origin', 'http://b'],
    ['--origin=http://a', '--origin='],
    ['--origin', ''],
    ['--origin=', '--name', 'x'],
    ['--origin', 'http://o', '--'],
    ['--', '--origin', 'http://o'],
    ['--origin', 'http://o', '--unknown', 'x'],
    ['--origin', 'http://o', '--help'],
    ['--help', '--origin', 'http://o'],
    ['--origin', 'http://o', '-h'],
    ['--origin', 'http://o', '--name'],
    ['--origin', '--name', 'x'],
    ['--origin', '-x'],
    ['--origin=-x'],
    ['--origin', 'http://o', '--name', 'a\u0000b\u001b[31m\r\n'],
    ['--origin', 'http://o', '--parent', 'http://user:pass@p:1'],
    ['--origin', 'http://o', '--parent=http://u:p@p:1,http://q:2'],
    ['--origin', 'http://o', '--edge-parents', 'http://p:1', '--parent', 'http://q:2'],
    ['--origin', 'http://o', '--coffer-edge-port', '9', '--edge-port', '8'],
    ['--origin', 'http://o', 'operand'],
    ['operand', '--origin', 'http://o'],
    ['--origin', 'http://o', '--Port', '1'],
    ['--ORIGIN', 'http://o'],
    ['---origin', 'http://o'],
    ['--=x', '--origin', 'http://o'],
    ['--origin=a=b', '--name=c=d'],
    ['--origin', 'http://o', '--__proto__', 'x'],
    ['--origin', 'http://o', '--constructor', 'x'],
    ['--origin', 'http://o', '--metrics-token', 's3cr3t', '--edge-token=tok'],
    ['--origin', 'http://o', '--s3-port', '1', '--coffer-s3-port', '2'],
    ['--origin', 'http://o', '--version'],
    [],
  ];

  test.each(spellings.map((w) => [JSON.stringify(w), w] as const))('%s', (_label, words) => {
    const quick = quickEdgeOptions(words);
    const commander = commanderReads(words);
    // Null hands the words to commander, which answers them as it always did: nothing to compare.
    if (quick === null) return;
    expect(commander, 'commander refused what the quick reader took').toHaveProperty('options');
    expect(quick).toEqual((commander as { options: Record<string, unknown> }).options);
  });
});

// ---------------------------------------------------------------- headers from rawHeaders

/** Sends raw request heads to a bare Node server; returns, per head, what req.headers held beside askedHeaders(rawHeaders). */
async function bothReadings(heads: string[]): Promise<Array<{ node: Record<string, unknown>; raw: Record<string, unknown> } | { status: string }>> {
  const seen: Array<{ node: Record<string, unknown>; raw: Record<string, unknown> }> = [];
  const server = http.createServer((req, res) => {
    const raw = { ...askedHeaders(req.rawHeaders) };
    const h = req.headers;
    const node = { range: h.range, ifRange: h['if-range'], ifNoneMatch: h['if-none-match'], ifModifiedSince: h['if-modified-since'] };
    seen.push({ node: strip(node), raw: strip(raw) });
    res.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const out: Array<{ node: Record<string, unknown>; raw: Record<string, unknown> } | { status: string }> = [];
  try {
    for (const head of heads) {
      const before = seen.length;
      const answer = await sendHead(port, head);
      out.push(seen.length > before ? seen[seen.length - 1]! : { status: answer.split('\r\n')[0]! });
    }
  } finally {
    await new Promise((r) => server.close(r));
  }
  return out;
}

const strip = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

function sendHead(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    s.on('data', (d) => (text += d.toString('latin1')));
    s.on('end', () => resolve(text));
    s.on('close', () => resolve(text));
    s.on('error', reject);
    s.end(`GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n${head}\r\n`);
  });
}

const ODD_HEADS = [
  'Range: bytes=0-0\r\nRange: bytes=5-\r\n',
  'range: bytes=0-0, 5-\r\n',
  'RANGE: bytes=1-2\r\nrAnGe: bytes=3-4\r\n',
  'Range:    bytes=0-3   \r\n',
  'Range: \r\n',
  'If-None-Match: "a"\r\nIF-NONE-MATCH: "b"\r\nif-none-match: *\r\n',
  'If-Modified-Since: Thu, 01 Jan 2026 00:00:00 GMT\r\nIf-Modified-Since: Thu, 01 Jan 2099 00:00:00 GMT\r\n',
  'if-modified-since: \r\nIf-Modified-Since: Thu, 01 Jan 2099 00:00:00 GMT\r\n',
  'If-Range: "x"\r\nif-range: "y"\r\nRange: bytes=0-1\r\n',
  'Range : bytes=0-1\r\n',
  ' Range: bytes=0-1\r\n',
  'Rang: bytes=0-1\r\nRanges: bytes=0-1\r\nX-Range: bytes=0-1\r\nIf-None-Matches: "a"\r\n',
  'If-None-Match: ' + '"a",'.repeat(3000) + '"b"\r\n',
  'Range: bytes=' + '0-0,'.repeat(2000) + '1-1\r\n',
  'Range: bytes=0-1\r\n\tbytes=2-3\r\n',
  'Range: b\u00e9tes=0-1\r\n',
];

describe('the hot path reads conditional and range headers as req.headers holds them', () => {
  test('odd spellings, duplicates, case, spacing and long values read alike', async () => {
    const readings = await bothReadings(ODD_HEADS);
    readings.forEach((r, i) => {
      if ('node' in r) expect(r.raw, `head ${i}: ${ODD_HEADS[i]!.slice(0, 80)}`).toEqual(r.node);
    });
  });
});

describe('a parent given with credentials', () => {
  test('is refused before the edge starts, and the refusal does not repeat the password', async () => {
    const { runEdge } = await import('../../src/cli/service.js');
    const options = quickEdgeOptions(['--origin', 'http://o:1', '--parent', 'http://user:hunter2@p:1']);
    expect(options).not.toBeNull();
    const err = await runEdge(options!).then(() => null, (e: Error) => e);
    expect(err?.message).toMatch(/COFFER_EDGE_PARENTS/);
    expect(err?.message).not.toContain('hunter2');
  });

  test('an origin given with credentials is refused without repeating them', async () => {
    const { originAddress } = await import('../../src/edge/origin-client.js');
    for (const given of ['http://user:hunter2@o:1', 'http://u:hun/ter2@o:1', 'http://u:a@b:hunter2@o:1', 'https://:hunter2@o']) {
      const err = (() => { try { originAddress(given); return null; } catch (e) { return e as Error; } })();
      expect(err?.message, given).toMatch(/--origin/);
      expect(err?.message, given).not.toContain('hunter2');
      expect(err?.message, given).not.toContain('ter2');
    }
  });
});

// ---------------------------------------------------------------- /metrics at the edge

describe('an edge\'s /metrics before and after its first scrape', () => {
  const TOKEN = 'metrics-' + randomBytes(12).toString('hex');
  let o: TestOrigin;
  let e: TestEdge;

  beforeAll(async () => {
    o = await startTestOrigin();
    e = await startTestEdge(o, () => ({ COFFER_METRICS_TOKEN: TOKEN }));
  }, 60_000);

  afterAll(async () => {
    await e?.close();
    await o?.close();
  });

  const scrape = (authorization?: string) => rawRequest(e.edge.url, '/metrics', { headers: authorization === undefined ? {} : { authorization } });
  const WRONG = [undefined, '', 'Bearer', 'Bearer ', `Bearer ${TOKEN.slice(0, -1)}`, `Bearer ${TOKEN}x`, `Basic ${TOKEN}`, `Bearer  ${TOKEN}`, `Bearer ${TOKEN} extra`, TOKEN, `Bearer ${TOKEN.toUpperCase()}`];

  test('refuses every wrong token before the first good scrape and after it, and shows no secret', async () => {
    for (const auth of WRONG) {
      const r = await scrape(auth);
      expect([r.status, r.json?.error?.code], `before: ${auth}`).toEqual([401, 'unauthorized']);
      expect(r.body.toString()).not.toContain(TOKEN);
    }
    const good = await scrape(`Bearer ${TOKEN}`);
    expect(good.status).toBe(200);
    expect(good.body.toString()).toContain('coffer_edge_cache_requests_total');
    const lower = await scrape(`bearer ${TOKEN}`);
    expect(lower.status).toBe(200);
    for (const secret of [TOKEN, o.secret, o.origin.credentials.edgeTokens[0]!, o.key]) expect(good.body.toString()).not.toContain(secret);
    for (const auth of WRONG) expect((await scrape(auth)).status, `after: ${auth}`).toBe(401);
  });
});

// ---------------------------------------------------------------- odd headers at a real edge

/** One raw request (header lines as written) to `port`; the status and the lowercased headers of the answer. */
async function rawGet(port: number, path: string, lines: string, method = 'GET'): Promise<{ status: number; headers: Record<string, string>; bodyLength: number }> {
  const text = await new Promise<string>((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('close', () => resolve(got));
    s.on('error', reject);
    s.end(`${method} ${path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n${lines}\r\n`);
  });
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...rest] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of rest) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
  return { status: Number(statusLine!.split(' ')[1]), headers, bodyLength: Buffer.byteLength(text.slice(end + 4), 'latin1') };
}

describe('odd conditional and range headers at a real edge, on a hit', () => {
  let o: TestOrigin;
  let e: TestEdge;
  let path: string;
  let privatePath: string;
  let etag: string;
  const SIZE = 4000;

  beforeAll(async () => {
    o = await startTestOrigin();
    e = await startTestEdge(o);
    const rec = await uploadBytes(o, randomBytes(SIZE), { name: 'hdr.bin' });
    const hidden = await uploadBytes(o, randomBytes(SIZE), { name: 'hdr-private.bin', visibility: 'Private' });
    path = `/files/${rec.file_id}`;
    privatePath = `/files/${hidden.file_id}`;
    etag = `"${rec.sha256}"`;
    await eventually(async () => expect((await rawRequest(e.edge.url, path)).headers['x-cache']).toBe('HIT'));
  }, 60_000);

  afterAll(async () => {
    await e?.close();
    await o?.close();
  });

  const FUTURE = 'Thu, 01 Jan 2099 00:00:00 GMT';
  const PAST = 'Thu, 01 Jan 1970 00:00:00 GMT';
  const cases: Array<[string, () => string, (r: Awaited<ReturnType<typeof rawGet>>) => void]> = [
    ['one range, odd case', () => 'rAnGe: bytes=1-2\r\n', (r) => expect([r.status, r.headers['content-range'], r.bodyLength]).toEqual([206, `bytes 1-2/${SIZE}`, 2])],
    ['two Range headers: several ranges, the whole file', () => 'Range: bytes=0-0\r\nRange: bytes=5-\r\n', (r) => expect([r.status, r.bodyLength]).toEqual([200, SIZE])],
    ['a multi-range value: the whole file', () => 'range: bytes=0-0, 5-\r\n', (r) => expect([r.status, r.bodyLength]).toEqual([200, SIZE])],
    ['an unsatisfiable range', () => `Range: bytes=${SIZE}-\r\n`, (r) => expect([r.status, r.headers['content-range']]).toEqual([416, `bytes */${SIZE}`])],
    ['a huge Range value', () => `Range: bytes=${'0-0,'.repeat(2000)}1-1\r\n`, (r) => expect([r.status, r.bodyLength]).toEqual([200, SIZE])],
    ['If-None-Match twice, the second matching', () => `If-None-Match: "nope"\r\nIF-NONE-MATCH: ${etag}\r\n`, (r) => expect([r.status, r.bodyLength]).toEqual([304, 0])],
    ['If-None-Match not matching beside an old If-Modified-Since', () => `If-None-Match: "nope"\r\nIf-Modified-Since: ${FUTURE}\r\n`, (r) => expect(r.status).toBe(200)],
    ['If-Modified-Since twice: the first counts', () => `If-Modified-Since: ${PAST}\r\nif-modified-since: ${FUTURE}\r\n`, (r) => expect(r.status).toBe(200)],
    ['If-Modified-Since twice, the first in the future', () => `if-modified-since: ${FUTURE}\r\nIf-Modified-Since: ${PAST}\r\n`, (r) => expect(r.status).toBe(304)],
    ['If-Range with another validator: the whole file', () => 'Range: bytes=0-1\r\nIf-Range: "other"\r\n', (r) => expect([r.status, r.bodyLength]).toEqual([200, SIZE])],
    ['If-Range twice, one matching: not one validator', () => `Range: bytes=0-1\r\nIf-Range: ${etag}\r\nif-range: ${etag}\r\n`, (r) => expect([r.status, r.bodyLength]).toEqual([200, SIZE])],
    ['a huge If-None-Match', () => `If-None-Match: ${'"a",'.repeat(3000)}${etag}\r\n`, (r) => expect(r.status).toBe(304)],
  ];

  test.each(cases)('%s', async (_name, lines, check) => {
    const port = new URL(e.edge.url).port;
    const r = await rawGet(Number(port), path, lines());
    check(r);
    expect(r.headers['x-cache'] ?? 'HIT').toBe('HIT');
    // The same headers never open a Private file without a signature.
    const hidden = await rawGet(Number(port), privatePath, lines());
    expect(hidden.status).toBe(403);
  });
});
