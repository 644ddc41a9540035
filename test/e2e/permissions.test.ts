/**
 * The permission matrix of contract §10: every endpoint of the programmatic interface, called
 * by every kind of caller, answers the status one table predicts. A key confined to a folder
 * sees nothing outside it (404); a grant reaches its own uploads only; a missing scope is 403;
 * no, expired or revoked credentials are 401.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { ManualClock, upload } from '../kit/index.js';

type Who = 'root' | 'read' | 'write' | 'admin' | 'inside' | 'outside' | 'expired' | 'revoked' | 'grant' | 'none';
const WHO: Who[] = ['root', 'read', 'write', 'admin', 'inside', 'outside', 'expired', 'revoked', 'grant', 'none'];
/** `root`: the root key (or its session) alone, whatever scopes another key holds. */
type Need = 'read' | 'write' | 'admin' | 'upload' | 'root';

interface Ctx {
  o: TestOrigin;
  inside: string;
  outside: string;
  auth: Record<Who, string | undefined>;
}

/** Where a row's resources are made: inside the confined key's folder, or outside it. */
type Place = 'inside' | 'outside';

interface Row {
  path: string;
  need: Need;
  /** Whole-store reads a confined key may not make at all (403, inside or out). */
  unconfinedOnly?: boolean;
  /** Needs "read" beside `need` (a webhook's deliveries carry file metadata). */
  alsoRead?: boolean;
  /** Makes what the call acts on (as root, or as the grant for its own uploads) and returns the body. */
  body(ctx: Ctx, place: Place, who: Who): Promise<unknown>;
}

let seq = 0;
const unique = (p: string) => `${p}-${++seq}`;

