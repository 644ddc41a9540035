/**
 * The origin's HTTP upload flow with COFFER_BLOB_STORE on S3: a real S3-protocol server
 * (s3rver, test/helpers/s3.ts), the AWS SDK, the standard AWS credential variables.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { spawnCoffer, stopAll } from '../helpers/processes.js';
import { poll, sha256 } from '../kit/index.js';

const CHUNK = 5 * 1024 * 1024;
const MiB = 1024 * 1024;

let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await stopAll();
  await s3?.stop();
});

function partBody(s: any, n: number, bytes: Buffer, bodyFirst = false): string {
  const fields = `"bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)},"fileId":${JSON.stringify(s.fileId)},"partNumber":${n}`;
  const body = `"body":"${bytes.toString('base64')}"`;
  return bodyFirst ? `{${body},${fields}}` : `{${fields},${body}}`;
}

async function initiate(o: TestOrigin, size: number, fields: Record<string, unknown> = {}): Promise<any> {
  const r = await o.post('/collections/upload/file', { name: 'big.bin', visibility: 'Public', size, file_type: 'other', ...fields });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

describe('the HTTP upload flow on S3 (s3rver)', () => {
  let o: TestOrigin;
  let bucket: string;
  beforeAll(async () => {
    bucket = await s3.createBucket('e2e');
    o = await startTestOrigin({ COFFER_BLOB_STORE: s3.blobStoreUrl(bucket) });
  });
  afterAll(async () => {
    await o?.close();
  });

  it('uploads 12 MiB in parts out of order, completes with the exact SHA-256, and serves the bytes', async () => {
    const bytes = randomBytes(12 * MiB);
    const s = await initiate(o, bytes.length);
    expect(s.bucket).toBe(bucket);
    expect(s.part_count).toBe(3);
    expect(await s3.openUploads(bucket)).toContainEqual({ key: s.key, uploadId: s.uploadId });
    const part = (n: number) => bytes.subarray((n - 1) * CHUNK, n * CHUNK);
    // Last part first; 1 and 2 at once; part 2 with "body" before the fields that name it.
    const sent = [await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 3, part(3)) })];
    sent.push(...(await Promise.all([
      o.post('/collections/upload/file-progress', null, { raw: partBody(s, 2, part(2), true) }),
      o.post('/collections/upload/file-progress', null, { raw: partBody(s, 1, part(1)) }),
    ])));
    for (const r of sent) expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(sent.map((r) => r.body.size)).toEqual([2 * MiB, CHUNK, CHUNK]);

    const done = await o.post('/collections/upload/complete-upload', { file_id: s.file_id });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ status: 'ready', size: bytes.length, sha256: sha256(bytes) });
    // The object is in the bucket under the upload's key, and the multipart upload is closed.
    const object = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: s.key }));
    expect(sha256(Buffer.from(await object.Body!.transformToByteArray()))).toBe(sha256(bytes));
    expect(await poll(async () => (await s3.openUploads(bucket)).length === 0, { timeoutMs: 5000 })).toBe(true);

    // What edges fetch.
    const token = o.origin.credentials.edgeTokens[0]!;
    const edgeFetch = () => fetch(`${o.url}/_edge/blob/${s.file_id}`, { headers: { authorization: `Bearer ${token}` } });
    const blob = await edgeFetch();
    expect(blob.status).toBe(200);
    expect(blob.headers.get('x-sha256')).toBe(sha256(bytes));
    expect(blob.headers.get('x-content-type-options')).toBe('nosniff');
    expect(blob.headers.get('content-security-policy')).toMatch(/^sandbox/);
    expect(sha256(Buffer.from(await blob.arrayBuffer()))).toBe(sha256(bytes));
    // Many edges at once: the origin reads the object once and sends each the same bytes.
    const many = await Promise.all(Array.from({ length: 8 }, async () => Buffer.from(await (await edgeFetch()).arrayBuffer())));
    for (const b of many) expect(sha256(b)).toBe(sha256(bytes));

    // Deleting removes the object from the bucket, and the origin's copy in memory stops answering.
    expect((await o.post('/collections/file/delete', { file_id: s.file_id })).status).toBe(200);
    expect((await edgeFetch()).status).toBe(404);
    expect(await poll(async () => (await o.origin.stores.blobs.size(s.key)) === null, { timeoutMs: 5000 })).toBe(true);
  });

  it('refuses a part of the wrong size and keeps the one it has', async () => {
    const bytes = randomBytes(CHUNK + 100);
    const s = await initiate(o, bytes.length);
    const first = await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 1, bytes.subarray(0, CHUNK)) });
    expect(first.status).toBe(200);
    const short = await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 1, randomBytes(CHUNK - 1)) });
    expect(short.status).toBe(400);
    expect(short.body.error.code).toBe('part_size_mismatch');
    const long = await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 2, randomBytes(101)) });
    expect(long.body.error.code).toBe('part_size_mismatch');
    // Every byte of the part, then a body that is not JSON: S3 must not keep this version.
    const malformed = await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 1, randomBytes(CHUNK)).slice(0, -1) });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_request');
    // A field named again after "body" would make the part another than the one opened.
    const even = await initiate(o, 2 * CHUNK);
    const twice = await o.post('/collections/upload/file-progress', null, { raw: partBody(even, 1, randomBytes(CHUNK)).replace(/}$/, ',"partNumber":2}') });
    expect(twice.status).toBe(400);
    expect(twice.body.error.code).toBe('invalid_request');
    const bad = await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 2, bytes.subarray(CHUNK)).replace('"body":"', '"body":"!!!!') });
    expect(bad.body.error.code).toBe('invalid_base64');
    expect((await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 2, bytes.subarray(CHUNK)) })).status).toBe(200);
    const done = await o.post('/collections/upload/complete-upload', { file_id: s.file_id });
    expect(done.body).toMatchObject({ status: 'ready', size: bytes.length, sha256: sha256(bytes) });
  });

  it('uploads a 0-byte file', async () => {
    const s = await initiate(o, 0);
    expect((await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 1, Buffer.alloc(0)) })).status).toBe(200);
    const done = await o.post('/collections/upload/complete-upload', { file_id: s.file_id });
    expect(done.body).toMatchObject({ status: 'ready', size: 0, sha256: sha256(Buffer.alloc(0)) });
  });

  it('aborts the multipart upload when the client aborts', async () => {
    const s = await initiate(o, CHUNK + 1);
    expect((await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 2, Buffer.from('x')) })).status).toBe(200);
    expect(await s3.openUploads(bucket)).toContainEqual({ key: s.key, uploadId: s.uploadId });
    expect((await o.post('/collections/upload/abort', { file_id: s.file_id })).status).toBe(200);
    expect(await poll(async () => !(await s3.openUploads(bucket)).some((u) => u.uploadId === s.uploadId), { timeoutMs: 5000 })).toBe(true);
    const late = await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 1, randomBytes(CHUNK)) });
    expect(late.status).toBe(404);
  });

  it('serves a ready file through an edge', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'coffer-s3-edge-'));
    try {
      const edge = spawnCoffer({
        kind: 'edge', name: 'edge', args: ['edge', '--origin', o.url],
        env: { COFFER_EDGE_PORT: '0', COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: dataDir, COFFER_SIGNING_SECRET: o.secret, COFFER_EDGE_TOKEN: o.origin.credentials.edgeTokens[0], COFFER_LOG_LEVEL: 'warn' },
      });
      const edgeUrl = await edge.ready;
      const bytes = randomBytes(CHUNK + 4321);
      const s = await initiate(o, bytes.length);
      for (const n of [2, 1]) {
        const r = await o.post('/collections/upload/file-progress', null, { raw: partBody(s, n, bytes.subarray((n - 1) * CHUNK, n * CHUNK)) });
        expect(r.status).toBe(200);
      }
      const done = await o.post('/collections/upload/complete-upload', { file_id: s.file_id });
      expect(done.body.sha256).toBe(sha256(bytes));
      const res = await fetch(`${edgeUrl}/files/${s.file_id}`);
      expect(res.status).toBe(200);
      expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(bytes));
      const ranged = await fetch(`${edgeUrl}/files/${s.file_id}`, { headers: { range: `bytes=${CHUNK - 2}-${CHUNK + 1}` } });
      expect(ranged.status).toBe(206);
      expect(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(CHUNK - 2, CHUNK + 2))).toBe(true);
      await edge.stop();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('expiry on S3', () => {
  it('aborts the multipart upload of an upload left open past its time', async () => {
    const bucket = await s3.createBucket('expiry');
    const o = await startTestOrigin({ COFFER_BLOB_STORE: s3.blobStoreUrl(bucket), COFFER_UPLOAD_TTL: '1' });
    try {
      const s = await initiate(o, CHUNK + 5);
      expect((await o.post('/collections/upload/file-progress', null, { raw: partBody(s, 2, Buffer.from('12345')) })).status).toBe(200);
      expect(await s3.openUploads(bucket)).toEqual([{ key: s.key, uploadId: s.uploadId }]);
      expect(await poll(async () => (await s3.openUploads(bucket)).length === 0, { timeoutMs: 5000 })).toBe(true);
      expect((await o.post('/collections/upload/complete-upload', { file_id: s.file_id })).status).toBe(404);
    } finally {
      await o.close();
    }
  }, 15_000);
});

describe('configuration', () => {
  it('refuses to start with a COFFER_BLOB_STORE it cannot use, saying why', async () => {
    await expect(startTestOrigin({ COFFER_BLOB_STORE: 'file:///tmp/x' })).rejects.toThrow(/must be an s3:\/\/ URL/);
    await expect(startTestOrigin({ COFFER_BLOB_STORE: 's3://b?region=us-east-1&endpont=x' })).rejects.toThrow(/not a bucket name|unknown parameter/);
    await expect(startTestOrigin({ COFFER_BLOB_STORE: s3.blobStoreUrl('missing-bucket') })).rejects.toThrow(/"missing-bucket" cannot be used: it does not exist/);
  });
});

describe('memory', () => {
  /** Resident memory of a process, now and at its peak, in MiB (Linux). */
  async function rss(pid: number): Promise<{ now: number; peak: number }> {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { now: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
  }

  it.runIf(process.platform === 'linux')('streams a 100 MiB upload to S3 without holding parts in the origin', async () => {
    const bucket = await s3.createBucket('memory');
    const dataDir = await mkdtemp(join(tmpdir(), 'coffer-s3-mem-'));
    const key = 'mem-key-' + randomBytes(8).toString('hex');
    try {
      const origin = spawnCoffer({
        kind: 'origin', name: 'origin', args: ['origin'],
        env: {
          COFFER_PORT: '0', COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: key,
          COFFER_SIGNING_SECRET: 'mem-secret-' + randomBytes(8).toString('hex'), COFFER_LOG_LEVEL: 'warn',
          COFFER_BLOB_STORE: s3.blobStoreUrl(bucket),
        },
      });
      const url = await origin.ready;
      const pid = origin.child.pid!;
      const post = async (path: string, body: string) => {
        const res = await fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
        return { status: res.status, body: await res.json() as any };
      };
      // Warm up (the first requests load code), then take the baseline.
      const small = await post('/collections/upload/file', JSON.stringify({ name: 'w.bin', visibility: 'Public', size: 3, file_type: 'other' }));
      await post('/collections/upload/file-progress', partBody(small.body, 1, Buffer.from('abc')));
      await post('/collections/upload/complete-upload', JSON.stringify({ file_id: small.body.file_id }));
      const before = await rss(pid);

      const size = 100 * MiB;
      const hash = createHash('sha256');
      const partBytes = (n: number) => createHash('sha512').update(`part ${n}`).digest().subarray(0, 8).toString('hex').repeat(CHUNK / 16).slice(0, Math.min(CHUNK, size - (n - 1) * CHUNK));
      const init = await post('/collections/upload/file', JSON.stringify({ name: 'big.bin', visibility: 'Public', size, file_type: 'other' }));
      const count = init.body.part_count as number;
      for (let n = 1; n <= count; n++) hash.update(partBytes(n));
      let next = 1;
      const started = Date.now();
      await Promise.all(Array.from({ length: 4 }, async () => {
        while (next <= count) {
          const n = next++;
          const r = await post('/collections/upload/file-progress', partBody(init.body, n, Buffer.from(partBytes(n))));
          expect(r.status, JSON.stringify(r.body)).toBe(200);
        }
      }));
      const done = await post('/collections/upload/complete-upload', JSON.stringify({ file_id: init.body.file_id }));
      const seconds = (Date.now() - started) / 1000;
      expect(done.body.sha256).toBe(hash.digest('hex'));
      const after = await rss(pid);
      const growth = after.peak - before.now;
      console.log(`memory: 100 MiB upload (4 parts in flight) to S3: origin RSS ${before.now.toFixed(0)} MiB before, peak ${after.peak.toFixed(0)} MiB (+${growth.toFixed(0)} MiB), ${seconds.toFixed(1)} s`);
      // Four parts in flight arrive as up to 4 × 7 MiB of base64 text; nothing holds a part twice.
      expect(growth).toBeLessThan(100);
      await origin.stop();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
