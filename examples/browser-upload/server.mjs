/**
 * Browser uploads with an upload grant (contract §10): the browser asks this application
 * for permission to upload; the application checks who is signed in and asks Coffer, with
 * the access key it alone holds, for a grant that lets exactly one upload into that user's
 * own Private folder. The browser then sends the bytes straight to Coffer from a Web
 * Worker; the access key never leaves this server.
 *
 * Demo-grade on purpose: one user, `demo`, whose password is EXAMPLE_PASSWORD, and sessions
 * in memory. That sign-in stands for the application's real one: put the check of your own
 * users in `sessionUser`. Run it as the README beside this file says.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CofferClient, CofferError } from 'coffer/sdk';

const SESSION_COOKIE = 'sid';
const DEMO_USER = 'demo';
const GRANT_SECONDS = 600; // long enough to send a large file on a slow line
const UPLOAD_FOLDER = 'browser-uploads';

function fail(message) {
  console.error(`browser-upload example: ${message}`);
  process.exit(1);
}

const env = process.env;
if (!env.COFFER_URL || !env.COFFER_ACCESS_KEY) fail('set COFFER_URL and COFFER_ACCESS_KEY.');
if (!env.EXAMPLE_PASSWORD) fail('set EXAMPLE_PASSWORD: the demo user\'s password.');
const maxSize = Number(env.EXAMPLE_MAX_SIZE ?? 100 * 1024 * 1024);
if (!Number.isSafeInteger(maxSize) || maxSize < 1) fail('EXAMPLE_MAX_SIZE must be a number of bytes.');
// Where browsers reach Coffer; the same address as this server uses unless they differ.
const browserCofferUrl = (env.COFFER_BROWSER_URL ?? env.COFFER_URL).replace(/\/+$/, '');
const staticDir = resolve(env.EXAMPLE_DIST ?? fileURLToPath(new URL('./dist/', import.meta.url)));

// The key stays in this process: it is used here and never put in an answer.
const coffer = new CofferClient({ url: env.COFFER_URL, accessKey: env.COFFER_ACCESS_KEY });

/** A folder by name under `parentId`, made the first time (Private: its files need signed links). */
async function folderNamed(name, parentId) {
  try {
    return (await coffer.createFolder({ name, visibility: 'Private', parent_id: parentId })).folder_id;
  } catch (err) {
    if (err instanceof CofferError && err.code === 'folder_exists') return err.details.folder_id;
    throw err;
  }
}

const folders = new Map(); // user → their folder's id
async function folderOf(user) {
  if (!folders.has(user)) folders.set(user, await folderNamed(user, await folderNamed(UPLOAD_FOLDER, null)));
  return folders.get(user);
}

const sessions = new Map(); // session id → user name

const digest = (text) => createHash('sha256').update(String(text)).digest();
const passwordMatches = (given) => timingSafeEqual(digest(given), digest(env.EXAMPLE_PASSWORD));

/** Who is signed in: the place where a real application checks its own sessions. */
function sessionUser(req) {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, value] = part.trim().split('=');
    if (name === SESSION_COOKIE && sessions.has(value)) return sessions.get(value);
  }
  return null;
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

const error = (res, status, code, message) => send(res, status, { error: { code, message } });

/** A small JSON body; null when it is not JSON, not an object or too large. */
async function readJson(req) {
  // JSON only: a form post from another site cannot reach these routes.
  if (!req.headers['content-type']?.startsWith('application/json')) return null;
  req.setEncoding('utf8');
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 4096) return null;
  }
  try {
    const body = JSON.parse(text);
    return body !== null && typeof body === 'object' ? body : null;
  } catch {
    return null;
  }
}

async function login(req, res) {
  const body = await readJson(req);
  if (body === null) return error(res, 400, 'invalid_request', 'Send {"user", "password"} as JSON.');
  if (!passwordMatches(body.password ?? '') || body.user !== DEMO_USER) return error(res, 401, 'invalid_credentials', 'Unknown user or wrong password.');
  const sid = randomBytes(24).toString('base64url');
  sessions.set(sid, DEMO_USER);
  // HttpOnly: page scripts cannot read it. Behind HTTPS, add Secure.
  send(res, 200, { user: DEMO_USER, max_size: maxSize }, { 'set-cookie': `${SESSION_COOKIE}=${sid}; HttpOnly; SameSite=Strict; Path=/` });
}

/** The one thing the browser gets: a grant for one Private upload into the user's folder. */
async function uploadGrant(req, res) {
  const user = sessionUser(req);
  if (user === null) return error(res, 401, 'sign_in_required', 'Sign in first.');
  if ((await readJson(req)) === null) return error(res, 400, 'invalid_request', 'Send a JSON body.');
  const { grant, expires_at } = await coffer.createGrant({
    folder_id: await folderOf(user), visibility: 'Private', max_size: maxSize, max_files: 1, expires_in: GRANT_SECONDS,
  });
  send(res, 200, { grant, expires_at, coffer_url: browserCofferUrl, max_size: maxSize });
}

/** The browser reports a finished upload; the application checks it is the user's before keeping it. */
async function uploaded(req, res) {
  const user = sessionUser(req);
  if (user === null) return error(res, 401, 'sign_in_required', 'Sign in first.');
  const body = await readJson(req);
  if (typeof body?.file_id !== 'string') return error(res, 400, 'invalid_request', 'Send {"file_id"}.');
  const file = await coffer.getFile(body.file_id).catch((err) => {
    if (err instanceof CofferError && err.status === 404) return null;
    throw err;
  });
  if (file === null || file.folder_id !== (await folderOf(user))) return error(res, 404, 'not_found', 'No such upload of yours.');
  send(res, 200, file);
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.map': 'application/json' };

/** The built page (see the README): index.html and assets/. */
async function staticFile(res, pathname) {
  const path = normalize(join(staticDir, pathname === '/' ? 'index.html' : pathname));
  if (!path.startsWith(staticDir + '/') || !TYPES[extname(path)]) return error(res, 404, 'not_found', 'No such page.');
  const bytes = await readFile(path).catch(() => null);
  if (bytes === null) return error(res, 404, 'not_found', pathname === '/' ? 'The page is not built: see the README.' : 'No such page.');
  res.writeHead(200, {
    'content-type': TYPES[extname(path)],
    // The page talks to this server and to Coffer, nothing else.
    'content-security-policy': `default-src 'self'; connect-src 'self' ${new URL(browserCofferUrl).origin}; worker-src 'self'`,
    'cache-control': 'no-cache',
  });
  res.end(bytes);
}

async function route(req, res) {
  const { pathname } = new URL(req.url, 'http://app.invalid');
  if (req.method === 'POST' && pathname === '/login') return login(req, res);
  if (req.method === 'POST' && pathname === '/upload-grant') return uploadGrant(req, res);
  if (req.method === 'POST' && pathname === '/uploaded') return uploaded(req, res);
  if (req.method === 'GET') return staticFile(res, pathname);
  error(res, 404, 'not_found', 'No such route.');
}

const server = createServer((req, res) => {
  route(req, res).catch((err) => {
    console.error(err);
    if (!res.headersSent) error(res, 502, 'coffer_failed', 'Coffer could not be reached or refused; try again.');
    else res.destroy();
  });
});

const port = Number(env.PORT ?? 3000);
server.listen(port, '127.0.0.1', () => {
  console.log(`example listening on http://127.0.0.1:${server.address().port}`);
});

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
