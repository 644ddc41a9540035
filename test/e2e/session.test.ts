/**
 * The Playground's sessions against a real origin: sign-in, the cookie's flags, CSRF on
 * cookie-authenticated calls, sign-out and expiry ending a session on the server, the
 * token stored only as a hash, and the key kept out of the logs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from '../../src/adapters/metadata/better-sqlite3.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { expectError } from '../helpers/api.js';
import { ManualClock, poll, sha256 } from '../kit/index.js';

const TWELVE_HOURS = 43_200;

/**
 * Runs a query (`?` placeholders) on the origin's own database from outside it: its SQLite
 * file, or its PostgreSQL database (COFFER_DATABASE_URL). Numbers come back as numbers on both.
 */
async function queryDb(o: TestOrigin, sql: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  if (o.databaseUrl) {
    const client = new pg.Client({ connectionString: o.databaseUrl });
    await client.connect();
    try {
      let n = 0;
      const { rows, fields } = await client.query(sql.replace(/\?/g, () => `$${++n}`), params);
      // bigint and count(*) arrive as text from pg.
      const numeric = new Set(fields.filter((f) => f.dataTypeID === 20).map((f) => f.name));
      return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, numeric.has(k) && v !== null ? Number(v) : v])));
    } finally {
      await client.end();
    }
  }
  const db = new BetterSqlite3(join(o.dataDir, 'coffer.sqlite'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as Array<Record<string, unknown>>;
  } finally {
    db.close();
  }
}

/** The origin database's tables. */
async function tablesOf(o: TestOrigin): Promise<string[]> {
  const sql = o.databaseUrl
    ? "select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'"
    : "select name from sqlite_master where type = 'table'";
  return (await queryDb(o, sql)).map((t) => String(t.name));
}

const sessionRows = async (o: TestOrigin, hash: string): Promise<number> =>
  Number((await queryDb(o, 'select count(*) as n from sessions where token_hash = ?', [hash]))[0]!.n);

interface Answer {
  status: number;
  body: any;
  headers: Headers;
  /** Every Set-Cookie line. */
  setCookies: string[];
}

interface Creds {
  bearer?: string;
  /** The whole Cookie header. */
  cookie?: string;
  csrf?: string;
}

async function call(o: TestOrigin, method: string, path: string, body?: unknown, creds: Creds = {}, extra: Record<string, string> = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...extra };
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  if (creds.bearer !== undefined) headers.authorization = `Bearer ${creds.bearer}`;
  if (creds.cookie !== undefined) headers.cookie = creds.cookie;
  if (creds.csrf !== undefined) headers['x-csrf-token'] = creds.csrf;
  const res = await fetch(o.url + path, { method, headers, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Left as text.
  }
  return { status: res.status, body: parsed, headers: res.headers, setCookies: res.headers.getSetCookie() };
}

interface Cookie {
  name: string;
  value: string;
  /** Attribute names in lower case, with their values ('' for flags). */
  attrs: Map<string, string>;
}

function parseSetCookie(line: string): Cookie {
  const [pair, ...rest] = line.split(';');
  const eq = pair!.indexOf('=');
  const attrs = new Map<string, string>();
  for (const a of rest) {
    const i = a.indexOf('=');
    attrs.set((i < 0 ? a : a.slice(0, i)).trim().toLowerCase(), i < 0 ? '' : a.slice(i + 1).trim());
  }
  return { name: pair!.slice(0, eq).trim(), value: pair!.slice(eq + 1).trim(), attrs };
}

function sessionCookieOf(a: Answer): Cookie {
  const lines = a.setCookies.filter((l) => l.startsWith('coffer_session='));
  expect(lines, a.setCookies.join('\n')).toHaveLength(1);
  return parseSetCookie(lines[0]!);
}

interface SignedIn {
  token: string;
  csrf: string;
  expiresAt: string;
  cookie: string;
  /** Cookie and CSRF header together, as the Playground sends them. */
  creds: Creds;
  answer: Answer;
}

