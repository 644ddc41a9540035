/**
 * The callers of the authorization matrix: every kind of credential Coffer knows, alive and
 * dead, each able to speak every dialect it has a form for (a Bearer or Grant header, a session
 * cookie with its CSRF token, SigV4 for keys).
 */
import type { TestOrigin } from '../../helpers/origin.js';

export type Scope = 'read' | 'write' | 'admin';
export type Place = 'in' | 'out';

export interface MatrixCaller {
  name: string;
  kind: 'root' | 'session' | 'key' | 'grant' | 'dead';
  scopes: readonly Scope[];
  /** Confined to the `in` folder's subtree. */
  confined: boolean;
  /** Headers for the JSON interface and tus. */
  headers: Record<string, string>;
  /** Its SigV4 credential, for keys. */
  s3?: { keyId: string; secret: string };
}

/** The two places a target can be: the folder confined callers reach, and a sibling they do not. */
export interface Places {
  in: string;
  out: string;
}

interface MadeKey {
  key_id: string;
  key: string;
}

async function makeKey(o: TestOrigin, auth: string, scopes: Scope[], folderId: string | null, expiresIn?: number): Promise<MadeKey> {
  const body = { name: `matrix-${scopes.join('-') || 'none'}`, scopes, ...(folderId ? { folder_id: folderId } : {}), ...(expiresIn ? { expires_in: expiresIn } : {}) };
  const made = await o.post('/collections/keys/create', body, { headers: { authorization: auth } });
  if (made.status !== 200) throw new Error(`keys/create ${JSON.stringify(body)}: ${made.status} ${JSON.stringify(made.body)}`);
  return made.body as MadeKey;
}

const keyCaller = (name: string, k: MadeKey, scopes: Scope[], confined: boolean, dead = false): MatrixCaller => ({
  name, kind: dead ? 'dead' : 'key', scopes, confined, headers: { authorization: `Bearer ${k.key}` }, s3: { keyId: k.key_id, secret: k.key },
});

/** A fresh Playground session signed in with the root key: its cookie and CSRF token. */
export async function signIn(o: TestOrigin): Promise<Record<string, string>> {
  const res = await fetch(`${o.url}/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ access_key: o.key }) });
  if (res.status !== 200) throw new Error(`sign-in: ${res.status}`);
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  const { csrf_token } = (await res.json()) as { csrf_token: string };
  return { cookie, 'x-csrf-token': csrf_token };
}

/**
 * Every caller kind. Keys that expire are made to last one second; the matrix waits for them
 * once, before it starts (`deadAfterMs`).
 */
export async function makeCallers(o: TestOrigin, places: Places): Promise<{ callers: MatrixCaller[]; deadAfterMs: number }> {
  const root = `Bearer ${o.key}`;
  const all: Scope[] = ['read', 'write', 'admin'];
  const callers: MatrixCaller[] = [
    { name: 'root', kind: 'root', scopes: all, confined: false, headers: { authorization: root } },
    { name: 'session', kind: 'session', scopes: all, confined: false, headers: await signIn(o) },
  ];
  const kinds: Array<[string, Scope[]]> = [['admin', all], ['read', ['read']], ['write', ['read', 'write']], ['write-only', ['write']]];
  for (const [name, scopes] of kinds) {
    callers.push(keyCaller(`key:${name}`, await makeKey(o, root, scopes, null), scopes, false));
    callers.push(keyCaller(`confined:${name}`, await makeKey(o, root, scopes, places.in), scopes, true));
  }
  const grant = await o.post('/collections/upload/grant', { folder_id: places.in, max_size: 1024 * 1024, max_files: 10_000, expires_in: 86_400 });
  if (grant.status !== 200) throw new Error(`grant: ${grant.status} ${JSON.stringify(grant.body)}`);
  callers.push({ name: 'grant', kind: 'grant', scopes: [], confined: true, headers: { authorization: `Grant ${grant.body.grant}` } });

  const revoked = await makeKey(o, root, all, null);
  await o.post('/collections/keys/revoke', { key_id: revoked.key_id });
  callers.push(keyCaller('revoked', revoked, all, false, true));
  callers.push(keyCaller('expired', await makeKey(o, root, all, null, 1), all, false, true));

  // Children: made by a key that is then revoked, or that expires.
  const doomed = await makeKey(o, root, all, null);
  const orphan = await makeKey(o, `Bearer ${doomed.key}`, ['read', 'write'], null);
  await o.post('/collections/keys/revoke', { key_id: doomed.key_id });
  callers.push(keyCaller('child-of-revoked', orphan, ['read', 'write'], false, true));
  const mortal = await makeKey(o, root, all, null, 1);
  callers.push(keyCaller('child-of-expired', await makeKey(o, `Bearer ${mortal.key}`, ['read', 'write'], null), ['read', 'write'], false, true));
  return { callers, deadAfterMs: 1100 };
}
