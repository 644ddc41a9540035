/**
 * Sessions end with the root key that signed them in (issue 23, finding 5): restarting the
 * origin on the same data with another COFFER_ACCESS_KEY ends every Playground session of the
 * old key on its next request, and every upload grant the old key made. Keys made with the
 * old key keep working by Bearer (docs/security.md "Rotating the root key"). Before, a session
 * lived its 12 hours whatever the key became.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { sessionTokenHash } from '../../src/service/sessions.js';

const origins: TestOrigin[] = [];
let dataDir: string;
afterAll(async () => {
  for (const o of origins) await o.close().catch(() => {});
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function originWith(key: string): Promise<TestOrigin> {
  const o = await startTestOrigin({ COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: key, COFFER_LOG_LEVEL: 'warn' });
  origins.push(o);
  return o;
}

interface SignedIn {
  token: string;
  headers: Record<string, string>;
}

async function signIn(o: TestOrigin, key: string): Promise<SignedIn | number> {
  const res = await fetch(`${o.url}/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ access_key: key }) });
  if (res.status !== 200) return res.status;
  const token = /coffer_session=([^;]*)/.exec(res.headers.getSetCookie().join('\n'))![1]!;
  const body = (await res.json()) as { csrf_token: string };
  return { token, headers: { cookie: `coffer_session=${token}`, 'x-csrf-token': body.csrf_token } };
}

/** A call of the programmatic interface as the Playground makes it: the cookie and the CSRF token, no key. */
async function sessionPost(o: TestOrigin, s: SignedIn, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(o.url + path, { method: 'POST', headers: { ...s.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}
const grantAuth = (grant: string) => ({ headers: { authorization: `Grant ${grant}` } });
const initiate = { name: 'g.txt', visibility: 'Private', size: 3, file_type: 'document' };

describe('rotating COFFER_ACCESS_KEY', () => {
  test('ends the old key\'s sessions and root-made grants on their next request; its keys go on', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'coffer-rotation-'));
    const keyA = `key-a-${Math.random().toString(36).slice(2)}`;
    const keyB = `key-b-${Math.random().toString(36).slice(2)}`;

    const a = await originWith(keyA);
    const session = (await signIn(a, keyA)) as SignedIn;
    expect(typeof session).toBe('object');
    expect((await sessionPost(a, session, '/collections/list', {})).status).toBe(200);
    expect((await fetch(`${a.url}/session`, { headers: session.headers })).status).toBe(200);
    const byKey = (await a.post('/collections/upload/grant', { max_size: 10, max_files: 5 })).body.grant as string;
    const bySession = (await sessionPost(a, session, '/collections/upload/grant', { max_size: 10, max_files: 5 })).body.grant as string;
    for (const g of [byKey, bySession]) expect((await a.post('/collections/upload/file', initiate, grantAuth(g))).status).toBe(200);
    const reader = (await a.post('/collections/keys/create', { name: 'survivor', scopes: ['read'] })).body.key as string;

    // What the session row keeps of the key names it without holding it.
    const row = await a.origin.stores.meta.read.getSession(sessionTokenHash(session.token));
    expect(row!.root_fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.root_fingerprint).not.toContain(keyA);
    expect(row!.root_fingerprint).not.toBe(createHash('sha256').update(keyA).digest('hex'));

    await a.close();
    const b = await originWith(keyB);
    const refused = await sessionPost(b, session, '/collections/list', {});
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('unauthorized');
    expect((await fetch(`${b.url}/session`, { headers: session.headers })).status).toBe(401);
    for (const g of [byKey, bySession]) expectError(await b.post('/collections/upload/file', initiate, grantAuth(g)), 401, 'unauthorized');
    expect(await signIn(b, keyA)).toBe(401);

    // The new key signs in and makes grants that work; keys made under the old one still do by Bearer.
    const fresh = (await signIn(b, keyB)) as SignedIn;
    expect((await fetch(`${b.url}/session`, { headers: fresh.headers })).status).toBe(200);
    const newGrant = (await b.post('/collections/upload/grant', { max_size: 10 })).body.grant as string;
    expect((await b.post('/collections/upload/file', initiate, grantAuth(newGrant))).status).toBe(200);
    expect((await b.post('/collections/list', {}, { headers: { authorization: `Bearer ${reader}` } })).status).toBe(200);
  });
});
