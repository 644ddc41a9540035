/**
 * The origin serves the Playground's build at its root: index.html with its security
 * headers, hashed assets cached for good, JSON errors for anything else, and a clear 503
 * when the build is missing. A fixture build pins the details; the real build and the
 * built CLI show it works as shipped.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAYGROUND_BUILD, startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { spawnCoffer, stopAll } from '../helpers/processes.js';
import { DEFAULT_PLAYGROUND_DIR } from '../../src/origin/playground.js';

const IMMUTABLE = 'public, max-age=31536000, immutable';

const csp = (cdn: string) =>
  `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data: ${cdn}; media-src 'self' ${cdn}; connect-src 'self'; `
  + "worker-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A request with the path sent exactly as given: fetch would normalise `..` away. */
function raw(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<Raw> {
  const url = new URL(base);
  return new Promise((resolvePromise, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolvePromise({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const json = (r: Raw) => JSON.parse(r.body.toString('utf8'));

function expectJsonError(r: Raw, status: number, code: string): void {
  expect(r.status, r.body.toString()).toBe(status);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  const body = json(r);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(10);
}

const SECRET = 'secret-outside-the-assets-' + randomBytes(6).toString('hex');
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/app-3f9a1c.js"></script></head><body><div id="app"></div></body></html>\n';
const APP_JS = 'console.log("playground");\n';
const FONT = randomBytes(3000);

/** A small build of known bytes, with a file beside the assets that must never be served from /assets. */
async function fixtureBuild(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'coffer-pg-fixture-'));
  await mkdir(join(root, 'assets', 'nested'), { recursive: true });
  await mkdir(join(root, 'assets-evil'));
  await writeFile(join(root, 'index.html'), INDEX);
  await writeFile(join(root, 'secret.txt'), SECRET);
  await writeFile(join(root, 'assets-evil', 'x.js'), SECRET);
  await writeFile(join(root, 'assets', 'app-3f9a1c.js'), APP_JS);
  await writeFile(join(root, 'assets', 'app-3f9a1c.css'), 'body{margin:0}\n');
  await writeFile(join(root, 'assets', 'icon-77aa.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  await writeFile(join(root, 'assets', 'font-1b2c.woff2'), FONT);
  await writeFile(join(root, 'assets', 'app-3f9a1c.js.map'), '{"version":3}');
  await writeFile(join(root, 'assets', 'nested', 'worker-9d8e.js'), 'self.onmessage = () => {};\n');
  await writeFile(join(root, 'assets', '.hidden'), SECRET);
  return root;
}

describe('the Playground from a build', () => {
  let o: TestOrigin;
  let build: string;
  beforeAll(async () => {
    build = await fixtureBuild();
    o = await startTestOrigin({}, { playgroundDir: build });
  });
  afterAll(async () => {
    await o.close();
    await rm(build, { recursive: true, force: true });
  });

  it('GET / answers index.html, revalidated on every load, with the security headers', async () => {
    const r = await raw(o.url, 'GET', '/');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe(INDEX);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.headers['content-length']).toBe(String(Buffer.byteLength(INDEX)));
    expect(r.headers['cache-control']).toBe('no-cache');
    expect(r.headers['content-security-policy']).toBe(csp('http://cdn.test'));
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['referrer-policy']).toBe('no-referrer');
    expect(r.headers['x-frame-options']).toBe('DENY');
    const etag = r.headers.etag as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);

    const again = await raw(o.url, 'GET', '/', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body).toHaveLength(0);
    expect(again.headers.etag).toBe(etag);
    expect((await raw(o.url, 'GET', '/', { 'if-none-match': `"other", W/${etag}` })).status).toBe(304);
    expect((await raw(o.url, 'GET', '/', { 'if-none-match': '"other"' })).status).toBe(200);

    const head = await raw(o.url, 'HEAD', '/');
    expect(head.status).toBe(200);
    expect(head.body).toHaveLength(0);
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(INDEX)));
    expect(head.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(head.headers['content-security-policy']).toBe(csp('http://cdn.test'));
    // The query string (the Playground keeps its state there) changes nothing.
    expect((await raw(o.url, 'GET', '/?folder=abc&view=list')).body.toString()).toBe(INDEX);
  });

  it('names the delivery origin in the policy as it is at each request', async () => {
    const before = o.config.cdnUrl;
    try {
      // `coffer serve` on a free edge port learns the address only after start; a path prefix is no part of an origin.
      o.config.cdnUrl = 'https://edge.example.net:8443/cdn';
      const r = await raw(o.url, 'GET', '/');
      expect(r.headers['content-security-policy']).toBe(csp('https://edge.example.net:8443'));
      o.config.cdnUrl = 'http://127.0.0.1:45678';
      expect((await raw(o.url, 'GET', '/')).headers['content-security-policy']).toBe(csp('http://127.0.0.1:45678'));
      // Files' delivery URLs follow the same address.
      expect(o.origin.service.deliveryUrl()).toBe('http://127.0.0.1:45678');
    } finally {
      o.config.cdnUrl = before;
    }
  });

  it('serves hashed assets with their type, cached for a year as immutable, with ETag and 304', async () => {
    const cases: Array<[string, string, Buffer | string]> = [
      ['/assets/app-3f9a1c.js', 'text/javascript; charset=utf-8', APP_JS],
      ['/assets/app-3f9a1c.css', 'text/css; charset=utf-8', 'body{margin:0}\n'],
      ['/assets/icon-77aa.svg', 'image/svg+xml; charset=utf-8', '<svg xmlns="http://www.w3.org/2000/svg"/>'],
      ['/assets/font-1b2c.woff2', 'font/woff2', FONT],
      ['/assets/app-3f9a1c.js.map', 'application/json; charset=utf-8', '{"version":3}'],
      ['/assets/nested/worker-9d8e.js', 'text/javascript; charset=utf-8', 'self.onmessage = () => {};\n'],
    ];
    for (const [path, type, bytes] of cases) {
      const r = await raw(o.url, 'GET', path);
      expect(r.status, path).toBe(200);
      expect(r.body.equals(Buffer.from(bytes)), path).toBe(true);
      expect(r.headers['content-type'], path).toBe(type);
      expect(r.headers['content-length'], path).toBe(String(Buffer.from(bytes).length));
      expect(r.headers['cache-control'], path).toBe(IMMUTABLE);
      expect(r.headers['x-content-type-options'], path).toBe('nosniff');
      expect(r.headers['last-modified'], path).toEqual(expect.any(String));
      const etag = r.headers.etag as string;
      expect(etag, path).toMatch(/^"[A-Za-z0-9_-]+"$/);
      const cached = await raw(o.url, 'GET', path, { 'if-none-match': etag });
      expect(cached.status, path).toBe(304);
      expect(cached.body, path).toHaveLength(0);
      expect(cached.headers['cache-control'], path).toBe(IMMUTABLE);
      const head = await raw(o.url, 'HEAD', path);
      expect(head.status, path).toBe(200);
      expect(head.body, path).toHaveLength(0);
      expect(head.headers['content-length'], path).toBe(String(Buffer.from(bytes).length));
      expect(head.headers['content-type'], path).toBe(type);
    }
    // Different bytes, different tags.
    const a = (await raw(o.url, 'HEAD', '/assets/app-3f9a1c.js')).headers.etag;
    const b = (await raw(o.url, 'HEAD', '/assets/app-3f9a1c.css')).headers.etag;
    expect(a).not.toBe(b);
  });

  it('answers 404 in JSON for any other path under /assets, directories included', async () => {
    for (const path of ['/assets/missing-123.js', '/assets/nested', '/assets/nested/', '/assets/', '/assets/nested/missing.js']) {
      for (const method of ['GET', 'HEAD']) {
        const r = await raw(o.url, method, path);
        expect(r.status, `${method} ${path}`).toBe(404);
        if (method === 'GET') expectJsonError(r, 404, 'not_found');
        expect(r.headers['cache-control'], path).not.toBe(IMMUTABLE);
      }
    }
  });

  it('refuses every path that leads out of the assets directory, or to a hidden file', async () => {
    const attempts = [
      '/assets/../secret.txt', '/assets/../index.html', '/assets/%2e%2e/secret.txt', '/assets/..%2fsecret.txt', '/assets/%2e%2e%2fsecret.txt',
      '/assets/nested/..%2f..%2fsecret.txt', '/assets/nested/../../secret.txt', '/assets/..%5csecret.txt', '/assets/%2e%2e%5csecret.txt',
      '/assets/%2fetc%2fpasswd', '/assets//etc/passwd', '/assets/../assets-evil/x.js', '/assets/.hidden', '/assets/%2ehidden',
      '/assets/app-3f9a1c.js%00.png', '/assets/./app-3f9a1c.js', '/assets/nested/./worker-9d8e.js',
    ];
    for (const path of attempts) {
      const r = await raw(o.url, 'GET', path);
      expect([400, 404], `${path}: ${r.status} ${r.body}`).toContain(r.status);
      expect(r.headers['content-type'], path).toMatch(/^application\/json/);
      expect(r.body.toString().includes(SECRET), path).toBe(false);
      expect(r.body.toString().includes('playground'), path).toBe(false);
    }
  });

  it('leaves every other route as it was', async () => {
    const health = await raw(o.url, 'GET', '/healthz');
    expect(health.status).toBe(200);
    expect(json(health)).toEqual({ status: 'ok' });
    const openapi = await raw(o.url, 'GET', '/openapi.json');
    expect(openapi.status).toBe(200);
    const doc = json(openapi);
    expect(doc.openapi).toBe('3.1.0');
    // The Playground's routes are no part of the interface's document.
    expect(Object.keys(doc.paths).filter((p) => p === '/' || p.startsWith('/assets'))).toEqual([]);
    const docs = await fetch(o.url + '/docs/');
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');
    // The edges' feed still asks for its own credential.
    expectJsonError(await raw(o.url, 'GET', '/_edge/snapshot'), 401, 'unauthorized');
    expect((await o.post('/collections/list', {})).status).toBe(200);
    expectJsonError(await raw(o.url, 'GET', '/index.html'), 404, 'not_found');
    expectJsonError(await raw(o.url, 'GET', '/nothing/here'), 404, 'not_found');
    expectJsonError(await raw(o.url, 'POST', '/'), 404, 'not_found');
  });
});

describe('without a build', () => {
  it('answers 503 in JSON saying to run npm run build, and keeps serving everything else', async () => {
    const missing = join(tmpdir(), 'coffer-no-build-' + randomBytes(6).toString('hex'));
    const o = await startTestOrigin({}, { playgroundDir: missing });
    try {
      for (const method of ['GET', 'HEAD']) {
        for (const path of ['/', '/assets/app.js']) {
          const r = await raw(o.url, method, path);
          expect(r.status, `${method} ${path}`).toBe(503);
          if (method === 'GET') {
            expectJsonError(r, 503, 'unavailable');
            expect(json(r).error.message).toContain('npm run build');
          }
        }
      }
      expect((await raw(o.url, 'GET', '/healthz')).status).toBe(200);
      expect((await o.post('/collections/list', {})).status).toBe(200);
      // A build that appears later is served without a restart.
      await mkdir(join(missing, 'assets'), { recursive: true });
      await writeFile(join(missing, 'index.html'), INDEX);
      expect((await raw(o.url, 'GET', '/')).body.toString()).toBe(INDEX);
    } finally {
      await o.close();
      await rm(missing, { recursive: true, force: true });
    }
  });

  it('looks for the build next to the compiled origin module, not in the working directory', () => {
    const here = dirname(fileURLToPath(new URL('../../src/origin/playground.ts', import.meta.url)));
    expect(DEFAULT_PLAYGROUND_DIR.replace(/\/$/, '')).toBe(join(here, '..', 'playground'));
  });
});

describe('the real build', () => {
  afterAll(async () => {
    await stopAll();
  });

  /** The scripts and styles index.html loads. */
  const assetPaths = (html: string) => [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);

  it('is what npm run build left in dist/playground, loadable under its own policy', async () => {
    const index = await readFile(join(PLAYGROUND_BUILD, 'index.html'), 'utf8').catch(() => {
      throw new Error('dist/playground/index.html is missing: run `npm run build` before these tests.');
    });
    // The policy allows no inline script or style: the page must not need any.
    expect(index).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(index).not.toMatch(/<style[\s>]/i);
    expect(index).not.toMatch(/\sstyle="/i);
    expect(index).not.toMatch(/\son[a-z]+="/i);
    const paths = assetPaths(index);
    expect(paths.length).toBeGreaterThan(0);
    for (const p of paths) expect(p).toMatch(/^\/assets\/[A-Za-z0-9._/-]+$/);
    expect((await readdir(join(PLAYGROUND_BUILD, 'assets'))).length).toBeGreaterThan(0);
  });

  it('is served by the built CLI from any working directory', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'coffer-pg-cli-'));
    const elsewhere = await mkdtemp(join(tmpdir(), 'coffer-pg-cwd-'));
    try {
      const origin = spawnCoffer({
        name: 'origin', kind: 'origin', args: ['origin'], cwd: elsewhere,
        env: { COFFER_PORT: '0', COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: 'pg-cli-key-0123456789', COFFER_SIGNING_SECRET: 'pg-cli-secret', COFFER_CDN_URL: 'http://127.0.0.1:9' },
      });
      const url = await origin.ready;
      const page = await raw(url, 'GET', '/');
      expect(page.status, page.body.toString()).toBe(200);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.body.toString()).toBe(await readFile(join(PLAYGROUND_BUILD, 'index.html'), 'utf8'));
      expect(page.headers['content-security-policy']).toBe(csp('http://127.0.0.1:9'));
      for (const path of assetPaths(page.body.toString())) {
        const asset = await raw(url, 'GET', path);
        expect(asset.status, path).toBe(200);
        expect(asset.headers['cache-control'], path).toBe(IMMUTABLE);
        expect(asset.headers['content-type'], path).toMatch(path.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
        expect(asset.body.equals(await readFile(join(PLAYGROUND_BUILD, path))), path).toBe(true);
      }
      await origin.stop();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await rm(elsewhere, { recursive: true, force: true });
    }
  });
});