async function signIn(o: TestOrigin, extra: Record<string, string> = {}, creds: Creds = {}): Promise<SignedIn> {
  const a = await call(o, 'POST', '/session', { access_key: o.key }, creds, extra);
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  const c = sessionCookieOf(a);
  const cookie = `coffer_session=${c.value}`;
  return { token: c.value, csrf: a.body.csrf_token, expiresAt: a.body.expires_at, cookie, creds: { cookie, csrf: a.body.csrf_token }, answer: a };
}

describe('sign-in', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('answers {csrf_token, expires_at} and sets an HttpOnly, SameSite=Strict, Path=/ cookie of 256 random bits lasting 12 hours', async () => {
    const before = Date.now();
    const s = await signIn(o);
    expect(Object.keys(s.answer.body).sort()).toEqual(['csrf_token', 'expires_at']);
    expect(s.answer.headers.get('cache-control')).toBe('no-store');
    const c = sessionCookieOf(s.answer);
    expect(c.name).toBe('coffer_session');
    // 32 bytes in base64url.
    expect(c.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(c.value, 'base64url')).toHaveLength(32);
    expect(c.attrs.get('httponly')).toBe('');
    expect(c.attrs.get('samesite')).toBe('Strict');
    expect(c.attrs.get('path')).toBe('/');
    expect(c.attrs.get('max-age')).toBe(String(TWELVE_HOURS));
    // Plain HTTP base URL: a Secure cookie would never come back.
    expect(c.attrs.has('secure')).toBe(false);
    expect(c.attrs.has('domain')).toBe(false);
    expect(s.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(s.csrf).not.toBe(s.token);
    expect(s.expiresAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const expires = Date.parse(s.expiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + TWELVE_HOURS * 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + TWELVE_HOURS * 1000);

    // Each sign-in is a session of its own.
    const again = await signIn(o);
    expect(again.token).not.toBe(s.token);
    expect(again.csrf).not.toBe(s.csrf);
  });

  it('answers 401 unauthorized for a wrong key, and sets no cookie', async () => {
    for (const access_key of ['wrong', o.key + 'x', o.key.slice(0, -1), '', ` ${o.key}`]) {
      const a = await call(o, 'POST', '/session', { access_key });
      expectError(a, 401, 'unauthorized');
      expect(a.setCookies).toEqual([]);
    }
  });

  it('validates the body like every other call: unknown fields, wrong types and non-JSON are refused', async () => {
    const unknown = await call(o, 'POST', '/session', { access_key: o.key, remember: true });
    expectError(unknown, 400, 'invalid_request');
    expect(unknown.body.error.details.field).toBe('remember');
    const missing = await call(o, 'POST', '/session', {});
    expectError(missing, 400, 'invalid_request');
    expect(missing.body.error.details.field).toBe('access_key');
    const wrongType = await call(o, 'POST', '/session', { access_key: 42 });
    expectError(wrongType, 400, 'invalid_request');
    expect(wrongType.body.error.details.field).toBe('access_key');
    expectError(await call(o, 'POST', '/session', 'not json'), 400, 'invalid_request');
    expectError(await call(o, 'POST', '/session', `access_key=${o.key}`, {}, { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type');
    for (const a of [unknown, missing, wrongType]) expect(a.setCookies).toEqual([]);
  });

  it('GET /session answers the live session, and 401 without one', async () => {
    const s = await signIn(o);
    const got = await call(o, 'GET', '/session', undefined, { cookie: s.cookie });
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ csrf_token: s.csrf, expires_at: s.expiresAt });
    expect(got.headers.get('cache-control')).toBe('no-store');
    // Among other cookies too.
    const among = await call(o, 'GET', '/session', undefined, { cookie: `theme=dark; ${s.cookie}; other=1` });
    expect(among.body.csrf_token).toBe(s.csrf);

    expectError(await call(o, 'GET', '/session'), 401, 'unauthorized');
    // A Bearer key is no session.
    expectError(await call(o, 'GET', '/session', undefined, { bearer: o.key }), 401, 'unauthorized');
    for (const cookie of ['coffer_session=', 'coffer_session=garbage', `coffer_session=${'A'.repeat(43)}`, `coffer_session=${s.token}x`]) {
      const a = await call(o, 'GET', '/session', undefined, { cookie });
      expectError(a, 401, 'unauthorized');
      // The dead cookie is cleared.
      expect(sessionCookieOf(a).attrs.get('max-age')).toBe('0');
    }
  });

  it('replaces the session the browser already had when it signs in again', async () => {
    const first = await signIn(o);
    const second = await signIn(o, {}, { cookie: first.cookie });
    expect(second.token).not.toBe(first.token);
    expectError(await call(o, 'GET', '/session', undefined, { cookie: first.cookie }), 401, 'unauthorized');
    expect((await call(o, 'GET', '/session', undefined, { cookie: second.cookie })).status).toBe(200);
  });

  it('is documented in the OpenAPI document, with the cookie and CSRF header as a security scheme', async () => {
    const doc = (await call(o, 'GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/session', '/session/end']));
    expect(doc.paths['/session'].post.requestBody.content['application/json'].schema).toMatchObject({ required: ['access_key'], additionalProperties: false });
    expect(Object.keys(doc.paths['/session'].post.responses['200'].content['application/json'].schema.properties).sort()).toEqual(['csrf_token', 'expires_at']);
    expect(doc.paths['/session'].get).toBeDefined();
    expect(doc.paths['/session'].post.security).toEqual([]);
    expect(doc.components.securitySchemes.sessionCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'coffer_session' });
    expect(doc.components.securitySchemes.csrfToken).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-CSRF-Token' });
    expect(doc.paths['/collections/list'].post.responses['403']).toBeDefined();
    // The list sort documents updated_at too.
    const sort = doc.paths['/collections/list'].post.requestBody.content['application/json'].schema.properties.sort;
    expect(JSON.stringify(sort)).toContain('updated_at');
  });
});

