/**
 * tus-js-client, unchanged, in Node against /tus (contract §9): a whole upload, one resumed
 * after its connection was killed in the middle of a PATCH (through a TCP proxy the Location
 * points at), and one resumed after the origin was killed and started again.
 */
import { randomBytes } from 'node:crypto';
import * as tusJs from 'tus-js-client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { freePort, tusStorage, type TusStorage } from '../helpers/tus-origin.js';
import { stopAll } from '../helpers/processes.js';
import { MiB, sha256, tusClient } from '../helpers/tus.js';

interface Sent {
  method: string;
  offset: string | undefined;
}

/** Runs an upload to its end or its error; records the requests it made. */
function run(bytes: Buffer, options: tusJs.UploadOptions, onProgress?: (sent: number, upload: tusJs.Upload) => void) {
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
    onProgress: (n) => onProgress?.(n, upload),
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
    let cuts = 0;
    const u = run(bytes, { endpoint: `${proxy.url}/tus`, headers: { authorization: `Bearer ${o.key}` }, retryDelays: [100, 200, 400, 800, 1000, 1000, 2000, 2000] }, (n) => {
      // Twice, well inside the one PATCH the client sends.
      if ((cuts === 0 && n > 8 * MiB) || (cuts === 1 && n > 17 * MiB)) {
        cuts++;
        proxy!.cut();
      }
    });
    await u.done;
    expect(cuts).toBe(2);
    const patches = u.sent.filter((s) => s.method === 'PATCH');
    // Each resumed PATCH started where HEAD said, past the start.
    // (A cut that lands between two of the client's requests costs no PATCH, so at least one.)
    const resumed = patches.filter((p) => Number(p.offset) > 0).map((p) => Number(p.offset));
    expect(resumed.length).toBeGreaterThanOrEqual(1);
    expect(u.sent.filter((s) => s.method === 'HEAD').length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...resumed)).toBeLessThan(bytes.length);
    expect(await fileSha(o, o.key, u.fileId())).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
  }, 120_000);

  it('resumes after the origin is killed and started again', async () => {
    storage = await tusStorage();
    const port = await freePort();
    const first = await storage.start('origin', port);
    const bytes = randomBytes(24 * MiB + 5);
    const auth = { authorization: `Bearer ${storage.key}` };
    let killed = false;
    const u = run(bytes, { endpoint: `${first.url}/tus`, headers: auth, retryDelays: [] }, (n) => {
      if (!killed && n > 11 * MiB) {
        killed = true;
        first.proc.child.kill('SIGKILL');
      }
    });
    await expect(u.done).rejects.toThrow();
    await first.proc.exited;
    const url = u.upload.url!;
    expect(url).toMatch(new RegExp(`^${first.url}/tus/`));
    // The same client, given the upload's URL, as an application that stored it would.
    const again = await storage.start('origin again', port);
    const kept = Number((await tusClient(again.url, `Bearer ${storage.key}`).head(url)).headers['upload-offset']);
    expect(kept).toBeGreaterThanOrEqual(0);
    const v = run(bytes, { endpoint: `${again.url}/tus`, uploadUrl: url, headers: auth, retryDelays: [] });
    await v.done;
    expect(v.sent.filter((s) => s.method === 'POST')).toEqual([]);
    expect(v.sent.find((s) => s.method === 'PATCH')?.offset).toBe(String(kept));
    expect(await fileSha(again, storage.key, v.fileId())).toMatchObject({ status: 'ready', sha256: sha256(bytes) });
  }, 120_000);
});
