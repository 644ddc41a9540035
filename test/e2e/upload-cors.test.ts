/**
 * CORS for the upload calls (contract §10): a page on another site can upload with a grant.
 * The preflight and every answer of an upload call (refusals too) are readable from any
 * site, never with credentials; no other call answers cross-origin at all. The browser
 * itself is in test/browser/browser-upload-example.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';

let o: TestOrigin;
beforeAll(async () => {
  o = await startTestOrigin();
});
afterAll(async () => o?.close());

const SITE = 'https://app.example';
const UPLOAD_CALLS = ['/collections/upload/file', '/collections/upload/file-progress', '/collections/upload/complete-upload', '/collections/upload/status', '/collections/upload/abort'];

const preflight = (path: string, headers = 'authorization, content-type') => fetch(`${o.url}${path}`, {
  method: 'OPTIONS',
  headers: { origin: SITE, 'access-control-request-method': 'POST', 'access-control-request-headers': headers },
});

describe('CORS of the upload calls', () => {
  test('each upload call answers a preflight: any site, POST, the Authorization and Content-Type headers, never credentials', async () => {
    for (const path of UPLOAD_CALLS) {
      const res = await preflight(path);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
      expect(res.headers.get('access-control-allow-methods'), path).toBe('POST');
      expect(res.headers.get('access-control-allow-headers')?.toLowerCase(), path).toBe('authorization, content-type');
      expect(Number(res.headers.get('access-control-max-age')), path).toBeGreaterThan(0);
      expect(res.headers.get('access-control-allow-credentials'), path).toBeNull();
      expect(await res.text(), path).toBe('');
    }
  });

  test('a grant\'s upload answers, and its refusals, are readable cross-origin; a key\'s other calls are not', async () => {
    const { grant } = (await o.post('/collections/upload/grant', { max_size: 100 })).body as { grant: string };
    const withGrant = { headers: { authorization: `Grant ${grant}`, origin: SITE } };
    const started = await o.post('/collections/upload/file', { name: 'a.txt', visibility: 'Public', size: 3, file_type: 'document' }, withGrant);
    expect(started.status).toBe(200);
    expect(started.headers.get('access-control-allow-origin')).toBe('*');
    expect(started.headers.get('access-control-expose-headers')).toMatch(/Retry-After/);

    // A raw part (contract §9), its fields in the query string, is answered to the other site too.
    const s = started.body as { fileId: string; bucket: string; key: string; uploadId: string };
    const query = new URLSearchParams({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: '1' });
    const raw = await fetch(`${o.url}/collections/upload/file-progress?${query}`, {
      method: 'POST', headers: { authorization: `Grant ${grant}`, origin: SITE, 'content-type': 'application/octet-stream' }, body: 'abc',
    });
    expect(raw.status, await raw.clone().text()).toBe(200);
    expect(raw.headers.get('access-control-allow-origin')).toBe('*');

    const tooBig = await o.post('/collections/upload/file', { name: 'b.txt', visibility: 'Public', size: 101, file_type: 'document' }, withGrant);
    expectError(tooBig, 413, 'file_too_large');
    expect(tooBig.headers.get('access-control-allow-origin')).toBe('*');
    const unknown = await o.post('/collections/upload/status', { file_id: 'x' }, { headers: { authorization: 'Grant cg_nope.nope', origin: SITE } });
    expectError(unknown, 401, 'unauthorized');
    expect(unknown.headers.get('access-control-allow-origin')).toBe('*');

    // Nothing but the upload calls answers another site.
    const listed = await o.post('/collections/list', {}, { headers: { origin: SITE } });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('access-control-allow-origin')).toBeNull();
    for (const path of ['/collections/list', '/collections/upload/grant', '/collections/keys/create', '/session']) {
      const res = await preflight(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('access-control-allow-origin'), path).toBeNull();
    }
    // Without an Origin header (not a browser), no CORS headers at all.
    const plain = await o.post('/collections/upload/status', { file_id: (started.body as { file_id: string }).file_id }, { headers: { authorization: `Grant ${grant}` } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
  });
});