describe('a session authenticates /collections/*', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('with the cookie and its CSRF token: every kind of call, the chunk upload included', async () => {
    const s = await signIn(o);
    const folder = await call(o, 'POST', '/collections/folder/create', { name: 'via-session', visibility: 'Private' }, s.creds);
    expect(folder.status, JSON.stringify(folder.body)).toBe(200);
    const init = await call(o, 'POST', '/collections/upload/file', { name: 'hello.txt', visibility: 'Public', size: 6, file_type: 'document', folder_id: folder.body.folder_id }, s.creds);
    expect(init.status, JSON.stringify(init.body)).toBe(200);
    const u = init.body;
    const part = await call(o, 'POST', '/collections/upload/file-progress', {
      bucket: u.bucket, key: u.key, uploadId: u.uploadId, fileId: u.fileId, partNumber: 1, body: Buffer.from('hello\n').toString('base64'),
    }, s.creds);
    expect(part.status, JSON.stringify(part.body)).toBe(200);
    const done = await call(o, 'POST', '/collections/upload/complete-upload', { file_id: u.fileId }, s.creds);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.sha256).toBe(sha256('hello\n'));
    const listed = await call(o, 'POST', '/collections/list', { folder_id: folder.body.folder_id }, s.creds);
    expect(listed.body.files.map((f: any) => f.file_id)).toEqual([u.fileId]);
    // The same work is visible to the Bearer key: one service.
    expect((await o.post('/collections/file/get', { file_id: u.fileId })).body.sha256).toBe(sha256('hello\n'));
  });

  it('answers 403 csrf_failed to a cookie without the CSRF header, or with a wrong one, and does nothing', async () => {
    const s = await signIn(o);
    const other = await signIn(o);
    const name = 'must-not-exist-' + Date.now();
    const missing = await call(o, 'POST', '/collections/folder/create', { name, visibility: 'Public' }, { cookie: s.cookie });
    expectError(missing, 403, 'csrf_failed');
    expect(missing.body.error.message).toContain('X-CSRF-Token');
    for (const csrf of ['nope', s.csrf.slice(0, -1), s.csrf + 'A', other.csrf, s.token, s.csrf.toLowerCase()]) {
      const wrong = await call(o, 'POST', '/collections/folder/create', { name, visibility: 'Public' }, { cookie: s.cookie, csrf });
      expectError(wrong, 403, 'csrf_failed');
      expect(wrong.body.error.message).toContain('GET /session');
    }
    // The chunk endpoint too, before its body is read.
    expectError(await call(o, 'POST', '/collections/upload/file-progress', { bucket: 'b', key: 'k', uploadId: 'u', fileId: 'f', partNumber: 1, body: '' }, { cookie: s.cookie }), 403, 'csrf_failed');
    const root = await o.post('/collections/list', { limit: 1000 });
    expect(root.body.folders.map((f: any) => f.name)).not.toContain(name);
    // The session itself is still fine.
    expect((await call(o, 'POST', '/collections/list', {}, s.creds)).status).toBe(200);
  });

  it('answers 401 unauthorized to an unknown session cookie, and to a CSRF header without a cookie', async () => {
    const s = await signIn(o);
    for (const cookie of [`coffer_session=${'B'.repeat(43)}`, 'coffer_session=short', 'coffer_session=']) {
      expectError(await call(o, 'POST', '/collections/list', {}, { cookie, csrf: s.csrf }), 401, 'unauthorized');
      expectError(await call(o, 'POST', '/collections/list', {}, { cookie }), 401, 'unauthorized');
    }
    expectError(await call(o, 'POST', '/collections/list', {}, { csrf: s.csrf }), 401, 'unauthorized');
    expectError(await call(o, 'POST', '/collections/list', {}), 401, 'unauthorized');
    // Another cookie by a similar name is no session.
    expectError(await call(o, 'POST', '/collections/list', {}, { cookie: `xcoffer_session=${s.token}`, csrf: s.csrf }), 401, 'unauthorized');
  });

  it('keeps the Bearer key working without any CSRF header; when both are sent the Bearer decides', async () => {
    expect((await call(o, 'POST', '/collections/list', {}, { bearer: o.key })).status).toBe(200);
    const s = await signIn(o);
    // A valid key with a dead cookie and no CSRF header: the key decides, 200.
    expect((await call(o, 'POST', '/collections/list', {}, { bearer: o.key, cookie: `coffer_session=${'C'.repeat(43)}` })).status).toBe(200);
    expect((await call(o, 'POST', '/collections/list', {}, { bearer: o.key, cookie: s.cookie })).status).toBe(200);
    // A wrong key is not rescued by a good session.
    expectError(await call(o, 'POST', '/collections/list', {}, { bearer: 'wrong', ...s.creds }), 401, 'unauthorized');
    const malformed = await call(o, 'POST', '/collections/list', {}, { ...s.creds }, { authorization: 'Basic abc' });
    expectError(malformed, 401, 'unauthorized');
  });
});

