/**
 * Webhooks belong to a subtree (issue 23, finding 2): a webhook hears only of events inside the
 * folder its maker key was confined to; a confined key sees only the webhooks in its reach
 * (others answer 404 as if absent); making one needs "read" beside "admin"; a key's webhook
 * stops when the key is revoked.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { waitFor } from '../kit/index.js';

interface Event { type: string; seq: number; data: Record<string, any> }

/** A receiver that records every event and answers `status` (200 unless changed). */
class Receiver {
  readonly got: Event[] = [];
  status = 200;
  url = '';
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.got.push(JSON.parse(Buffer.concat(chunks).toString()) as Event);
      res.writeHead(this.status).end();
    });
  });

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  async until(pred: (got: Event[]) => boolean, what: string, ms = 15_000): Promise<void> {
    await waitFor(() => pred(this.got), { timeoutMs: ms, intervalMs: 25, what: () => `receiver: ${what} (got ${JSON.stringify(this.got.map((e) => e.type))})` });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

let o: TestOrigin;
let team: string;
let child: string;
let outside: string;
const keys: Record<string, { key: string; key_id: string }> = {};
const receivers: Receiver[] = [];

const as = (who: string) => ({ headers: { authorization: `Bearer ${keys[who]!.key}` } });
const ok = async (path: string, body: unknown, who?: string): Promise<any> => {
  const r = await o.post(path, body, who ? as(who) : undefined);
  expect(r.status, `${path} ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
};
const folder = async (name: string, parent: string | null) => (await ok('/collections/folder/create', { name, visibility: 'Private', parent_id: parent })).folder_id as string;
async function receiver(): Promise<Receiver> {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
}
const hook = async (r: Receiver, who?: string): Promise<string> => (await ok('/collections/webhooks/create', { url: r.url, events: ['*'] }, who)).webhook_id;
/** A marker event inside `team`: once a receiver has it, every earlier event has been fanned out. */
const marker = async (name: string) => folder(name, team);
const hasFolder = (id: string) => (got: Event[]) => got.some((e) => e.data.folder_id === id);

beforeAll(async () => {
  o = await startTestOrigin({ COFFER_WEBHOOK_ALLOW_PRIVATE: '1', COFFER_WEBHOOK_RETRY_BASE_MS: '50' });
  team = await folder('team', null);
  child = await folder('child', team);
  outside = await folder('outside', null);
  const key = async (name: string, scopes: string[], folderId: string | null) => {
    keys[name] = await ok('/collections/keys/create', { name, scopes, folder_id: folderId });
  };
  await key('team', ['read', 'write', 'admin'], team);
  await key('child', ['read', 'admin'], child);
  await key('whole', ['read', 'admin'], null);
  await key('adminOnly', ['admin'], null);
  await key('teamAdminOnly', ['admin'], team);
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await o?.close();
});

describe('a webhook hears of its subtree only', () => {
  test("a confined admin key's * webhook gets events inside its folder, never outside", async () => {
    const rootR = await receiver();
    const teamR = await receiver();
    const rootHook = await hook(rootR);
    const teamHook = await hook(teamR, 'team');

    const out = await uploadBytes(o, Buffer.from('outside'), { name: 'secret-plan.txt', folder_id: outside });
    const atRoot = await uploadBytes(o, Buffer.from('root'), { name: 'root.txt' });
    const outFolder = await folder('out-sub', outside);
    const inFile = await uploadBytes(o, Buffer.from('inside'), { name: 'in.txt', folder_id: child });
    const leaving = await uploadBytes(o, Buffer.from('leaving'), { name: 'leaving.txt', folder_id: child });
    // Moved out: the receiver learns nothing of where it went.
    await ok('/collections/file/update', { file_id: leaving.file_id, folder_id: outside });
    // Moved in: the file is now in reach, and its event is.
    await ok('/collections/file/update', { file_id: out.file_id, folder_id: team });
    // A subtree deleted: its folders are gone, their events still placed where they happened.
    const doomed = await folder('doomed', child);
    const doomedFile = await uploadBytes(o, Buffer.from('doomed'), { name: 'doomed.txt', folder_id: doomed });
    await ok('/collections/folder/delete', { folder_id: doomed, recursive: true });
    await ok('/collections/folder/delete', { folder_id: outFolder });
    const end = await marker('end-1');

    await rootR.until(hasFolder(end), 'the marker at the root webhook');
    await teamR.until(hasFolder(end), 'the marker at the team webhook');
    const wanted = (got: Event[]) => got.filter((e) => e.data.folder_id !== end).length >= 7;
    await teamR.until(wanted, 'every inside event');

    const seen = teamR.got.map((e) => `${e.type} ${e.data.file_id ?? e.data.folder_id}`).sort();
    expect(seen).toEqual([
      `file.deleted ${doomedFile.file_id}`, `file.ready ${doomedFile.file_id}`, `file.ready ${inFile.file_id}`, `file.ready ${leaving.file_id}`,
      `file.updated ${out.file_id}`, `folder.created ${doomed}`, `folder.created ${end}`, `folder.deleted ${doomed}`,
    ].sort());
    const text = JSON.stringify(teamR.got);
    for (const id of [atRoot.file_id, outFolder, outside]) expect(text).not.toContain(id);
    // Nothing outside was even queued for it.
    const rows = (await ok('/collections/webhooks/deliveries', { webhook_id: teamHook })).deliveries;
    expect(rows.length).toBe(teamR.got.length);
    // The root's webhook heard of everything.
    expect(JSON.stringify(rootR.got)).toContain(atRoot.file_id);
    expect(JSON.stringify(rootR.got)).toContain(outFolder);
    await ok('/collections/webhooks/delete', { webhook_id: rootHook });
    await ok('/collections/webhooks/delete', { webhook_id: teamHook }, 'team');
  });
});

describe('a confined key sees only the webhooks in its reach', () => {
  test("root's and a sibling's webhooks answer 404 to it; its own and its subtree's do not", async () => {
    const r = await receiver();
    const rootHook = await hook(r);
    const teamHook = await hook(r, 'team');
    const childHook = await hook(r, 'child');
    await ok('/collections/webhooks/test', { webhook_id: rootHook });
    let rootDelivery: string | undefined;
    for (let i = 0; i < 200 && !rootDelivery; i++) {
      rootDelivery = (await ok('/collections/webhooks/deliveries', { webhook_id: rootHook })).deliveries[0]?.delivery_id;
    }
    expect(rootDelivery).toBeDefined();

    const listed = async (who?: string) => (await ok('/collections/webhooks/list', {}, who)).webhooks.map((w: any) => w.webhook_id).sort();
    expect(await listed()).toEqual(expect.arrayContaining([rootHook, teamHook, childHook]));
    expect(await listed('whole')).toEqual(expect.arrayContaining([rootHook, teamHook, childHook]));
    expect(await listed('team')).toEqual([teamHook, childHook].sort());
    expect(await listed('child')).toEqual([childHook]);
    const records = (await ok('/collections/webhooks/list', {})).webhooks;
    expect(records.find((w: any) => w.webhook_id === childHook)).toMatchObject({ folder_id: child, made_by: keys.child!.key_id });
    expect(records.find((w: any) => w.webhook_id === rootHook)).toMatchObject({ folder_id: null, made_by: 'root' });

    for (const [who, hidden] of [['team', rootHook], ['child', rootHook], ['child', teamHook]] as const) {
      const where = `${who} on ${hidden === rootHook ? 'root' : 'team'}'s webhook`;
      expectError(await o.post('/collections/webhooks/deliveries', { webhook_id: hidden }, as(who)), 404, 'webhook_not_found', where);
      expectError(await o.post('/collections/webhooks/test', { webhook_id: hidden }, as(who)), 404, 'webhook_not_found', where);
      expectError(await o.post('/collections/webhooks/delete', { webhook_id: hidden }, as(who)), 404, 'webhook_not_found', where);
    }
    expectError(await o.post('/collections/webhooks/redeliver', { delivery_id: rootDelivery }, as('team')), 404, 'delivery_not_found');
    // Still there for the root.
    expect(await listed()).toEqual(expect.arrayContaining([rootHook, teamHook, childHook]));

    // Its own, and those of keys inside its folder, it may manage.
    await ok('/collections/webhooks/deliveries', { webhook_id: childHook }, 'team');
    await ok('/collections/webhooks/test', { webhook_id: teamHook }, 'team');
    await ok('/collections/webhooks/delete', { webhook_id: childHook }, 'team');
    await ok('/collections/webhooks/delete', { webhook_id: teamHook }, 'team');
    await ok('/collections/webhooks/delete', { webhook_id: rootHook });
  });

  test('making one needs "read" beside "admin": its deliveries carry names, sizes and hashes', async () => {
    const r = await receiver();
    for (const who of ['adminOnly', 'teamAdminOnly']) {
      expectError(await o.post('/collections/webhooks/create', { url: r.url, events: ['*'] }, as(who)), 403, 'forbidden', who);
    }
    expect((await ok('/collections/webhooks/list', {}, 'adminOnly')).webhooks.map((w: any) => w.made_by)).not.toContain(keys.adminOnly!.key_id);
  });
});

