/**
 * tus-js-client, unchanged, in Node against /tus (contract §9): a whole upload, one resumed
 * after its connection was killed in the middle of a PATCH, and one resumed after the origin
 * was killed and started again, both through a TCP proxy that the Location points at.
 *
 * The proxy, not the client's onProgress, says when to break a PATCH. tus-js-client reports
 * progress at most once per 100 ms (throttled, no trailing call) and counts the bytes it
 * handed to its socket, which the proxy takes in at loopback speed well ahead of the origin:
 * up to 16 MiB of the 24 go by between two reports, and on a busy machine the first report past a
 * threshold could be the one made after the origin had answered the whole PATCH, so the
 * "cut" or the kill came after the upload had finished (one cut instead of two; an upload
 * that resolved instead of failing). The proxy acts when a set number of bytes has gone to
 * the origin, so the body is always broken before the origin has it all.
 */
import { randomBytes } from 'node:crypto';
import * as tusJs from 'tus-js-client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { freePort, tusStorage, type TusStorage } from '../helpers/tus-origin.js';
import { stopAll } from '../helpers/processes.js';
import { MiB, tusClient } from '../helpers/tus.js';
import { sha256 } from '../kit/index.js';

interface Sent {
  method: string;
  offset: string | undefined;
}

/** Runs an upload to its end or its error; records the requests it made. */
function run(bytes: Buffer, options: tusJs.UploadOptions) {
  const sent: Sent[] = [];
  let fileId: string | undefined;
  const upload: tusJs.Upload = new tusJs.Upload(bytes, {
    metadata: { filename: 'client.bin', filetype: 'application/octet-stream' },
    ...options,
    onBeforeRequest: (req) => {
      sent.push({ method: req.getMethod(), offset: req.getHeader('Upload-Offset') });
    },
    onAfterResponse: (_req, res) => {
      fileId ??= res.getHeader('Coffer-File-Id') ?? undefined;
    },
  });
  const done = new Promise<void>((resolve, reject) => {
    upload.options.onSuccess = () => resolve();
    upload.options.onError = reject;
  });
  upload.start();
  return { upload, sent, done, fileId: () => fileId };
}

let o: TestOrigin | null = null;
let proxy: TcpProxy | null = null;
let storage: TusStorage | null = null;
afterEach(async () => {
  await proxy?.close();
  await o?.close();
  await stopAll();
  await storage?.cleanup();
  proxy = null;
  o = null;
  storage = null;
});
afterAll(async () => stopAll());

const fileSha = async (origin: { url: string }, key: string, id: string | undefined) => {
  const res = await fetch(`${origin.url}/collections/file/get`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ file_id: id }) });
  return ((await res.json()) as { sha256: string; status: string });
};

describe('tus-js-client in Node', () => {
  it('uploads a file whole; the last answer names the ready file', async () => {
    o = await startTestOrigin();
    const bytes = randomBytes(7 * MiB + 3);
    const u = run(bytes, { endpoint: `${o.url}/tus`, headers: { authorization: `Bearer ${o.key}` }, retryDelays: [] });
    await u.done;
    expect(u.upload.url).toBe(`${o.url}/tus/${u.fileId()}`);
    expect(await fileSha(o, o.key, u.fileId())).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
  });

  it('resumes after its connection is killed in the middle of a PATCH', async () => {
    // The origin names the proxy in Location, so every request of the upload goes through it.
    const port = await freePort();
    proxy = await TcpProxy.start('127.0.0.1', port);
    o = await startTestOrigin({ COFFER_PORT: String(port), COFFER_HOST: '127.0.0.1', COFFER_BASE_URL: proxy.url });
    const bytes = randomBytes(24 * MiB + 11);
    // Twice, in the middle of a body: the origin holds at most 8 MiB after the first cut, so
    // it has had at most 17 MiB of the 24 when the second comes.
    let cuts = 0;
    for (const at of [8 * MiB, 17 * MiB]) void proxy.cutAt(at).then(() => cuts++);
    const u = run(bytes, { endpoint: `${proxy.url}/tus`, headers: { authorization: `Bearer ${o.key}` }, retryDelays: [100, 200, 400, 800, 1000, 1000, 2000, 2000] });
    await u.done;
    expect(cuts).toBe(2);
    const patches = u.sent.filter((s) => s.method === 'PATCH');
    // Each resumed PATCH started where HEAD said, past the start.
    // (A cut can fall in the body of a PATCH refused as busy while the origin still kept the
    // one cut before it, so at least one.)
    const resumed = patches.filter((p) => Number(p.offset) > 0).map((p) => Number(p.offset));
    expect(resumed.length).toBeGreaterThanOrEqual(1);
    expect(u.sent.filter((s) => s.method === 'HEAD').length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...resumed)).toBeLessThan(bytes.length);
    expect(await fileSha(o, o.key, u.fileId())).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
  }, 120_000);

  it('resumes after the origin is killed and started again', async () => {
    storage = await tusStorage();
    const port = await freePort();
    proxy = await TcpProxy.start('127.0.0.1', port);
    const first = await storage.start('origin', port, proxy.url);
    const bytes = randomBytes(24 * MiB + 5);
    const auth = { authorization: `Bearer ${storage.key}` };
    // The proxy holds the rest of the body from 11 MiB on, so the origin dies in its middle.
    const held = proxy.freezeAt(11 * MiB);
    const u = run(bytes, { endpoint: `${proxy.url}/tus`, headers: auth, retryDelays: [] });
    await Promise.race([held, u.done.then(() => { throw new Error('the upload ended before the origin was killed'); })]);
    first.proc.child.kill('SIGKILL');
    await first.proc.exited;
    // The client's connection breaks as the origin's would have without the proxy.
    proxy.cut();
    proxy.thaw();
    await expect(u.done).rejects.toThrow();
    const url = u.upload.url!;
    expect(url).toMatch(new RegExp(`^${proxy.url}/tus/`));
    // The same client, given the upload's URL, as an application that stored it would.
    const again = await storage.start('origin again', port, proxy.url);
    const kept = Number((await tusClient(again.url, `Bearer ${storage.key}`).head(url)).headers['upload-offset']);
    expect(kept).toBeGreaterThanOrEqual(0);
    expect(kept).toBeLessThanOrEqual(11 * MiB);
    const v = run(bytes, { endpoint: `${proxy.url}/tus`, uploadUrl: url, headers: auth, retryDelays: [] });
    await v.done;
    expect(v.sent.filter((s) => s.method === 'POST')).toEqual([]);
    expect(v.sent.find((s) => s.method === 'PATCH')?.offset).toBe(String(kept));
    expect(await fileSha(again, storage.key, v.fileId())).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
  }, 120_000);
});
