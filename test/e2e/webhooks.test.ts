/**
 * Webhooks (contract §11) against a real receiver: signed Standard Webhooks deliveries of
 * every event, in order per file, retried until the receiver takes them, listed with their
 * outcome, sent again on request; receivers on private addresses refused unless allowed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { verifyWebhook } from '../../src/sdk/index.js';
import { isSpecialAddress } from '../../src/service/url-guard.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { waitFor } from '../kit/index.js';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A receiver whose answers a test chooses: a status per call, or none at all. */
class Receiver {
  readonly got: Received[] = [];
  answer: (r: Received, n: number) => number | 'hang' = () => 200;
  private readonly hung: http.ServerResponse[] = [];
  private server!: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r = { headers: req.headers, body: Buffer.concat(chunks).toString() };
        this.got.push(r);
        const status = this.answer(r, this.got.length);
        if (status === 'hang') this.hung.push(res);
        else res.writeHead(status).end(status === 200 ? 'ok' : 'nope');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  /** Waits until `pred` holds of what arrived. */
  async until(pred: (got: Received[]) => boolean, what: string, ms = 15_000): Promise<void> {
    await waitFor(() => pred(this.got), { timeoutMs: ms, intervalMs: 25, what: () => `receiver: ${what} (got ${this.got.length})` });
  }

