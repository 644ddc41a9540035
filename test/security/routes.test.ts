/**
 * Every route of a running origin, taken from the app itself, refuses a caller without valid
 * credentials under every spelling of its path a client can send. Requests go over a raw
 * socket, so nothing between the test and the server normalises the target.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import Fastify from 'fastify';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { requireAccessDeclarations } from '../../src/origin/access.js';

interface RawAnswer {
  status: number;
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
      const m = /^HTTP\/1\.1 (\d{3})/.exec(data);
      resolve({ status: m ? Number(m[1]) : 0, body: data.slice(data.indexOf('\r\n\r\n') + 4) });
    });
  });
}

const hex = (c: string, upper: boolean) => {
  const h = c.charCodeAt(0).toString(16).padStart(2, '0');
  return `%${upper ? h.toUpperCase() : h}`;
};

/** Every spelling of `path` a client can send. */
export function spellings(path: string): string[] {
  const out = new Set<string>([path]);
  for (let i = 0; i < path.length; i++) {
    for (const upper of [true, false]) out.add(path.slice(0, i) + hex(path[i]!, upper) + path.slice(i + 1));
  }
  out.add(path.replace(/[^/]/g, (c) => hex(c, true)));
  out.add(path.toUpperCase());
  out.add([...path].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join(''));
  out.add(`/${path}`);
  out.add(path.replace(/\//g, '//'));
  out.add(`${path}/`);
  out.add(`${path}//`);
  const m = /^(\/[^/]*)(.*)$/.exec(path)!;
  const first = m[1]!;
  const rest = m[2]!;
  out.add(`${first}/.${rest}`);
  out.add(`/./${path.slice(1)}`);
  out.add(`/x/..${path}`);
  out.add(`/x/%2e%2e${path}`);
  out.add(`/%2e${path}`);
  out.add(`${first}/x/..${rest}`);
  out.add(`${path};x=1`);
  out.add(`${first};a${rest}`);
  out.add(`${path}?x=1`);
  out.add(`${path}?`);
  out.add(`${path}#frag`);
  for (const host of ['http://evil.example', 'http://127.0.0.1:1', 'HTTP://evil.example', 'https://evil.example', 'http://user:pw@evil.example']) out.add(host + path);
  out.add(path.replace(/\//g, '\\'));
  out.add(`\\${path.slice(1)}`);
  out.add(`${first}\\${rest.slice(1)}`);
  out.add(`${first}%2f${rest.slice(1)}`);
  out.add(`${first}%5c${rest.slice(1)}`);
  return [...out];
}

/** A refusal: the route's own 401/403, or the router not reaching any route (400 that names no field, 404, 405). */
function refused(a: RawAnswer): boolean {
  if (a.status === 401 || a.status === 403 || a.status === 404 || a.status === 405 || a.status === 429) return true;
  if (a.status !== 400) return false;
  // A validation error names its field: that would mean the handler's schema ran without credentials.
  try {
    return JSON.parse(a.body)?.error?.details?.field === undefined;
  } catch {
    return true;
  }
}

let o: TestOrigin;
let fileId: string;
let folderId: string;

beforeAll(async () => {
  o = await startTestOrigin();
  const folder = await o.post('/collections/folder/create', { name: 'kept', visibility: 'Private' });
  folderId = folder.body.folder_id;
  fileId = (await uploadBytes(o, Buffer.from('secret bytes'), { visibility: 'Private', name: 'secret.txt', folder_id: folderId })).file_id;
});
afterAll(async () => o?.close());

describe('route enumeration', () => {
  test('every route declares who may call it, and the list comes from the running app', () => {
    const routes = o.origin.app.declaredRoutes;
    expect(routes.length).toBeGreaterThan(30);
    for (const path of ['/collections/list', '/collections/create-link', '/collections/upload/file-progress', '/_edge/blob/:id', '/session/end']) {
      expect(routes.some((r) => r.url === path), path).toBe(true);
    }
    for (const r of routes) {
      if (r.url.startsWith('/collections/')) expect(r.access, r.url).toBe('api');
      if (r.url.startsWith('/_edge/')) expect(r.access, r.url).toBe('edge');
    }
  });

  test('no route that needs credentials answers without them, under any spelling of its path', async () => {
    const guarded = o.origin.app.declaredRoutes.filter((r) => r.access === 'api' || r.access === 'edge' || r.access === 'session');
    expect(guarded.length).toBeGreaterThan(20);
    const failures: string[] = [];
    let sent = 0;
    for (const route of guarded) {
      const path = route.url.replace(':id', fileId);
      for (const target of spellings(path)) {
        for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong-key' }, { cookie: 'coffer_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }]) {
          const a = await raw(o.origin.port, route.method, target, headers);
          sent++;
          if (!refused(a)) failures.push(`${route.method} ${target} ${JSON.stringify(headers)} → ${a.status} ${a.body.slice(0, 120)}`);
        }
      }
    }
    expect(failures, failures.slice(0, 20).join('\n')).toEqual([]);
    expect(sent).toBeGreaterThan(2000);
    // Nothing changed behind the storm.
    const file = await o.post('/collections/file/get', { file_id: fileId });
    expect(file.status).toBe(200);
    expect(file.body.visibility).toBe('Private');
    expect((await o.post('/collections/folder/get', { folder_id: folderId })).status).toBe(200);
  }, 240_000);

  test('the spellings that reach a route get its 401, not a way around it', async () => {
    for (const target of ['/%63ollections/list', '/collections/%6cist', 'http://evil.example/collections/list', 'http://127.0.0.1:1/collections/create-link', '/collections/list?x=1']) {
      const a = await raw(o.origin.port, 'POST', target);
      expect(a.status, target).toBe(401);
    }
  });

  test('with the key, the plain spelling works (the suite is not refusing everything)', async () => {
    const a = await raw(o.origin.port, 'POST', '/collections/list', { authorization: `Bearer ${o.key}` });
    expect(a.status).toBe(200);
  });
});

describe('deny by default', () => {
  test('a route without a declaration stops the app from starting', async () => {
    const app = Fastify();
    requireAccessDeclarations(app);
    app.get('/declared', { config: { access: 'public' } }, async () => 'ok');
    app.get('/forgotten', async () => 'oops');
    await expect(app.ready()).rejects.toThrow(/declares no access/);
    await app.close().catch(() => {});
  });
});

describe('rate limiting', () => {
  test('every spelling of a route draws on one bucket per client', async () => {
    const limited = await startTestOrigin({ COFFER_RATE_LIMIT: '2' });
    try {
      const targets = ['/collections/list', '/%63ollections/list', 'http://evil.example/collections/list', '/collections/list?x=1', '/collections/%6Cist', '/collections/list?'];
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push((await raw(limited.origin.port, 'POST', targets[i % targets.length]!)).status);
      // A burst of twice the rate, then 429 whatever the spelling.
      expect(statuses.slice(0, 4), statuses.join(',')).toEqual([401, 401, 401, 401]);
      expect(statuses.slice(4).every((s) => s === 429), statuses.join(',')).toBe(true);
    } finally {
      await limited.close();
    }
  });
});