describe('sign-out', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o.close(); });

  it('needs the CSRF header, then ends the session on the server and clears the cookie', async () => {
    const s = await signIn(o);
    const bystander = await signIn(o);

    const noCsrf = await call(o, 'POST', '/session/end', {}, { cookie: s.cookie });
    expectError(noCsrf, 403, 'csrf_failed');
    expectError(await call(o, 'POST', '/session/end', {}, { cookie: s.cookie, csrf: bystander.csrf }), 403, 'csrf_failed');
    // Refused sign-outs change nothing.
    expect((await call(o, 'GET', '/session', undefined, { cookie: s.cookie })).status).toBe(200);
    expectError(await call(o, 'POST', '/session/end', {}), 401, 'unauthorized');

    const end = await call(o, 'POST', '/session/end', {}, s.creds);
    expect(end.status, JSON.stringify(end.body)).toBe(200);
    expect(end.body).toEqual({ ended: true });
    const cleared = sessionCookieOf(end);
    expect(cleared.value).toBe('');
    expect(cleared.attrs.get('max-age')).toBe('0');
    expect(cleared.attrs.get('path')).toBe('/');
    expect(cleared.attrs.get('httponly')).toBe('');
    expect(cleared.attrs.get('samesite')).toBe('Strict');

    // The old cookie, replayed with its old CSRF token, is refused everywhere.
    expectError(await call(o, 'GET', '/session', undefined, { cookie: s.cookie }), 401, 'unauthorized');
    expectError(await call(o, 'POST', '/collections/list', {}, s.creds), 401, 'unauthorized');
    expectError(await call(o, 'POST', '/collections/upload/file-progress', { bucket: 'b', key: 'k', uploadId: 'u', fileId: 'f', partNumber: 1, body: '' }, s.creds), 401, 'unauthorized');
    expectError(await call(o, 'POST', '/session/end', {}, s.creds), 401, 'unauthorized');
    // Gone from the database, not just from the browser.
    expect(await sessionRows(o, sha256(s.token))).toBe(0);
    expect(await sessionRows(o, sha256(bystander.token))).toBe(1);
    // Other sessions live on.
    expect((await call(o, 'POST', '/collections/list', {}, bystander.creds)).status).toBe(200);
  });

  it('accepts no body as well as an empty object, and refuses fields', async () => {
    const s = await signIn(o);
    expectError(await call(o, 'POST', '/session/end', { everywhere: true }, s.creds), 400, 'invalid_request');
    const end = await call(o, 'POST', '/session/end', undefined, s.creds);
    expect(end.status, JSON.stringify(end.body)).toBe(200);
    expect(end.body).toEqual({ ended: true });
    expectError(await call(o, 'GET', '/session', undefined, { cookie: s.cookie }), 401, 'unauthorized');
  });
});