  async close(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

const events = (got: Received[]) => got.map((g) => JSON.parse(g.body) as { type: string; seq: number; data: any });

let o: TestOrigin;
beforeAll(async () => {
  o = await startTestOrigin({ COFFER_WEBHOOK_ALLOW_PRIVATE: '1', COFFER_WEBHOOK_RETRY_BASE_MS: '50' });
});
afterAll(async () => o?.close());

async function subscribe(r: Receiver, eventsWanted: string[] = ['*']): Promise<{ webhook_id: string; secret: string }> {
  const made = await o.post('/collections/webhooks/create', { url: r.url, events: eventsWanted });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return made.body;
}

describe('webhooks', () => {
  test('create, list without secrets, delete; bad requests', async () => {
    const r = await new Receiver().start();
    try {
      const made = await subscribe(r, ['file.ready', 'file.deleted']);
      expect(made.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      const listed = (await o.post('/collections/webhooks/list', {})).body.webhooks.find((w: any) => w.webhook_id === made.webhook_id);
      expect(listed).toEqual({ webhook_id: made.webhook_id, url: r.url, events: ['file.ready', 'file.deleted'], created_at: expect.any(String), folder_id: null, made_by: 'root' });
      expect((await o.post('/collections/webhooks/delete', { webhook_id: made.webhook_id })).body).toEqual({ webhook_id: made.webhook_id, deleted: true });
      expectError(await o.post('/collections/webhooks/delete', { webhook_id: made.webhook_id }), 404, 'webhook_not_found');
      expectError(await o.post('/collections/webhooks/create', { url: 'ftp://x/y', events: ['*'] }), 400, 'invalid_url');
      expectError(await o.post('/collections/webhooks/create', { url: 'http://u:p@example.com/', events: ['*'] }), 400, 'invalid_url');
      expectError(await o.post('/collections/webhooks/create', { url: r.url, events: [] }), 400, 'invalid_events');
      expectError(await o.post('/collections/webhooks/create', { url: r.url, events: ['file.exploded'] }), 400, 'invalid_events');
      expectError(await o.post('/collections/webhooks/create', { url: r.url, events: ['*'], secret: 'short' }), 400, 'invalid_secret');
      expectError(await o.post('/collections/webhooks/deliveries', { webhook_id: 'nope' }), 404, 'webhook_not_found');
      expectError(await o.post('/collections/webhooks/redeliver', { delivery_id: 'nope' }), 404, 'delivery_not_found');
    } finally {
      await r.close();
    }
  });

  test('every event arrives signed, in order per file, the body as recorded', async () => {
    const r = await new Receiver().start();
    try {
      const hook = await subscribe(r);
      const folder = (await o.post('/collections/folder/create', { name: 'hooked', visibility: 'Public' })).body;
      const f = await uploadBytes(o, Buffer.from('webhook me'), { name: 'w.txt', folder_id: folder.folder_id });
      await o.post('/collections/file/update', { file_id: f.file_id, name: 'w2.txt' });
      await o.post('/collections/file/update', { file_id: f.file_id, visibility: 'Private' });
      await o.post('/collections/file/delete', { file_id: f.file_id });
      await o.post('/collections/folder/delete', { folder_id: folder.folder_id });
      await r.until((g) => g.length >= 6, 'six events');
      const got = events(r.got);
      // Every event, once; in arrival order per file (events of different files and folders may overtake each other).
      expect([...got].sort((a, b) => a.seq - b.seq).map((e) => e.type)).toEqual(['folder.created', 'file.ready', 'file.updated', 'file.updated', 'file.deleted', 'folder.deleted']);
      const fileSeqs = got.filter((e) => e.data.file_id === f.file_id).map((e) => e.seq);
      expect(fileSeqs).toHaveLength(4);
      expect([...fileSeqs].sort((a, b) => a - b)).toEqual(fileSeqs);
      const ofFile = got.filter((e) => e.data.file_id === f.file_id);
      expect(ofFile[0]!.data).toMatchObject({ file_id: f.file_id, name: 'w.txt', sha256: f.sha256 });
      expect(ofFile[2]!.data).toMatchObject({ file_id: f.file_id, visibility: 'Private', name: 'w2.txt' });
      for (const g of r.got) {
        const ev = await verifyWebhook(g.headers as Record<string, string>, g.body, hook.secret);
        expect(ev.seq).toBeGreaterThan(0);
        expect(g.headers['webhook-id']).toMatch(/^msg_/);
        expect(g.headers['content-type']).toBe('application/json');
      }
      // A changed body, another secret or an old timestamp are refused.
      const g = r.got.find((x) => x.body.includes('"folder.created"'))!;
      await expect(verifyWebhook(g.headers as Record<string, string>, g.body.replace('hooked', 'hacked'), hook.secret)).rejects.toMatchObject({ code: 'invalid_webhook' });
      await expect(verifyWebhook(g.headers as Record<string, string>, g.body, `whsec_${Buffer.alloc(32, 1).toString('base64')}`)).rejects.toMatchObject({ code: 'invalid_webhook' });
      await expect(verifyWebhook(g.headers as Record<string, string>, g.body, hook.secret, { now: Math.floor(Date.now() / 1000) + 3600 })).rejects.toMatchObject({ code: 'invalid_webhook' });
      await o.post('/collections/webhooks/delete', { webhook_id: hook.webhook_id });
    } finally {
      await r.close();
    }
  });

  test('a receiver that answers 500 five times then 200 gets the event once more, and nothing after', async () => {
    const r = await new Receiver().start();
    try {
      const hook = await subscribe(r, ['file.ready']);
      r.answer = (_g, n) => (n <= 5 ? 500 : 200);
      const f = await uploadBytes(o, Buffer.from('retry me'), { name: 'retry.txt' });
      await r.until((g) => g.length >= 6, 'six attempts');
      await new Promise((res) => setTimeout(res, 600));
      expect(r.got.length).toBe(6);
      expect(new Set(r.got.map((g) => g.headers['webhook-id'])).size).toBe(1);
      expect(events(r.got).every((e) => e.data.file_id === f.file_id)).toBe(true);
      const list = (await o.post('/collections/webhooks/deliveries', { webhook_id: hook.webhook_id })).body;
      expect(list.deliveries).toHaveLength(1);
      expect(list.deliveries[0]).toMatchObject({ status: 'delivered', attempts: 6, last_status: 200, last_response: 'ok', event_type: 'file.ready' });
      // A test delivery goes out at once, signed, listed like the others.
      const tested = await o.post('/collections/webhooks/test', { webhook_id: hook.webhook_id });
      expect(tested.body).toMatchObject({ event_type: 'webhook.test', status: 'pending' });
      await r.until((g) => g.length >= 7, 'a test delivery');
      const t = await verifyWebhook(r.got[6]!.headers as Record<string, string>, r.got[6]!.body, hook.secret);
      expect(t).toMatchObject({ type: 'webhook.test', data: { webhook_id: hook.webhook_id } });
      r.got.splice(6, 1);
      // Redelivery sends it again with the same webhook-id.
      const again = await o.post('/collections/webhooks/redeliver', { delivery_id: list.deliveries[0].delivery_id });
      expect(again.status).toBe(200);
      await r.until((g) => g.length >= 7, 'a redelivery');
      expect(r.got[6]!.headers['webhook-id']).toBe(r.got[0]!.headers['webhook-id']);
      await o.post('/collections/webhooks/delete', { webhook_id: hook.webhook_id });
    } finally {
      await r.close();
    }
  });

  test('a later event for a file waits while an earlier one is retried; other files go on', async () => {
    const r = await new Receiver().start();
    try {
      const hook = await subscribe(r, ['file.ready', 'file.updated']);
      const a = await uploadBytes(o, Buffer.from('a'), { name: 'a.txt' });
      await r.until((g) => g.length >= 1, 'the first event');
      // From now on: every delivery about `a` fails three times first.
      const fails = new Map<string, number>();
      r.answer = (g) => {
        const ev = JSON.parse(g.body);
        if (ev.data.file_id !== a.file_id) return 200;
        const n = (fails.get(g.headers['webhook-id'] as string) ?? 0) + 1;
        fails.set(g.headers['webhook-id'] as string, n);
        return n <= 3 ? 503 : 200;
      };
      await o.post('/collections/file/update', { file_id: a.file_id, name: 'a1.txt' });
      await o.post('/collections/file/update', { file_id: a.file_id, name: 'a2.txt' });
      const b = await uploadBytes(o, Buffer.from('b'), { name: 'b.txt' });
      await r.until((g) => events(g).filter((e) => e.data.file_id === a.file_id && e.type === 'file.updated').length >= 8, 'both updates of a');
      const aUpdates = r.got.filter((g) => JSON.parse(g.body).data.file_id === a.file_id && JSON.parse(g.body).type === 'file.updated');
      const names = aUpdates.map((g) => JSON.parse(g.body).data.name as string);
      // Every attempt of the first update comes before any of the second.
      expect(names).toEqual(['a1.txt', 'a1.txt', 'a1.txt', 'a1.txt', 'a2.txt', 'a2.txt', 'a2.txt', 'a2.txt']);
      expect(events(r.got).some((e) => e.data.file_id === b.file_id)).toBe(true);
      await o.post('/collections/webhooks/delete', { webhook_id: hook.webhook_id });
    } finally {
      await r.close();
    }
  });

  test('a receiver that never answers does not hold up a change', async () => {
    const r = await new Receiver().start();
    try {
      const hook = await subscribe(r, ['file.ready']);
      r.answer = () => 'hang';
      const f = await uploadBytes(o, Buffer.from('hang'), { name: 'hang.txt' });
      expect(f.status).toBe('ready');
      await r.until((g) => g.length >= 1, 'the delivery');
      const d = (await o.post('/collections/webhooks/deliveries', { webhook_id: hook.webhook_id })).body.deliveries[0];
      expect(d).toMatchObject({ status: 'pending', attempts: 0 });
      await o.post('/collections/webhooks/delete', { webhook_id: hook.webhook_id });
    } finally {
      await r.close();
    }
  });
});

describe('receivers on private addresses', () => {
  let strict: TestOrigin;
  beforeAll(async () => {
    strict = await startTestOrigin();
  });
  afterAll(async () => strict?.close());

  test('loopback, private, link-local and reserved receivers are refused unless allowed', async () => {
    for (const url of ['http://127.0.0.1/h', 'http://localhost:9/h', 'http://10.1.2.3/h', 'http://192.168.0.1/h', 'http://169.254.169.254/latest', 'http://[::1]/h', 'http://[::ffff:127.0.0.1]/h', 'http://0.0.0.0/h', 'http://100.64.0.1/h']) {
      expectError(await strict.post('/collections/webhooks/create', { url, events: ['*'] }), 400, 'invalid_url', url);
    }
    for (const a of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '::1', 'fe80::1', 'fd00::1', '::ffff:10.0.0.1', '169.254.1.1']) expect(isSpecialAddress(a), a).toBe(true);
    for (const a of ['93.184.216.34', '2606:4700::1111', '8.8.8.8']) expect(isSpecialAddress(a), a).toBe(false);
  });
});