async function rootPost(ctx: Ctx, path: string, body: unknown, as: Who = 'root'): Promise<any> {
  const r = await ctx.o.post(path, body, { headers: { authorization: ctx.auth[as]! } });
  expect(r.status, `${path} ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
}
const folderOf = (ctx: Ctx, place: Place) => (place === 'inside' ? ctx.inside : ctx.outside);
/** A grant's uploads are its own; everyone else's are started with the root key. */
const uploader = (who: Who): Who => (who === 'grant' ? 'grant' : 'root');

async function readyFile(ctx: Ctx, place: Place): Promise<any> {
  return upload(ctx.o, Buffer.from('abc'), { name: unique('f') + '.txt', visibility: 'Private', file_type: 'document', folder_id: folderOf(ctx, place) });
}
async function openUpload(ctx: Ctx, place: Place, who: Who, withPart = false): Promise<any> {
  const s = await rootPost(ctx, '/collections/upload/file', { name: unique('u') + '.txt', visibility: 'Private', size: 3, file_type: 'document', folder_id: folderOf(ctx, place) }, uploader(who));
  if (withPart) await rootPost(ctx, '/collections/upload/file-progress', { body: 'YWJj', bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 1 }, uploader(who));
  return s;
}
const newFolder = async (ctx: Ctx, place: Place) => rootPost(ctx, '/collections/folder/create', { name: unique('d'), visibility: 'Public', parent_id: folderOf(ctx, place) });

const newWebhook = (ctx: Ctx) => rootPost(ctx, '/collections/webhooks/create', { url: 'http://127.0.0.1:9/hook', events: ['folder.created'] });
/** A delivery (to a receiver that is not there) to send again. */
async function newDelivery(ctx: Ctx): Promise<string> {
  const hook = await newWebhook(ctx);
  await newFolder(ctx, 'outside');
  for (let i = 0; i < 200; i++) {
    const list = await rootPost(ctx, '/collections/webhooks/deliveries', { webhook_id: hook.webhook_id });
    if (list.deliveries.length > 0) return list.deliveries[0].delivery_id;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('no delivery was made');
}

const ROWS: Row[] = [
  { path: '/collections/upload/file', need: 'upload', body: async (ctx, place) => ({ name: unique('n') + '.txt', visibility: 'Private', size: 3, file_type: 'document', folder_id: folderOf(ctx, place) }) },
  { path: '/collections/upload/file-progress', need: 'upload', body: async (ctx, place, who) => {
    const s = await openUpload(ctx, place, who);
    return { body: 'YWJj', bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 1 };
  } },
  { path: '/collections/upload/complete-upload', need: 'upload', body: async (ctx, place, who) => ({ file_id: (await openUpload(ctx, place, who, true)).file_id }) },
  { path: '/collections/upload/status', need: 'upload', body: async (ctx, place, who) => ({ file_id: (await openUpload(ctx, place, who)).file_id }) },
  { path: '/collections/upload/abort', need: 'upload', body: async (ctx, place, who) => ({ file_id: (await openUpload(ctx, place, who)).file_id }) },
  { path: '/collections/upload/grant', need: 'write', body: async (ctx, place) => ({ folder_id: folderOf(ctx, place), max_size: 100 }) },
  { path: '/collections/folder/create', need: 'write', body: async (ctx, place) => ({ name: unique('c'), visibility: 'Public', parent_id: folderOf(ctx, place) }) },
  { path: '/collections/folder/get', need: 'read', body: async (ctx, place) => ({ folder_id: folderOf(ctx, place) }) },
  { path: '/collections/folder/update', need: 'write', body: async (ctx, place) => ({ folder_id: (await newFolder(ctx, place)).folder_id, name: unique('r') }) },
  { path: '/collections/folder/delete', need: 'write', body: async (ctx, place) => ({ folder_id: (await newFolder(ctx, place)).folder_id }) },
  { path: '/collections/list', need: 'read', body: async (ctx, place) => ({ folder_id: folderOf(ctx, place) }) },
  { path: '/collections/search', need: 'read', body: async (ctx, place) => ({ query: 'f', folder_id: folderOf(ctx, place) }) },
  { path: '/collections/file/get', need: 'read', body: async (ctx, place) => ({ file_id: (await readyFile(ctx, place)).file_id }) },
  { path: '/collections/file/update', need: 'write', body: async (ctx, place) => ({ file_id: (await readyFile(ctx, place)).file_id, name: unique('m') + '.txt' }) },
  { path: '/collections/file/delete', need: 'write', body: async (ctx, place) => ({ file_id: (await readyFile(ctx, place)).file_id }) },
  { path: '/collections/file/download', need: 'read', body: async (ctx, place) => ({ file_id: (await readyFile(ctx, place)).file_id }) },
  { path: '/collections/create-link', need: 'read', body: async (ctx, place) => ({ file_id: (await readyFile(ctx, place)).file_id, file_type: 'document' }) },
  { path: '/collections/file/revoke-links', need: 'write', body: async (ctx, place) => ({ file_id: (await readyFile(ctx, place)).file_id }) },
  // The key it makes has "read": a key gives only scopes it holds.
  { path: '/collections/keys/create', need: 'admin', alsoRead: true, body: async (ctx, place) => ({ name: unique('k'), scopes: ['read'], folder_id: folderOf(ctx, place) }) },
  { path: '/collections/keys/list', need: 'admin', body: async () => ({}) },
  { path: '/collections/edges', need: 'root', body: async () => ({}) },
  { path: '/collections/usage', need: 'read', unconfinedOnly: true, body: async () => ({ days: 7 }) },
  { path: '/collections/webhooks/create', need: 'admin', alsoRead: true, body: async () => ({ url: 'http://127.0.0.1:9/hook', events: ['*'] }) },
  { path: '/collections/webhooks/list', need: 'admin', body: async () => ({}) },
  { path: '/collections/webhooks/delete', need: 'admin', body: async (ctx) => ({ webhook_id: (await newWebhook(ctx)).webhook_id }) },
  { path: '/collections/webhooks/deliveries', need: 'admin', body: async (ctx) => ({ webhook_id: (await newWebhook(ctx)).webhook_id }) },
  { path: '/collections/webhooks/test', need: 'admin', body: async (ctx) => ({ webhook_id: (await newWebhook(ctx)).webhook_id }) },
  { path: '/collections/webhooks/redeliver', need: 'admin', body: async (ctx) => ({ delivery_id: await newDelivery(ctx) }) },
  { path: '/collections/keys/revoke', need: 'admin', body: async (ctx, place) => ({ key_id: (await rootPost(ctx, '/collections/keys/create', { name: unique('v'), scopes: ['read'], folder_id: folderOf(ctx, place) })).key_id }) },
];

/** The one table: what each caller gets from an endpoint that needs `need`. */
function expected(who: Who, need: Need): { status: number; code: string | null } {
  const ok = { status: 200, code: null };
  const forbidden = { status: 403, code: 'forbidden' };
  switch (who) {
    case 'none':
    case 'expired':
    case 'revoked':
      return { status: 401, code: 'unauthorized' };
    case 'root':
      return ok;
  }
  if (need === 'root') return forbidden;
  switch (who) {
    case 'read':
      return need === 'read' ? ok : forbidden;
    case 'write':
      return need === 'write' || need === 'upload' ? ok : forbidden;
    case 'admin':
      return need === 'admin' ? ok : forbidden;
    case 'inside':
      return need === 'admin' ? forbidden : ok;
    case 'outside':
      // Outside its folder everything is as if it did not exist; scopes are checked first.
      return need === 'admin' ? forbidden : { status: 404, code: null };
    case 'grant':
      return need === 'upload' ? ok : forbidden;
  }
}

let ctx: Ctx;
/** The origin's time: the expired key expires as the test moves it. */
const clock = new ManualClock(Date.now());

beforeAll(async () => {
  const o = await startTestOrigin({ COFFER_WEBHOOK_ALLOW_PRIVATE: '1' }, { clock });
  const root = `Bearer ${o.key}`;
  const made = async (body: Record<string, unknown>) => {
    const r = await o.post('/collections/keys/create', body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body as { key: string; key_id: string };
  };
  const inside = (await o.post('/collections/folder/create', { name: 'inside', visibility: 'Private' })).body.folder_id as string;
  const outside = (await o.post('/collections/folder/create', { name: 'outside', visibility: 'Private' })).body.folder_id as string;
  const read = await made({ name: 'reader', scopes: ['read'] });
  const write = await made({ name: 'writer', scopes: ['write'] });
  const admin = await made({ name: 'admin', scopes: ['admin'] });
  const confined = await made({ name: 'confined', scopes: ['read', 'write'], folder_id: inside });
  const expired = await made({ name: 'expired', scopes: ['read', 'write', 'admin'], expires_in: 1 });
  const revoked = await made({ name: 'revoked', scopes: ['read', 'write', 'admin'] });
  expect((await o.post('/collections/keys/revoke', { key_id: revoked.key_id })).status).toBe(200);
  const grant = await o.post('/collections/upload/grant', { folder_id: inside, max_size: 1000, max_files: 1000, expires_in: 3600 });
  expect(grant.status, JSON.stringify(grant.body)).toBe(200);
  ctx = {
    o, inside, outside,
    auth: {
      root, read: `Bearer ${read.key}`, write: `Bearer ${write.key}`, admin: `Bearer ${admin.key}`, inside: `Bearer ${confined.key}`,
      outside: `Bearer ${confined.key}`, expired: `Bearer ${expired.key}`, revoked: `Bearer ${revoked.key}`, grant: `Grant ${grant.body.grant}`, none: undefined,
    },
  };
  // Past the expired key's second.
  await clock.advance(1100);
});
afterAll(async () => ctx?.o.close());

describe('every endpoint × every caller', () => {
  for (const row of ROWS) {
    test(row.path, async () => {
      const seen: string[] = [];
      for (const who of WHO) {
        const place: Place = who === 'outside' ? 'outside' : 'inside';
        const body = await row.body(ctx, place, who);
        const headers: Record<string, string> = ctx.auth[who] === undefined ? { authorization: '' } : { authorization: ctx.auth[who]! };
        // Time passes while the call is under way (revoke-links answers once the clock has moved).
        const r = await clock.flowUntil(ctx.o.post(row.path, body, { headers }));
        const lacking = (row.unconfinedOnly && (who === 'inside' || who === 'outside')) || (row.alsoRead && who === 'admin');
        const want = lacking ? { status: 403, code: 'forbidden' } : expected(who, row.need);
        seen.push(`${who}:${r.status}`);
        if (want.status === 200) expect(r.status, `${row.path} as ${who}: ${JSON.stringify(r.body)}`).toBe(200);
        else if (want.code) expectError(r, want.status, want.code, `${row.path} as ${who}`);
        else expect(r.status, `${row.path} as ${who}: ${JSON.stringify(r.body)}`).toBe(want.status);
      }
      expect(seen.length).toBe(WHO.length);
    });
  }

  test('the table covers every endpoint the running app has under /collections', () => {
    const declared = new Set(ctx.o.origin.app.declaredRoutes.filter((r) => r.method === 'POST' && r.url.startsWith('/collections/')).map((r) => r.url));
    expect(new Set(ROWS.map((r) => r.path))).toEqual(declared);
  });
});
