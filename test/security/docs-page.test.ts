/**
 * The OpenAPI document and the /docs page from outside: built once for many first requests,
 * public while the interface is not, HEAD like GET, and no path spelling (dot segments,
 * encodings, absolute-form targets, long paths) reaches anything but the page's own files or
 * gets an answer outside the contract's error shape.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/api.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectContractError, rawRequest, rawSocket } from '../helpers/raw-http.js';
import { sha256 } from '../kit/index.js';

// ================================================================ /openapi.json and /docs

describe('lazy OpenAPI document and /docs', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin();
  });
  afterAll(async () => o?.close());

  it('many concurrent first requests build it once and all get identical answers', async () => {
    const paths = ['/openapi.json', '/docs/json', '/docs', '/docs/', '/docs/static/swagger-ui.css'];
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => rawRequest(o.url, paths[i % paths.length]!)));
    for (const [i, a] of answers.entries()) expect(a.status, paths[i % paths.length]).toBe(200);
    for (const p of paths) {
      const bodies = answers.filter((_, i) => paths[i % paths.length] === p).map((a) => sha256(a.body));
      expect(new Set(bodies).size, p).toBe(1);
    }
    // The same document whichever way it is asked for.
    expect(answers[0]!.json).toEqual(answers[1]!.json);
    expect(answers[0]!.json.openapi).toMatch(/^3\./);
  });

  it('/openapi.json still documents every route of the interface', async () => {
    const doc = (await rawRequest(o.url, '/openapi.json')).json;
    const paths = Object.keys(doc.paths);
    for (const p of ['/collections/upload/file', '/collections/upload/file-progress', '/collections/upload/complete-upload', '/collections/upload/status',
      '/collections/upload/abort', '/collections/upload/grant', '/collections/file/get', '/collections/list', '/collections/search', '/collections/folder/create',
      '/collections/keys/create', '/collections/keys/list', '/collections/keys/revoke', '/collections/webhooks/create', '/collections/usage', '/collections/file/revoke-links']) {
      expect(paths, p).toContain(p);
    }
    // Both forms of file-progress are shown (swaggerTransform still applied).
    expect(Object.keys(doc.paths['/collections/upload/file-progress'].post.requestBody.content).sort()).toEqual(['application/json', 'application/octet-stream']);
    // The documentation's own routes are not in it.
    expect(paths.filter((p) => p === '/openapi.json' || p.startsWith('/docs'))).toEqual([]);
  });

  it('/docs needs no key while /collections/* still do', async () => {
    for (const p of ['/openapi.json', '/docs', '/docs/', '/docs/json', '/docs/static/swagger-ui.css']) {
      expect((await rawRequest(o.url, p)).status, p).toBe(200);
      expect((await rawRequest(o.url, p, { headers: { authorization: 'Bearer wrong' } })).status, p).toBe(200);
    }
    const a = await rawRequest(o.url, '/collections/list', { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from('{}') });
    expectError(a, 401, 'unauthorized');
  });

  it('HEAD answers like GET: same status and headers, the right Content-Length, no body', async () => {
    for (const p of ['/openapi.json', '/docs', '/docs/', '/docs/json', '/docs/yaml', '/docs/static/swagger-ui.css', '/docs/static/index.html', '/docs/nope']) {
      const g = await rawRequest(o.url, p);
      const h = await rawRequest(o.url, p, { method: 'HEAD' });
      expect(h.status, p).toBe(g.status);
      expect(h.body.length, p).toBe(0);
      expect(h.headers['content-type'], p).toBe(g.headers['content-type']);
      expect(h.headers.location, p).toBe(g.headers.location);
      expect(g.headers['transfer-encoding'], p).toBeUndefined();
      expect(Number(g.headers['content-length']), p).toBe(g.body.length);
      expect(Number(h.headers['content-length']), p).toBe(g.body.length);
    }
  });

  it('nothing outside swagger-ui\'s static files can be read through /docs', async () => {
    const attempts = [
      '/docs/static/..%2f..%2fpackage.json', '/docs/static/../../package.json', '/docs/static/%2e%2e/%2e%2e/package.json', '/docs/..%2f..%2f..%2fpackage.json',
      '/docs/static/..%5c..%5cpackage.json', '/docs/static/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      '/docs/static/....//....//package.json', '/docs/static/%252e%252e/%252e%252e/package.json', '/docs/static//etc/passwd', '/docs/static/%00../package.json',
      '/docs/static/package.json', '/docs/static/../../../../../../../../etc/passwd', '/docs/static/.%2e/.%2e/package.json', '/docs\\..\\..\\package.json',
    ];
    for (const p of attempts) {
      const a = await rawRequest(o.url, p);
      const text = a.body.toString();
      expect(text, p).not.toMatch(/"name":\s*"(coffer|swagger-ui-dist|@fastify)/);
      expect(text, p).not.toMatch(/root:.*:0:0:/);
      expect(a.status, p).not.toBe(500);
    }
  });

  it('unknown /docs paths answer the contract\'s JSON error (404), like any unknown path', async () => {
    for (const p of ['/docs/nope', '/docs//json', '/docs/%00', '/docs/json;x=1', '/docs/static/missing.js', '/docs/uiConfig', `/docs/${'a'.repeat(6000)}`]) {
      expectContractError(await rawRequest(o.url, p), 404, p);
    }
  });

  it('dot segments under /docs do not reach other routes (no 200 "null" for /docs/.., /docs/../healthz)', async () => {
    for (const p of ['/docs/..', '/docs/../', '/docs/%2e%2e/', '/docs/../healthz', '/docs/%2E%2E/healthz', '/docs/./../healthz']) {
      const a = await rawRequest(o.url, p);
      const where = `${p} -> ${a.status} ${a.body.toString().slice(0, 100)}`;
      expect(a.body.toString(), where).not.toBe('null');
      // Either the same answer as the path it spells, or the contract's 404.
      if (a.status !== 404) expect(a.json, where).toEqual({ status: 'ok' });
      else expectContractError(a, 404, where);
    }
  });

  it('query strings are ignored and ; parameters are not a different path', async () => {
    const plain = await rawRequest(o.url, '/docs/json');
    const q = await rawRequest(o.url, '/docs/json?url=http://evil.example/x.json&x=%00');
    expect(q.status).toBe(200);
    expect(sha256(q.body)).toBe(sha256(plain.body));
    const page = await rawRequest(o.url, '/docs/?configUrl=http://evil.example/c.json');
    expect(page.status).toBe(200);
    expect(page.body.toString()).not.toContain('evil.example');
  });

  it('an absolute-form request line is answered from the path only: no foreign host in the answer', async () => {
    const plain = await rawRequest(o.url, '/docs/');
    for (const target of ['http://evil.example/docs/', 'http://evil.example/docs', 'http://evil.example/docs/json', 'http://evil.example/docs/static/index.html',
      'http://evil.example:81/docs/static/swagger-initializer.js']) {
      const answer = await rawSocket(o.origin.port, `GET ${target} HTTP/1.1\r\nHost: good.example\r\nConnection: close\r\n\r\n`);
      expect(answer, target).toMatch(/^HTTP\/1\.1 (200|302|404) /);
      expect(answer, target).not.toContain('evil.example');
      const [head, ...rest] = answer.split('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(head!)?.[1];
      expect(length, target).toBeDefined();
      expect(Buffer.byteLength(rest.join('\r\n\r\n'), 'latin1'), target).toBe(Number(length));
      expect(head!.toLowerCase(), target).not.toContain('transfer-encoding');
    }
    const abs = await rawSocket(o.origin.port, 'GET http://evil.example/docs/ HTTP/1.1\r\nHost: good.example\r\nConnection: close\r\n\r\n');
    expect(abs.split('\r\n\r\n').slice(1).join('\r\n\r\n')).toBe(plain.body.toString('latin1'));
  });

  it('a very long /docs path is refused cleanly (431 JSON), and the origin answers afterwards', async () => {
    const answer = await rawSocket(o.origin.port, `GET /docs/${'a'.repeat(40_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 (414|431) /);
    expect(answer).toContain('"error"');
    expect((await rawRequest(o.url, '/docs/json')).status).toBe(200);
  });
});
