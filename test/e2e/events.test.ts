/** The event log edges follow, and the self-description of the interface. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { tusClient } from '../helpers/tus.js';

describe('event log', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  const eventsSince = async (seq: number) => o.origin.stores.meta.eventsAfter(seq, 1000);

  it('appends one event per change, with increasing sequence numbers, in the same transaction', async () => {
    const start = await o.origin.stores.meta.lastEventSeq();
    const folder = (await o.post('/collections/folder/create', { name: 'logged', visibility: 'Public' })).body;
    const sub = (await o.post('/collections/folder/create', { name: 'sub', visibility: 'Public', parent_id: folder.folder_id })).body;
    const file = await uploadBytes(o, Buffer.from('event bytes'), { folder_id: sub.folder_id, name: 'e.txt' });
    await o.post('/collections/file/update', { file_id: file.file_id, name: 'renamed.txt' });
    await o.post('/collections/file/update', { file_id: file.file_id, visibility: 'Private' });
    await o.post('/collections/file/update', { file_id: file.file_id, folder_id: folder.folder_id });
    await o.post('/collections/folder/update', { folder_id: sub.folder_id, name: 'sub2' });
    await o.post('/collections/folder/update', { folder_id: sub.folder_id, visibility: 'Private' });
    await o.post('/collections/folder/update', { folder_id: sub.folder_id, parent_id: null });
    // A no-op update changes nothing and logs nothing.
    await o.post('/collections/file/update', { file_id: file.file_id, name: 'renamed.txt' });
    await o.post('/collections/file/delete', { file_id: file.file_id });
    await o.post('/collections/folder/delete', { folder_id: folder.folder_id, recursive: true });

    const events = await eventsSince(start);
    expect(events.map((e) => e.type)).toEqual([
      'folder.created', 'folder.created', 'file.ready', 'file.updated', 'file.updated', 'file.updated',
      'folder.updated', 'folder.updated', 'folder.updated', 'file.deleted', 'folder.deleted',
    ]);
    for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq);
    const ready = events[2]!;
    expect(ready.file_id).toBe(file.file_id);
    expect(ready.data).toMatchObject({ file_id: file.file_id, name: 'e.txt', folder_id: sub.folder_id, sha256: file.sha256, size: 11, visibility: 'Public' });
    expect(events[4]!.data).toMatchObject({ visibility: 'Private', effective_visibility: 'Private' });
    expect(events[5]!.data).toMatchObject({ folder_id: folder.folder_id });
    expect(events[8]!.data).toMatchObject({ folder_id: sub.folder_id, parent_id: null, visibility: 'Private', name: 'sub2' });
  });

  it('logs nothing for uploads that are not complete, and a recursive delete logs every file and folder', async () => {
    const folder = (await o.post('/collections/folder/create', { name: 'tree', visibility: 'Public' })).body;
    const inner = (await o.post('/collections/folder/create', { name: 'inner', visibility: 'Public', parent_id: folder.folder_id })).body;
    const a = await uploadBytes(o, Buffer.from('a'), { folder_id: folder.folder_id });
    const b = await uploadBytes(o, Buffer.from('b'), { folder_id: inner.folder_id });
    const start = await o.origin.stores.meta.lastEventSeq();
    await o.post('/collections/upload/file', { name: 'open.bin', visibility: 'Public', size: 3, file_type: 'other', folder_id: inner.folder_id });
    expect(await eventsSince(start)).toEqual([]);
    await o.post('/collections/folder/delete', { folder_id: folder.folder_id, recursive: true });
    const events = await eventsSince(start);
    expect(events.filter((e) => e.type === 'file.deleted').map((e) => e.file_id).sort()).toEqual([a.file_id, b.file_id].sort());
    expect(events.filter((e) => e.type === 'folder.deleted').map((e) => e.folder_id).sort()).toEqual([folder.folder_id, inner.folder_id].sort());
  });

  it('a tus upload logs what the seed flow logs: nothing while open, partial or terminated, then one file.ready', async () => {
    const t = tusClient(o.url, `Bearer ${o.key}`);
    const folder = (await o.post('/collections/folder/create', { name: 'by-tus', visibility: 'Private' })).body;
    const bytes = Buffer.from('the same bytes, two ways');
    const seed = await uploadBytes(o, bytes, { name: 'same.txt', visibility: 'Public', folder_id: folder.folder_id, file_type: 'document', content_type: 'text/plain' });
    const start = await o.origin.stores.meta.lastEventSeq();
    const meta = { filename: 'same.txt', visibility: 'Public', folder_id: folder.folder_id, filetype: 'text/plain' };
    const location = (await t.create(bytes.length, meta)).headers.location!;
    expect((await t.patch(location, 0, bytes.subarray(0, 5))).status).toBe(204);
    const partial = (await t.create(3, {}, { 'upload-concat': 'partial' })).headers.location!;
    expect((await t.patch(partial, 0, Buffer.from('abc'))).status).toBe(204);
    expect((await t.remove((await t.create(4, { filename: 'dropped.txt' })).headers.location!)).status).toBe(204);
    expect(await eventsSince(start)).toEqual([]);
    const done = await t.patch(location, 5, bytes.subarray(5));
    const events = await eventsSince(start);
    expect(events.map((e) => [e.type, e.file_id, e.folder_id])).toEqual([['file.ready', done.headers['coffer-file-id'], folder.folder_id]]);
    const seedReady = (await o.origin.stores.meta.eventsAfter(0, 1000)).find((e) => e.type === 'file.ready' && e.file_id === seed.file_id)!;
    const differ = ['file_id', 'completed_at', 'updated_at'];
    const same = (data: Record<string, unknown>) => Object.fromEntries(Object.entries(data).filter(([k]) => !differ.includes(k)));
    expect(same(events[0]!.data as Record<string, unknown>)).toEqual(same(seedReady.data as Record<string, unknown>));
    expect(events[0]!.data).toMatchObject({ sha256: seed.sha256, effective_visibility: 'Private' });
  });

  it('keeps the log across a restart of the origin', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'coffer-events-'));
    try {
      const settings = { COFFER_DATA_DIR: dir, COFFER_ACCESS_KEY: 'k', COFFER_SIGNING_SECRET: 's' };
      const first = await startTestOrigin(settings);
      await first.post('/collections/folder/create', { name: 'kept', visibility: 'Private' });
      const before = await first.origin.stores.meta.eventsAfter(0, 100);
      await first.close();
      const second = await startTestOrigin(settings);
      expect(await second.origin.stores.meta.eventsAfter(0, 100)).toEqual(before);
      await second.post('/collections/folder/create', { name: 'next', visibility: 'Public' });
      const after = await second.origin.stores.meta.eventsAfter(0, 100);
      expect(after[after.length - 1]!.seq).toBeGreaterThan(before[before.length - 1]!.seq);
      await second.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('interface description', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('serves an OpenAPI 3.1 document of every endpoint, from the schemas that validate requests', async () => {
    const res = await fetch(`${o.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as any;
    expect(doc.openapi).toBe('3.1.0');
    const paths = Object.keys(doc.paths).sort();
    expect(paths).toEqual([
      '/collections/create-link', '/collections/edges', '/collections/file/delete', '/collections/file/download', '/collections/file/get', '/collections/file/revoke-links', '/collections/file/update',
      '/collections/folder/create', '/collections/folder/delete', '/collections/folder/get', '/collections/folder/update',
      '/collections/keys/create', '/collections/keys/list', '/collections/keys/revoke',
      '/collections/list', '/collections/search',
      '/collections/upload/abort', '/collections/upload/complete-upload', '/collections/upload/file', '/collections/upload/file-progress', '/collections/upload/grant', '/collections/upload/status', '/collections/usage',
      '/collections/webhooks/create', '/collections/webhooks/delete', '/collections/webhooks/deliveries', '/collections/webhooks/list', '/collections/webhooks/redeliver', '/collections/webhooks/test',
      '/session', '/session/end', '/tus', '/tus/{id}',
    ]);
    // tus (contract §9): every method, with the headers of its answers.
    expect(Object.keys(doc.paths['/tus']).sort()).toEqual(['options', 'post']);
    expect(Object.keys(doc.paths['/tus/{id}']).sort()).toEqual(['delete', 'head', 'options', 'patch', 'post']);
    expect(Object.keys(doc.paths['/tus'].post.responses['201'].headers)).toEqual(expect.arrayContaining(['Location', 'Upload-Offset', 'Coffer-File-Id']));
    expect(Object.keys(doc.paths['/tus/{id}'].head.responses['200'].headers)).toEqual(expect.arrayContaining(['Upload-Offset', 'Upload-Length', 'Upload-Expires']));
    for (const status of ['409', '412', '413', '415', '460']) expect(doc.paths['/tus/{id}'].patch.responses[status], status).toBeDefined();
    expect(doc.paths['/tus'].options.security).toEqual([]);
    const initiate = doc.paths['/collections/upload/file'].post;
    const schema = initiate.requestBody.content['application/json'].schema;
    expect(schema.required).toEqual(expect.arrayContaining(['name', 'visibility', 'size', 'file_type']));
    expect(schema.additionalProperties).toBe(false);
    expect(initiate.responses['200']).toBeDefined();
    expect(initiate.responses['409'] ?? initiate.responses['400']).toBeDefined();
    expect(doc.components.securitySchemes.accessKey.scheme).toBe('bearer');
    // The edges' feed is not part of the public interface.
    expect(paths.some((p) => p.startsWith('/_edge'))).toBe(false);
  });

  it('serves a readable reference page at /docs, its scripts, and HEAD with the length of GET', async () => {
    const res = await fetch(`${o.url}/docs/`, { redirect: 'follow' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await res.text()).toContain('swagger');
    const bundle = await fetch(`${o.url}/docs/static/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toContain('javascript');
    const length = (await bundle.arrayBuffer()).byteLength;
    expect(length).toBeGreaterThan(100_000);
    const head = await fetch(`${o.url}/docs/static/swagger-ui-bundle.js`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBe(length);
    // The page's own copy of the document is the one at /openapi.json.
    const [own, json] = await Promise.all([fetch(`${o.url}/docs/json`).then((r) => r.json()), fetch(`${o.url}/openapi.json`).then((r) => r.json())]);
    expect(own).toEqual(json);
    expect((await fetch(`${o.url}/docs/nothing-here`)).status).toBe(404);
  });

  it('builds the document once, for the first of several requests that arrive together', async () => {
    const fresh = await startTestOrigin();
    try {
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => fetch(i % 2 ? `${fresh.url}/openapi.json` : `${fresh.url}/docs/json`).then(async (r) => ({ status: r.status, text: await r.text() }))));
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
      expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    } finally {
      await fresh.close();
    }
  });
});
