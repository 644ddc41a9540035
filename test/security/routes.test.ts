/**
 * Every route of a running origin, taken from the app itself, refuses a caller without valid
 * credentials under every spelling of its path a client can send. Requests go over a raw
 * socket, so nothing between the test and the server normalises the target.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import Fastify from 'fastify';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { requireAccessDeclarations, declareScope, type DeclaredRoute } from '../../src/http/access.js';
import { buildOriginApp } from '../../src/origin/app.js';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function raw(port: number, method: string, target: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const body = method === 'POST' ? '{}' : '';
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (method === 'POST') lines.push('Content-Type: application/json', `Content-Length: ${body.length}`);
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`));
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => { data += c; });
    socket.on('error', reject);
    socket.on('close', () => {
      const end = data.indexOf('\r\n\r\n');
      const head = data.slice(0, end < 0 ? data.length : end).split('\r\n');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(head[0] ?? '');
      const fields: Record<string, string> = {};
      for (const line of head.slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) fields[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: m ? Number(m[1]) : 0, headers: fields, body: end < 0 ? '' : data.slice(end + 4) });
    });
  });
}

const hex = (c: string, upper: boolean) => {
  const h = c.charCodeAt(0).toString(16).padStart(2, '0');
  return `%${upper ? h.toUpperCase() : h}`;
};

/** Every spelling of `path` a client can send. */
function spellings(path: string): string[] {
  const out = new Set<string>([path]);
  // Each single character percent-encoded, one at a time, in upper- and lower-case hex.
  for (let i = 0; i < path.length; i++) {
    for (const upper of [true, false]) out.add(path.slice(0, i) + hex(path[i]!, upper) + path.slice(i + 1));
  }
  out.add(path.replace(/[^/]/g, (c) => hex(c, true)));
  out.add(path.replace(/./g, (c) => hex(c, false)));
  out.add(path.toUpperCase());
  out.add([...path].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join(''));
  out.add(`/${path}`);
  out.add(path.replace(/\//g, '//'));
  out.add(`${path}/`);
  out.add(`${path}//`);
  const m = /^(\/[^/]*)(.*)$/.exec(path)!;
  const first = m[1]!;
  const rest = m[2]!;
  out.add(`${first}//${rest.slice(1)}`);
  out.add(`${first}/.${rest}`);
  out.add(`/./${path.slice(1)}`);
  out.add(`/x/..${path}`);
  out.add(`/x/%2e%2e${path}`);
  out.add(`/x/%2E%2E${path}`);
  out.add(`/%2e${path}`);
  out.add(`${first}/x/..${rest}`);
  out.add(`${first}/%2e${rest}`);
  out.add(`${path};x=1`);
  out.add(`${first};a${rest}`);
  out.add(`${path}?x=1`);
  out.add(`${path}?`);
  out.add(`${path}#frag`);
  for (const host of ['http://evil.example', 'http://127.0.0.1:1', 'HTTP://evil.example', 'https://evil.example', 'http://user:pw@evil.example', 'http://[::1]']) {
    out.add(host + path);
    out.add(host + path.replace(/^\/(.)/, (_all, c: string) => `/${hex(c, true)}`));
  }
  out.add(path.replace(/\//g, '\\'));
  out.add(`\\${path.slice(1)}`);
  out.add(`${first}\\${rest.slice(1)}`);
  out.add(`${first}%2f${rest.slice(1)}`);
  out.add(`${first}%5c${rest.slice(1)}`);
  return [...out];
}

/** A refusal: the route's own 401/403, or the router not reaching any route (400 that names no field, 404, 405). */
function refused(a: RawAnswer): boolean {
  if (a.status === 401 || a.status === 403 || a.status === 404 || a.status === 405) return true;
  if (a.status !== 400) return false;
  // A validation error names its field: that would mean the handler's schema ran without credentials.
  try {
    return JSON.parse(a.body)?.error?.details?.field === undefined;
  } catch {
    return true;
  }
}

const METRICS_TOKEN = 'routes-metrics-' + randomBytes(8).toString('hex');
const EDGE_TOKEN = 'routes-edge-token-' + randomBytes(12).toString('hex');
let o: TestOrigin;
let fileId: string;
let folderId: string;
/** A live Playground session: its cookie alone (without the CSRF header) must not be enough. */
let liveCookie: string;
let liveCsrf: string;

const listing = async () => {
  const root = await o.post('/collections/list', { limit: 1000 });
  const inside = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
  expect(root.status).toBe(200);
  return JSON.stringify([root.body, inside.body]);
};

beforeAll(async () => {
  // The edges option is on (startOrigin always wires it), so the /_edge routes exist.
  // The metrics token set: /metrics is then a guarded route like the others.
  o = await startTestOrigin({ COFFER_EDGE_TOKEN: EDGE_TOKEN, COFFER_METRICS_TOKEN: METRICS_TOKEN });
  const folder = await o.post('/collections/folder/create', { name: 'kept', visibility: 'Private' });
  folderId = folder.body.folder_id;
  fileId = (await uploadBytes(o, Buffer.from('secret bytes'), { visibility: 'Private', name: 'secret.txt', folder_id: folderId })).file_id;
  const signIn = await raw(o.origin.port, 'POST', '/session', {});
  expect(signIn.status).toBe(400); // the body {} has no access_key: the route is reached, and refuses
  const res = await fetch(`${o.url}/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ access_key: o.key }) });
  expect(res.status).toBe(200);
  liveCookie = res.headers.get('set-cookie')!.split(';')[0]!;
  liveCsrf = ((await res.json()) as { csrf_token: string }).csrf_token;
});
afterAll(async () => o?.close());

const routes = (): DeclaredRoute[] => o.origin.app.declaredRoutes;

describe('route enumeration', () => {
  test('every route declares who may call it, and the list comes from the running app', () => {
    const all = routes();
    expect(all.length).toBeGreaterThan(30);
    for (const path of ['/collections/list', '/collections/create-link', '/collections/upload/file-progress', '/_edge/feed', '/_edge/blob/:id', '/session/end']) {
      expect(all.some((r) => r.url === path), path).toBe(true);
    }
    // The list is the router's: each entry is a route it has.
    for (const r of all) expect(o.origin.app.hasRoute({ method: r.method as 'GET', url: r.url }), `${r.method} ${r.url}`).toBe(true);
    for (const r of all) {
      // Upload grants reach the upload calls and nothing else (making grants needs a key).
      const uploadCall = r.url.startsWith('/collections/upload/') && r.url !== '/collections/upload/grant';
      const tus = r.url === '/tus' || r.url.startsWith('/tus/');
      // A browser's CORS preflight carries no credential: OPTIONS of the upload calls and tus only, answering headers alone.
      if (r.method === 'OPTIONS') {
        expect(uploadCall || tus, r.url).toBe(true);
        expect(r.access, r.url).toBe('public');
        continue;
      }
      if (r.url.startsWith('/collections/')) expect(r.access, r.url).toBe(uploadCall ? 'upload' : 'api');
      if (r.url.startsWith('/_edge/')) expect(r.access, r.url).toBe('edge');
      // The S3 interface (contract §12) has its own port: the Playground's origin serves no user bytes.
      expect(r.access, `${r.method} ${r.url}`).not.toBe('s3');
      if (r.url.startsWith('/session')) expect(r.access, r.url).toBe(r.method === 'POST' && r.url === '/session' ? 'sign-in' : 'session');
      // tus takes what the upload calls take (its discovery and preflights, OPTIONS, are open above).
      if (tus) expect(r.access, `${r.method} ${r.url}`).toBe('upload');
    }
    for (const method of ['OPTIONS', 'POST']) expect(all.some((r) => r.method === method && r.url === '/tus'), `${method} /tus`).toBe(true);
    for (const method of ['OPTIONS', 'HEAD', 'PATCH', 'DELETE', 'POST']) expect(all.some((r) => r.method === method && r.url === '/tus/:id'), `${method} /tus/:id`).toBe(true);
    // Nothing is public but the Playground's files, health, the OpenAPI document and its page (and the preflights above).
    const publicRoutes = all.filter((r) => r.access === 'public' && r.method !== 'OPTIONS');
    for (const r of publicRoutes) expect(r.url, r.url).toMatch(/^\/(assets\/\*|healthz|openapi\.json|docs(\/.*)?)?$/);
    // The reference page's routes come from a plugin, declared public for its scope.
    expect(publicRoutes.filter((r) => r.url.startsWith('/docs')).length).toBeGreaterThan(2);
  });

  test('the HEAD routes Fastify adds take the declaration of their GET route', () => {
    const all = routes();
    const gets = all.filter((r) => r.method === 'GET');
    expect(gets.some((r) => r.url === '/_edge/snapshot')).toBe(true);
    for (const get of gets) {
      const head = all.find((r) => r.method === 'HEAD' && r.url === get.url);
      expect(head?.access, `HEAD ${get.url}`).toBe(get.access);
    }
  });

  test('no route that needs credentials answers without them, under any spelling of its path', async () => {
    const before = await listing();
    const guarded = routes().filter((r) => r.access !== 'public' && r.access !== 'sign-in');
    expect(guarded.length).toBeGreaterThan(20);
    const failures: string[] = [];
    let sent = 0;
    for (const route of guarded) {
      const path = route.url.replace(':id', fileId);
      const credentials: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong-key' },
        { cookie: 'coffer_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
        // The edge token opens only /_edge/; the access key does not open it.
        route.access === 'edge' ? { authorization: `Bearer ${o.key}` } : { authorization: `Bearer ${EDGE_TOKEN}` },
      ];
      // A live cookie alone is GET /session's credential by design; everywhere else it needs its CSRF token too.
      if (!(route.access === 'session' && route.method !== 'POST')) credentials.push({ cookie: liveCookie }, { cookie: liveCookie, 'x-csrf-token': 'not-the-token' });
      for (const target of spellings(path)) {
        for (const headers of credentials) {
          const a = await raw(o.origin.port, route.method, target, headers);
          sent++;
          if (!refused(a)) failures.push(`${route.method} ${target} ${JSON.stringify(headers)} → ${a.status} ${a.body.slice(0, 120)}`);
        }
      }
    }
    expect(failures, failures.slice(0, 20).join('\n')).toEqual([]);
    expect(sent).toBeGreaterThan(10_000);
    // Nothing changed behind the storm: the listings, the file's visibility, the folder.
    expect(await listing()).toBe(before);
    const file = await o.post('/collections/file/get', { file_id: fileId });
    expect(file.status).toBe(200);
    expect(file.body.visibility).toBe('Private');
    expect((await o.post('/collections/folder/get', { folder_id: folderId })).status).toBe(200);
  }, 300_000);

  test('the spellings that reach a route get its 401 or 403, not a way around it', async () => {
    for (const target of ['/%63ollections/list', '/collections/%6cist', 'http://evil.example/collections/list', 'HTTP://evil.example/%63ollections/create-link',
      'http://127.0.0.1:1/collections/create-link', '/collections/list?x=1', '/%63ollections/upload/file-progress', '/collections/file/%64elete']) {
      expect((await raw(o.origin.port, 'POST', target)).status, target).toBe(401);
      expect((await raw(o.origin.port, 'POST', target, { cookie: liveCookie })).status, target).toBe(403);
    }
    for (const target of ['/_edge/snapshot', '/%5fedge/snapshot', 'http://evil.example/_edge/%73napshot', `/_edge/blob/${fileId}`]) {
      expect((await raw(o.origin.port, 'GET', target, { authorization: `Bearer ${o.key}` })).status, target).toBe(401);
    }
  });

  test('with the right credentials the routes answer (the suite is not refusing everything)', async () => {
    expect((await raw(o.origin.port, 'POST', '/collections/list', { authorization: `Bearer ${o.key}` })).status).toBe(200);
    expect((await raw(o.origin.port, 'POST', '/%63ollections/list', { authorization: `Bearer ${o.key}` })).status).toBe(200);
    expect((await raw(o.origin.port, 'POST', '/collections/list', { cookie: liveCookie, 'x-csrf-token': liveCsrf })).status).toBe(200);
    expect((await raw(o.origin.port, 'GET', '/_edge/snapshot', { authorization: `Bearer ${EDGE_TOKEN}` })).status).toBe(200);
    expect((await raw(o.origin.port, 'GET', '/session', { cookie: liveCookie })).status).toBe(200);
    expect((await raw(o.origin.port, 'GET', '/healthz')).status).toBe(200);
    expect((await raw(o.origin.port, 'GET', '/metrics', { authorization: `Bearer ${METRICS_TOKEN}` })).status).toBe(200);
  });

  test('an id longer than any (past the router\'s 100 characters) is 404 not_found on every route that takes one, with the right credentials too', async () => {
    const long = 'a'.repeat(300);
    const withId = routes().filter((r) => r.url.includes(':id') && r.method !== 'OPTIONS');
    expect(withId.length).toBeGreaterThan(5);
    for (const r of withId) {
      const headers: Record<string, string> = r.access === 'edge' ? { authorization: `Bearer ${EDGE_TOKEN}` } : { authorization: `Bearer ${o.key}`, 'tus-resumable': '1.0.0' };
      const a = await raw(o.origin.port, r.method, r.url.replace(':id', long), headers);
      expect(a.status, `${r.method} ${r.url}`).toBe(404);
      if (r.method !== 'HEAD') expect(JSON.parse(a.body).error.code, `${r.method} ${r.url}`).toBe('not_found');
    }
  });

  test('the not-found handler answers 404 to anyone', async () => {
    for (const target of ['/nothing', '/collections', '/collections/nothing', '/_edge', '/_edge/nothing']) {
      expect((await raw(o.origin.port, 'POST', target)).status, target).toBe(404);
    }
  });
});

describe('deny by default', () => {
  test('a route without a declaration is refused as it is registered, and a plugin scope can declare its routes', async () => {
    const app = Fastify();
    requireAccessDeclarations(app);
    app.get('/declared', { config: { access: 'public' } }, async () => 'ok');
    expect(() => app.get('/forgotten', async () => 'oops')).toThrow(/declares no access/);
    expect(() => app.get('/unknown', { config: { access: 'everyone' as never } }, async () => 'oops')).toThrow(/declares no access/);
    await app.register(async (scope) => {
      declareScope(scope, 'public');
      // As a plugin would: routes in a nested scope of its own, without any declaration.
      await scope.register(async (plugin) => {
        plugin.get('/plugin', async () => 'ok');
      });
    });
    await app.ready();
    expect(app.declaredRoutes.map((r) => `${r.method} ${r.url} ${r.access}`)).toEqual([
      'GET /declared public', 'HEAD /declared public', 'GET /plugin public', 'HEAD /plugin public',
    ]);
    await app.close();
  });

  test('the origin app refuses an undeclared route, at the root or from a plugin', async () => {
    const options = { service: {} as never, accessKey: 'k', baseUrl: 'http://127.0.0.1', rateLimit: 10, logLevel: 'silent' };
    const app = await buildOriginApp(options);
    expect(() => app.post('/collections/extra', async () => 'oops')).toThrow(/declares no access/);
    await app.close();
    const other = await buildOriginApp(options);
    other.register(async (scope) => {
      scope.post('/collections/extra', async () => 'oops');
    });
    await expect(other.ready()).rejects.toThrow(/declares no access/);
    await other.close().catch(() => {});
  });
});

describe('rate limiting', () => {
  test('every spelling of a route draws on one bucket per client', async () => {
    const limited = await startTestOrigin({ COFFER_RATE_LIMIT: '2' });
    try {
      const targets = ['/collections/list', '/%63ollections/list', 'http://evil.example/collections/list', '/collections/list?x=1', '/collections/%6Cist', 'HTTP://evil.example/%63ollections/%6cist'];
      const answers: RawAnswer[] = [];
      for (let i = 0; i < 12; i++) answers.push(await raw(limited.origin.port, 'POST', targets[i % targets.length]!));
      const statuses = answers.map((a) => a.status).join(',');
      // A burst of twice the rate, then 429 whatever the spelling.
      expect(answers.slice(0, 4).map((a) => a.status), statuses).toEqual([401, 401, 401, 401]);
      for (const a of answers.slice(4)) {
        expect(a.status, statuses).toBe(429);
        expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      // Sign-in shares the bucket, under its spellings too.
      for (const target of ['/session', '/%73ession', 'http://evil.example/session']) {
        expect((await raw(limited.origin.port, 'POST', target)).status, target).toBe(429);
      }
    } finally {
      await limited.close();
    }
  });
});