describe('session storage', () => {
  it('keeps only the token\'s SHA-256: no row and no byte of the database holds the token', async () => {
    const o = await startTestOrigin();
    try {
      const sessions = [await signIn(o), await signIn(o), await signIn(o)];
      const rows = await queryDb(o, 'select * from sessions');
      expect(rows).toHaveLength(3);
      expect(Object.keys(rows[0]!).sort()).toEqual(['created_at', 'csrf_token', 'expires_at', 'root_fingerprint', 'token_hash']);
      for (const s of sessions) {
        const row = rows.find((r) => r.token_hash === sha256(s.token));
        expect(row, 'a row under the token hash').toBeDefined();
        expect(row!.csrf_token).toBe(s.csrf);
        expect(row!.expires_at).toBe(Date.parse(s.expiresAt));
      }
      // No row of any table holds a token, in any column.
      const tables = await tablesOf(o);
      expect(tables).toContain('sessions');
      for (const table of tables) {
        const dump = JSON.stringify(await queryDb(o, `select * from "${table}"`));
        for (const s of sessions) expect(dump.includes(s.token), `${table} holds a token`).toBe(false);
      }
      // Nor do the SQLite file's bytes, the write-ahead log included (absent on PostgreSQL, whose rows were checked above).
      for (const file of ['coffer.sqlite', 'coffer.sqlite-wal']) {
        const path = join(o.dataDir, file);
        if (!existsSync(path)) continue;
        const bytes = readFileSync(path);
        for (const s of sessions) expect(bytes.includes(Buffer.from(s.token)), `${file} holds a token`).toBe(false);
      }
    } finally {
      await o.close();
    }
  });

  it('survives a restart of the origin: the session lives in the database, not in memory', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'coffer-session-restart-'));
    const settings = { COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: 'restart-key-0123456789', COFFER_SIGNING_SECRET: 'restart-secret' };
    try {
      const first = await startTestOrigin(settings);
      const s = await signIn(first);
      await first.close();
      const second = await startTestOrigin(settings);
      try {
        expect((await call(second, 'GET', '/session', undefined, { cookie: s.cookie })).body.csrf_token).toBe(s.csrf);
        expect((await call(second, 'POST', '/collections/list', {}, s.creds)).status).toBe(200);
      } finally {
        await second.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses an expired session at once, and the sweeper deletes it', async () => {
    // The origin's time: the session expires, and the sweeper runs, as the test moves it.
    const clock = new ManualClock(Date.now());
    const o = await startTestOrigin({ COFFER_SESSION_TTL: '1' }, { clock });
    try {
      const s = await signIn(o);
      expect(sessionCookieOf(s.answer).attrs.get('max-age')).toBe('1');
      expect(Date.parse(s.expiresAt) - clock.now()).toBeLessThanOrEqual(1000);
      expect((await call(o, 'POST', '/collections/list', {}, s.creds)).status).toBe(200);
      const hash = sha256(s.token);
      const rowCount = () => sessionRows(o, hash);
      expect(await rowCount()).toBe(1);
      await clock.advance(Date.parse(s.expiresAt) - clock.now() + 50);
      // Refused whether or not the sweeper has run yet.
      expectError(await call(o, 'GET', '/session', undefined, { cookie: s.cookie }), 401, 'unauthorized');
      expectError(await call(o, 'POST', '/collections/list', {}, s.creds), 401, 'unauthorized');
      // With a 1 s lifetime the sweeper runs every 250 ms: each ask moves the clock past another run.
      await poll(async () => {
        await clock.advance(250);
        return (await rowCount()) === 0;
      }, { timeoutMs: 3000 });
      expect(await rowCount()).toBe(0);
      // Signing in again works as ever.
      const again = await signIn(o);
      expect((await call(o, 'POST', '/collections/list', {}, again.creds)).status).toBe(200);
    } finally {
      await o.close();
    }
  });

  it('refuses a COFFER_SESSION_TTL that is not a whole number of seconds from 1', async () => {
    for (const ttl of ['0', '-5', '1.5', 'soon']) {
      await expect(startTestOrigin({ COFFER_SESSION_TTL: ttl })).rejects.toThrow(/COFFER_SESSION_TTL/);
    }
  });
});

