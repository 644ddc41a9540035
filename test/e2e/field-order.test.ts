/**
 * Field order is free (contract §9): a JSON file-progress body whose six fields come in any
 * of their 720 orders is taken, and the completed file is exactly the bytes sent. Each
 * 3-part upload carries three orders, one per part, so 240 uploads cover them all; part 3 is
 * small and random. The uploads run in lanes, one at a time per lane: a lane's 5 MiB parts
 * are the same two buffers for each of its uploads (part 1 and 2 differ, and so do any two
 * lanes' parts), their base64 made and their hash taken once, so the test costs the
 * origin's work, not the client's.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';

const CHUNK = 5 * 1024 * 1024;
const FIELDS = ['body', 'bucket', 'key', 'uploadId', 'fileId', 'partNumber'] as const;
type Field = (typeof FIELDS)[number];
/** Lanes: uploads in flight at once. */
const LANES = 4;

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

interface Session {
  file_id: string;
  fileId: string;
  bucket: string;
  key: string;
  uploadId: string;
}

describe('file-progress field order (contract §9)', () => {
  let o: TestOrigin;
  let agent: http.Agent;
  let dataDir: string;
  const chunks = Array.from({ length: LANES }, () => randomBytes(CHUNK));
  const chunks64 = chunks.map((c) => Buffer.from(c.toString('base64'), 'latin1'));
  /** Lane w sends chunks[w] as part 1 and chunks[w + 1] as part 2: the hash of both, to go on from. */
  const laneHash = chunks.map((c, w) => createHash('sha256').update(c).update(chunks[(w + 1) % LANES]!));

  beforeAll(async () => {
    // In memory where the machine has it: this test is about parsing, and 2.4 GB through a disk would only slow it down.
    dataDir = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'coffer-order-'));
    o = await startTestOrigin({ COFFER_DATA_DIR: dataDir });
    agent = new http.Agent({ keepAlive: true, maxSockets: LANES });
  });
  afterAll(async () => {
    agent?.destroy();
    await o?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** POSTs a JSON body written as pieces, the fields in `order`; the base64 of `body` is `body64` (ASCII pieces). */
  function postPart(s: Session, partNumber: number, order: Field[], body64: Buffer[]): Promise<{ status: number; body: any }> {
    const value: Record<Exclude<Field, 'body'>, string> = {
      bucket: JSON.stringify(s.bucket), key: JSON.stringify(s.key), uploadId: JSON.stringify(s.uploadId), fileId: JSON.stringify(s.fileId), partNumber: String(partNumber),
    };
    const pieces: Buffer[] = [Buffer.from('{')];
    order.forEach((field, i) => {
      const sep = i > 0 ? ',' : '';
      if (field === 'body') pieces.push(Buffer.from(`${sep}"body":"`), ...body64, Buffer.from('"'));
      else pieces.push(Buffer.from(`${sep}"${field}":${value[field]}`));
    });
    pieces.push(Buffer.from('}'));
    const length = pieces.reduce((n, p) => n + p.length, 0);
    const url = new URL('/collections/upload/file-progress', o.url);
    return new Promise((resolve, reject) => {
      const req = http.request({
        agent, hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST',
        headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json', 'content-length': length },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
      });
      req.on('error', reject);
      for (const p of pieces) req.write(p);
      req.end();
    });
  }

  it('takes all 720 orders of the six fields, and every upload ends in its bytes', async () => {
    const orders = permutations(FIELDS);
    expect(orders).toHaveLength(720);
    expect(new Set(orders.map((p) => p.join())).size).toBe(720);
    const uploads = Array.from({ length: orders.length / 3 }, (_, i) => orders.slice(i * 3, i * 3 + 3));
    const failures: string[] = [];
    let next = 0;
    const lane = async (w: number): Promise<void> => {
      while (next < uploads.length) {
        const index = next++;
        const [first, second, third] = uploads[index]!;
        const last = randomBytes(1 + (index % 300));
        const size = 2 * CHUNK + last.length;
        const init = await o.post('/collections/upload/file', { name: `order-${index}.bin`, visibility: 'Private', size, file_type: 'other' });
        expect(init.status, JSON.stringify(init.body)).toBe(200);
        const s = init.body as Session;
        const sends: Array<[number, Field[], Buffer]> = [
          [3, third!, Buffer.from(last.toString('base64'), 'latin1')], [1, first!, chunks64[w]!], [2, second!, chunks64[(w + 1) % LANES]!],
        ];
        for (const [n, order, body64] of sends) {
          const r = await postPart(s, n, order, [body64]);
          if (r.status !== 200 || r.body.size !== (n === 3 ? last.length : CHUNK)) failures.push(`upload ${index} part ${n} (${order.join(',')}): ${r.status} ${JSON.stringify(r.body)}`);
        }
        const done = await o.post('/collections/upload/complete-upload', { file_id: s.file_id });
        const expected = laneHash[w]!.copy().update(last).digest('hex');
        if (done.status !== 200 || done.body.sha256 !== expected || done.body.size !== size) {
          failures.push(`upload ${index} (${uploads[index]!.map((p) => p.join(',')).join(' | ')}): ${done.status} ${JSON.stringify(done.body)}`);
        }
        // Only the checks are kept: the store holds one upload per lane at a time.
        const deleted = await o.post('/collections/file/delete', { file_id: s.file_id });
        expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
      }
    };
    await Promise.all(Array.from({ length: LANES }, (_, w) => lane(w)));
    expect(failures).toEqual([]);
  }, 240_000);

  it('writes a body that comes first to the disk as it arrives, not into memory, and commits it once the fields name the part', async () => {
    const init = await o.post('/collections/upload/file', { name: 'body-first.bin', visibility: 'Private', size: CHUNK, file_type: 'other' });
    expect(init.status, JSON.stringify(init.body)).toBe(200);
    const s = init.body as Session;
    const tmp = join(dataDir, 'blobs', 'tmp');
    const onDisk = async (): Promise<number> => {
      let most = 0;
      for (const name of await readdir(tmp)) most = Math.max(most, (await stat(join(tmp, name)).catch(() => ({ size: 0 }))).size);
      return most;
    };
    const fields = `,"bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)},"fileId":${JSON.stringify(s.fileId)},"partNumber":1}`;
    const head = Buffer.from('{"body":"');
    const body64 = chunks64[0]!;
    const tail = Buffer.from('"' + fields);
    const url = new URL('/collections/upload/file-progress', o.url);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = http.request({
        hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent: false,
        headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json', 'content-length': head.length + body64.length + tail.length },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.write(head);
      req.write(body64);
      // The fields that name the part wait until the test has looked at the disk.
      void held.then(() => req.end(tail));
    });
    // Nearly the whole part is on disk while the fields are still to come.
    await expect.poll(onDisk, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(CHUNK - 1024 * 1024);
    release();
    const r = await answer;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.size).toBe(CHUNK);
    const done = await o.post('/collections/upload/complete-upload', { file_id: s.file_id });
    expect(done.body.sha256).toBe(createHash('sha256').update(chunks[0]!).digest('hex'));
    expect(await readdir(tmp)).toEqual([]);
    await o.post('/collections/file/delete', { file_id: s.file_id });
  });
});
