/**
 * No event is lost when an origin dies between a change and its delivery: the origin is
 * killed with SIGKILL while its receiver is refusing every delivery, started again on the same
 * data, and then every event arrives, signed, in order per file.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { verifyWebhook } from '../../src/sdk/index.js';
import { spawnCoffer, stopAll, type CofferProcess } from '../helpers/processes.js';
import { jsonClient, poll, upload } from '../kit/index.js';

const KEY = 'webhook-crash-key-' + randomBytes(8).toString('hex');
let dir = '';
afterAll(async () => {
  await stopAll();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function startOrigin(): CofferProcess {
  return spawnCoffer({
    kind: 'origin', name: 'origin', args: ['origin'],
    env: {
      COFFER_HOST: '127.0.0.1', COFFER_PORT: '0', COFFER_DATA_DIR: dir, COFFER_ACCESS_KEY: KEY, COFFER_SIGNING_SECRET: 'crash-secret',
      COFFER_EDGE_TOKEN: 'crash-edge-token', COFFER_WEBHOOK_ALLOW_PRIVATE: '1', COFFER_WEBHOOK_RETRY_BASE_MS: '50', COFFER_LOG_LEVEL: 'error',
    },
  });
}

async function post(url: string, path: string, body: unknown): Promise<any> {
  const res = await jsonClient(url, KEY).post(path, body);
  expect(res.status, `${path} ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
}

test('every event made before a SIGKILL arrives after the restart, in order per file', async () => {
  dir = await mkdtemp(join(tmpdir(), 'coffer-webhook-crash-'));
  let accepting = false;
  const accepted: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (!accepting) return void res.writeHead(503).end();
      accepted.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
  try {
    const first = startOrigin();
    const url = await first.ready;
    const hook = await post(url, '/collections/webhooks/create', { url: hookUrl, events: ['*'] });
    const folder = await post(url, '/collections/folder/create', { name: 'crash', visibility: 'Public' });
    const files: string[] = [];
    for (let i = 0; i < 3; i++) {
      const rec = await upload(jsonClient(url, KEY), Buffer.from('abc'), { name: `f${i}.txt`, file_type: 'document', folder_id: folder.folder_id });
      files.push(rec.file_id);
    }
    for (const id of files) {
      await post(url, '/collections/file/update', { file_id: id, name: 'renamed-once.txt' });
      await post(url, '/collections/file/update', { file_id: id, name: 'renamed-twice.txt' });
    }
    await post(url, '/collections/file/delete', { file_id: files[0] });
    await first.stop('SIGKILL');
    expect(accepted).toEqual([]);

    accepting = true;
    const second = startOrigin();
    await second.ready;
    const expected = 1 + 3 + 6 + 1;
    await poll(() => new Set(accepted.map((a) => a.headers['webhook-id'])).size >= expected, { timeoutMs: 30_000 });
    const byId = new Map(accepted.map((a) => [a.headers['webhook-id'] as string, a]));
    expect(byId.size).toBe(expected);
    const evs = [];
    for (const a of byId.values()) evs.push(await verifyWebhook(a.headers as Record<string, string>, a.body, hook.secret));
    expect(evs.filter((e) => e.type === 'folder.created')).toHaveLength(1);
    for (const id of files) {
      // In the order they were accepted, each file's events are in log order and complete.
      const mine = accepted.map((a) => JSON.parse(a.body)).filter((e) => e.data.file_id === id);
      const distinct = [...new Map(mine.map((e) => [e.seq, e])).values()];
      expect(distinct.map((e) => e.type)).toEqual(id === files[0] ? ['file.ready', 'file.updated', 'file.updated', 'file.deleted'] : ['file.ready', 'file.updated', 'file.updated']);
      const seqs = distinct.map((e) => e.seq as number);
      expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    }
    await second.stop();
  } finally {
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  }
});
