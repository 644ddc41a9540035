/**
 * Every operation of the origin's HTTP dialects (the JSON interface, raw parts, tus, sessions,
 * the edges' feed, the open routes), each with the route it runs on, what it needs (expected.ts)
 * and how to take it as a caller on a target in a place.
 */
import { tus, tusMetadata } from '../../helpers/tus.js';
import { signIn, type MatrixCaller, type Place } from './callers.js';
import { BYTES, unique, type Ctx } from './context.js';
import type { NeedName, Target } from './expected.js';

export interface Operation {
  dialect: 'json' | 'raw' | 'tus' | 'session' | 'edge' | 'open' | 's3';
  name: string;
  /** The origin route it runs on ("METHOD /url" as declared), or the S3 router's operation name. */
  route: string;
  need: NeedName;
  target: Target;
  run(ctx: Ctx, caller: MatrixCaller, place: Place): Promise<number>;
}

const json = (path: string, need: NeedName, target: Target, body: (ctx: Ctx, caller: MatrixCaller, place: Place) => Promise<unknown>): Operation => ({
  dialect: 'json', name: path, route: `POST ${path}`, need, target,
  run: async (ctx, caller, place) => (await ctx.post(path, await body(ctx, caller, place), caller.headers)).status,
});

async function get(ctx: Ctx, method: string, path: string, headers: Record<string, string>, body?: string): Promise<number> {
  const res = await fetch(`${ctx.o.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  await res.arrayBuffer();
  return res.status;
}

const JSON_OPERATIONS: Operation[] = [
  json('/collections/upload/file', 'upload', 'place', async (ctx, _c, place) => ({
    name: unique('new') + '.txt', visibility: 'Private', size: 3, file_type: 'document', folder_id: ctx.folderOf(place),
  })),
  json('/collections/upload/file-progress', 'upload', 'place', async (ctx, c, place) => ({ ...(await ctx.uploadFor(c, place, false)), partNumber: 1, body: BYTES.toString('base64') })),
  json('/collections/upload/complete-upload', 'upload', 'place', async (ctx, c, place) => ({ file_id: (await ctx.uploadFor(c, place, true)).fileId })),
  json('/collections/upload/status', 'upload', 'place', async (ctx, c, place) => ({ file_id: (await ctx.uploadFor(c, place, false)).fileId })),
  json('/collections/upload/abort', 'upload', 'place', async (ctx, c, place) => ({ file_id: (await ctx.uploadFor(c, place, false)).fileId })),
  json('/collections/upload/grant', 'make grants', 'place', async (ctx, _c, place) => ({ folder_id: ctx.folderOf(place), max_size: 1000 })),
  json('/collections/folder/create', 'change folders', 'place', async (ctx, _c, place) => ({ name: unique('mk'), visibility: 'Public', parent_id: ctx.folderOf(place) })),
  json('/collections/folder/get', 'read folders', 'place', async (ctx, _c, place) => ({ folder_id: await ctx.freshFolder(place) })),
  json('/collections/folder/update', 'change folders', 'place', async (ctx, _c, place) => ({ folder_id: await ctx.freshFolder(place), name: unique('renamed') })),
  json('/collections/folder/delete', 'change folders', 'place', async (ctx, _c, place) => ({ folder_id: await ctx.freshFolder(place) })),
  json('/collections/list', 'read folders', 'place', async (ctx, _c, place) => ({ folder_id: ctx.folderOf(place) })),
  json('/collections/search', 'read folders', 'place', async (ctx, _c, place) => ({ folder_id: ctx.folderOf(place), query: 'up' })),
  json('/collections/file/get', 'read files', 'place', async (ctx, _c, place) => ({ file_id: (await ctx.freshFile(place)).file_id })),
  json('/collections/file/update', 'change files', 'place', async (ctx, _c, place) => ({ file_id: (await ctx.freshFile(place)).file_id, name: unique('renamed') + '.txt' })),
  json('/collections/file/delete', 'change files', 'place', async (ctx, _c, place) => ({ file_id: (await ctx.freshFile(place)).file_id })),
  json('/collections/file/download', 'read files', 'place', async (ctx, _c, place) => ({ file_id: (await ctx.freshFile(place)).file_id })),
  json('/collections/create-link', 'read files', 'place', async (ctx, _c, place) => ({ file_id: (await ctx.freshFile(place)).file_id, file_type: 'document' })),
  json('/collections/file/revoke-links', 'change files', 'place', async (ctx, _c, place) => ({ file_id: (await ctx.freshFile(place)).file_id })),
  json('/collections/keys/create', 'manage keys', 'place', async (ctx, _c, place) => ({ name: unique('child'), scopes: ['read'], folder_id: ctx.folderOf(place) })),
  json('/collections/keys/list', 'manage keys', 'none', async () => ({})),
  json('/collections/keys/revoke', 'manage keys', 'place', async (ctx, _c, place) => ({ key_id: await ctx.keyIn(place) })),
  json('/collections/usage', 'read usage', 'none', async () => ({})),
  json('/collections/edges', 'see edges', 'none', async () => ({})),
  json('/collections/webhooks/create', 'make webhooks', 'none', async () => ({ url: 'http://127.0.0.1:9/hook', events: ['file.ready'] })),
  json('/collections/webhooks/list', 'manage webhooks', 'none', async () => ({})),
  json('/collections/webhooks/delete', 'manage webhooks', 'place', async (ctx, _c, place) => ({ webhook_id: await ctx.webhookIn(place) })),
  json('/collections/webhooks/deliveries', 'manage webhooks', 'place', async (ctx, _c, place) => ({ webhook_id: await ctx.webhookIn(place) })),
  json('/collections/webhooks/test', 'manage webhooks', 'place', async (ctx, _c, place) => ({ webhook_id: await ctx.webhookIn(place) })),
  json('/collections/webhooks/redeliver', 'manage webhooks', 'place', async (ctx, _c, place) => {
    const hook = await ctx.webhookIn(place);
    const sent = await ctx.post('/collections/webhooks/test', { webhook_id: hook }, { authorization: `Bearer ${ctx.o.key}` });
    return { delivery_id: sent.body.delivery_id };
  }),
];

const RAW_PART: Operation = {
  dialect: 'raw', name: 'raw part', route: 'POST /collections/upload/file-progress', need: 'upload', target: 'place',
  run: async (ctx, caller, place) => {
    const s = await ctx.uploadFor(caller, place, false);
    const query = new URLSearchParams({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: '1' });
    return get(ctx, 'POST', `/collections/upload/file-progress?${query}`, { ...caller.headers, 'content-type': 'application/octet-stream' }, BYTES.toString());
  },
};

const tusAs = async (ctx: Ctx, caller: MatrixCaller, method: string, url: string, headers: Record<string, string> = {}, body?: Buffer) =>
  (await tus(ctx.o.url, caller.headers.authorization ?? null, { method, url, headers: { ...headers, ...(caller.headers.cookie ? caller.headers : {}) }, ...(body ? { body } : {}) })).status;

const TUS_OPERATIONS: Operation[] = [
  { dialect: 'tus', name: 'tus discovery', route: 'OPTIONS /tus', need: 'public', target: 'none', run: (ctx, c) => tusAs(ctx, c, 'OPTIONS', '/tus') },
  { dialect: 'tus', name: 'tus preflight', route: 'OPTIONS /tus/:id', need: 'public', target: 'none', run: (ctx, c) => tusAs(ctx, c, 'OPTIONS', '/tus/x') },
  {
    dialect: 'tus', name: 'tus create', route: 'POST /tus', need: 'upload', target: 'place',
    run: (ctx, c, place) => tusAs(ctx, c, 'POST', '/tus', { 'upload-length': '3', 'upload-metadata': tusMetadata({ filename: unique('t') + '.txt', folder_id: ctx.folderOf(place) }) }),
  },
  { dialect: 'tus', name: 'tus offset', route: 'HEAD /tus/:id', need: 'upload', target: 'place', run: async (ctx, c, place) => tusAs(ctx, c, 'HEAD', await ctx.tusFor(c, place)) },
  {
    dialect: 'tus', name: 'tus write', route: 'PATCH /tus/:id', need: 'upload', target: 'place',
    run: async (ctx, c, place) => tusAs(ctx, c, 'PATCH', await ctx.tusFor(c, place), { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, BYTES),
  },
  {
    dialect: 'tus', name: 'tus write (method override)', route: 'POST /tus/:id', need: 'upload', target: 'place',
    run: async (ctx, c, place) => tusAs(ctx, c, 'POST', await ctx.tusFor(c, place), {
      'x-http-method-override': 'PATCH', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream',
    }, BYTES),
  },
  { dialect: 'tus', name: 'tus terminate', route: 'DELETE /tus/:id', need: 'upload', target: 'place', run: async (ctx, c, place) => tusAs(ctx, c, 'DELETE', await ctx.tusFor(c, place)) },
];

const asHeaders = (c: MatrixCaller) => c.headers;

const SESSION_OPERATIONS: Operation[] = [
  {
    dialect: 'session', name: 'sign in', route: 'POST /session', need: 'public', target: 'none',
    // A sign-in ends the session its browser had: the session caller signs in over one of its own, made for this cell.
    run: async (ctx, c) => get(ctx, 'POST', '/session', { ...(c.kind === 'session' ? await signIn(ctx.o) : asHeaders(c)), 'content-type': 'application/json' }, JSON.stringify({ access_key: ctx.o.key })),
  },
  { dialect: 'session', name: 'session', route: 'GET /session', need: 'session', target: 'none', run: (ctx, c) => get(ctx, 'GET', '/session', asHeaders(c)) },
  {
    dialect: 'session', name: 'sign out', route: 'POST /session/end', need: 'session', target: 'none',
    // Signing out ends the session: the session caller ends one of its own, made for this cell.
    run: async (ctx, c) => get(ctx, 'POST', '/session/end', c.kind === 'session' ? await signIn(ctx.o) : asHeaders(c)),
  },
];

const edgeRoute = (method: string, url: string, path: string, body?: string): Operation => ({
  dialect: 'edge', name: `${method} ${url}`, route: `${method} ${url}`, need: 'edge', target: 'none',
  run: (ctx, c) => get(ctx, method, path, { ...asHeaders(c), ...(body ? { 'content-type': 'application/json' } : {}) }, body),
});

const openRoute = (url: string, path: string): Operation => ({
  dialect: 'open', name: `GET ${url}`, route: `GET ${url}`, need: 'public', target: 'none', run: (ctx, c) => get(ctx, 'GET', path, asHeaders(c)),
});

const EDGE_AND_OPEN: Operation[] = [
  edgeRoute('GET', '/_edge/feed', '/_edge/feed?after=0'),
  edgeRoute('GET', '/_edge/snapshot', '/_edge/snapshot'),
  edgeRoute('GET', '/_edge/file/:id', '/_edge/file/x'),
  edgeRoute('GET', '/_edge/blob/:id', '/_edge/blob/x'),
  edgeRoute('POST', '/_edge/ack', '/_edge/ack', '{"seq":0}'),
  {
    dialect: 'edge', name: 'POST /_edge/acks', route: 'POST /_edge/acks', need: 'edge', target: 'none',
    run: (ctx, c) => get(ctx, 'POST', '/_edge/acks?edge=x', { ...asHeaders(c), 'content-type': 'application/x-ndjson' }, '{"n":1,"seq":0,"renew":true}\n'),
  },
  edgeRoute('POST', '/_edge/usage', '/_edge/usage', '{"reports":[]}'),
  openRoute('/', '/'),
  openRoute('/assets/*', '/assets/missing.js'),
  openRoute('/healthz', '/healthz'),
  openRoute('/openapi.json', '/openapi.json'),
  openRoute('/docs', '/docs'),
  openRoute('/docs/*', '/docs/json'),
  openRoute('/metrics', '/metrics'),
  ...['abort', 'complete-upload', 'file', 'file-progress', 'status'].map((name): Operation => ({
    dialect: 'open', name: `preflight ${name}`, route: `OPTIONS /collections/upload/${name}`, need: 'public', target: 'none',
    run: (ctx, c) => get(ctx, 'OPTIONS', `/collections/upload/${name}`, { ...asHeaders(c), origin: 'https://app.example', 'access-control-request-method': 'POST' }),
  })),
];

export const HTTP_OPERATIONS: Operation[] = [...JSON_OPERATIONS, RAW_PART, ...TUS_OPERATIONS, ...SESSION_OPERATIONS, ...EDGE_AND_OPEN];