describe('session transport', () => {
  it('marks the cookie Secure when COFFER_BASE_URL is https', async () => {
    const o = await startTestOrigin({ COFFER_BASE_URL: 'https://files.example.com' });
    try {
      const s = await signIn(o);
      const c = sessionCookieOf(s.answer);
      expect(c.attrs.get('secure')).toBe('');
      expect(c.attrs.get('httponly')).toBe('');
      expect(c.attrs.get('samesite')).toBe('Strict');
      const end = await call(o, 'POST', '/session/end', {}, s.creds);
      expect(sessionCookieOf(end).attrs.get('secure')).toBe('');
    } finally {
      await o.close();
    }
  });

  it('rate-limits sign-in like the rest of the interface, which slows guessing the key', async () => {
    const o = await startTestOrigin({ COFFER_RATE_LIMIT: '1' });
    try {
      const answers: Answer[] = [];
      for (let i = 0; i < 4; i++) answers.push(await call(o, 'POST', '/session', { access_key: `guess-${i}` }));
      const limited = answers.filter((a) => a.status === 429);
      expect(limited.length).toBeGreaterThan(0);
      for (const a of limited) {
        expectError(a, 429, 'rate_limited');
        expect(Number(a.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      for (const a of answers.filter((x) => x.status !== 429)) expectError(a, 401, 'unauthorized');
    } finally {
      await o.close();
    }
  });

  it('never writes the access key, the token or the CSRF token to the log', async () => {
    const o = await startTestOrigin({ COFFER_LOG_LEVEL: 'debug' });
    try {
      const s = await signIn(o);
      await call(o, 'POST', '/session', { access_key: o.key.slice(0, -1) + 'Z' });
      await call(o, 'POST', '/session', { access_key: o.key, extra: o.key });
      await call(o, 'POST', '/session', `{"access_key": "${o.key}"`);
      await call(o, 'POST', '/collections/list', {}, s.creds);
      await call(o, 'POST', '/collections/list', {}, { cookie: s.cookie });
      await call(o, 'GET', '/session', undefined, { cookie: s.cookie });
      await call(o, 'POST', '/session/end', {}, s.creds);
      // Whatever a future log call passes along, the fields are censored.
      o.origin.app.log.info({ body: { access_key: o.key } }, 'a body');
      o.origin.app.log.info({ access_key: o.key, csrf_token: s.csrf }, 'fields');
      o.origin.app.log.info({ req: { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } } }, 'headers');
      o.origin.app.log.info({ session: { access_key: o.key } }, 'nested');
      const logs = o.logs.join('\n');
      // The requests were logged: the check below looks at real lines.
      expect(logs).toContain('"url":"/session"');
      expect(logs).toContain('"url":"/collections/list"');
      expect(logs).toContain('[redacted]');
      expect(logs.includes(o.key)).toBe(false);
      expect(logs.includes(s.token)).toBe(false);
      expect(logs.includes(s.csrf)).toBe(false);
    } finally {
      await o.close();
    }
  });
});