describe("a key's webhook stops with the key", () => {
  test('revoked: nothing new is queued, and what waited is not sent', async () => {
    const mine = await ok('/collections/keys/create', { name: 'short-lived', scopes: ['read', 'admin'], folder_id: team });
    keys.mine = mine;
    const r = await receiver();
    const rootR = await receiver();
    const rootHook = await hook(rootR);
    const webhookId = await hook(r, 'mine');
    // The receiver fails: the first event waits for a retry.
    r.status = 503;
    const first = await marker('before-revoke');
    await r.until(hasFolder(first), 'the first attempt');
    await ok('/collections/keys/revoke', { key_id: mine.key_id });
    const after = await marker('after-revoke');
    await rootR.until(hasFolder(after), 'the marker at the root webhook');
    r.status = 200;

    let rows: any[] = [];
    for (let i = 0; i < 200; i++) {
      rows = (await ok('/collections/webhooks/deliveries', { webhook_id: webhookId })).deliveries;
      if (rows.every((d) => d.status === 'failed')) break;
      await new Promise((res) => setTimeout(res, 25));
    }
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'failed', last_error: expect.stringMatching(/revoked or has expired/) });
    await new Promise((res) => setTimeout(res, 300));
    expect(r.got.some((e) => e.data.folder_id === after)).toBe(false);
    expect(r.got.every((e) => e.data.folder_id === first)).toBe(true);
    await ok('/collections/webhooks/delete', { webhook_id: rootHook });
  });
});
