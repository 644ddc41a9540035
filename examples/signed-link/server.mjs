/**
 * The signed-link flow (spec §4.4): the browser asks this application for a file, the
 * application checks that the signed-in user may see it, gets a 15-minute signed link and
 * redirects the browser to it. The delivery network then serves the bytes; the access key
 * and the signing secret never leave this server.
 *
 * Demo-grade on purpose: users, passwords and who may see which file come from
 * EXAMPLE_USERS and live in memory. Run it as the README beside this file says.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { CofferClient, CofferError, signLink } from 'coffer/sdk';

const LINK_SECONDS = 900; // the lifetime spec §4.4 uses for this flow
const SESSION_COOKIE = 'sid';

function fail(message) {
  console.error(`signed-link example: ${message}`);
  process.exit(1);
}

const env = process.env;
if (!env.COFFER_URL || !env.COFFER_ACCESS_KEY) fail('set COFFER_URL and COFFER_ACCESS_KEY.');
const offline = env.SIGN_OFFLINE === '1';
if (offline && !env.COFFER_SIGNING_SECRET) fail('SIGN_OFFLINE=1 needs COFFER_SIGNING_SECRET.');

/** EXAMPLE_USERS='{"alice": {"password": "…", "files": ["<file_id>", …]}, …}' */
let users = null;
try {
  users = JSON.parse(env.EXAMPLE_USERS ?? '');
} catch {
  // Reported below.
}
if (users === null || typeof users !== 'object') {
  fail('set EXAMPLE_USERS to JSON such as {"alice": {"password": "pw", "files": ["<file_id>"]}}.');
}

const coffer = new CofferClient({ url: env.COFFER_URL, accessKey: env.COFFER_ACCESS_KEY });

// What a link needs from each file (create-link wants its file_type; offline signing its
// delivery_url), read once at start so serving a link costs one call, or none offline.
const files = new Map();
for (const { files: ids = [] } of Object.values(users)) {
  for (const id of ids) {
    if (files.has(id)) continue;
    const record = await coffer.getFile(id).catch((err) => fail(`file ${id}: ${err.message}`));
    if (record.status !== 'ready') fail(`file ${id} is still uploading.`);
    files.set(id, { file_type: record.file_type, delivery_url: record.delivery_url });
  }
}

const sessions = new Map(); // session id → user name

const digest = (text) => createHash('sha256').update(String(text)).digest();
// Hashing first makes the comparison constant-time whatever the lengths.
const passwordMatches = (given, expected) => timingSafeEqual(digest(given), digest(expected));

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

/** The body as an object, from a form or JSON; null when it is neither or too large. */
async function readForm(req) {
  req.setEncoding('utf8');
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 4096) return null;
  }
  if (!req.headers['content-type']?.startsWith('application/json')) return Object.fromEntries(new URLSearchParams(text));
  try {
    const body = JSON.parse(text);
    return body !== null && typeof body === 'object' ? body : null;
  } catch {
    return null;
  }
}

async function login(req, res) {
  const form = await readForm(req);
  if (form === null) return error(res, 400, 'invalid_request', 'Send user and password as a form or JSON.');
  const user = Object.hasOwn(users, form.user) ? users[form.user] : null;
  // Compare even for an unknown user, so the answer takes as long either way.
  const ok = passwordMatches(form.password ?? '', user?.password ?? randomBytes(16).toString('hex')) && user !== null;
  if (!ok) return error(res, 401, 'invalid_credentials', 'Unknown user or wrong password.');
  const sid = randomBytes(24).toString('base64url');
  sessions.set(sid, form.user);
  // HttpOnly: page scripts cannot read it; SameSite=Lax: other sites cannot send it with a POST.
  // Behind HTTPS, add Secure.
  send(res, 200, { user: form.user, files: users[form.user].files ?? [] }, {
    'set-cookie': `${SESSION_COOKIE}=${sid}; HttpOnly; SameSite=Lax; Path=/`,
  });
}

async function fileLink(id) {
  const file = files.get(id);
  if (offline) return signLink(file.delivery_url, { expiresIn: LINK_SECONDS, secret: env.COFFER_SIGNING_SECRET });
  const link = await coffer.createLink({ file_id: id, file_type: file.file_type, expiry: LINK_SECONDS });
  return link.presigned_url;
}

async function getFile(req, res, id) {
  const user = sessionUser(req);
  if (user === null) return error(res, 401, 'sign_in_required', 'Sign in first: POST /login.');
  // A file the user may not see gets the same answer as one that does not exist.
  if (!(users[user].files ?? []).includes(id) || !files.has(id)) {
    return error(res, 404, 'not_found', 'No such file.');
  }
  let url;
  try {
    url = await fileLink(id);
  } catch (err) {
    if (err instanceof CofferError && err.status === 404) return error(res, 404, 'not_found', 'No such file.');
    console.error(`link for ${id}: ${err.message}`);
    return error(res, 502, 'link_failed', 'The file cannot be fetched right now; try again.');
  }
  // no-store: the link expires, so neither the browser nor a proxy may keep this redirect.
  res.writeHead(302, { location: url, 'cache-control': 'no-store' });
  res.end();
}

async function route(req, res) {
  const { pathname } = new URL(req.url, 'http://app.invalid');
  const fileMatch = /^\/files\/([A-Za-z0-9_-]+)$/.exec(pathname);
  if (req.method === 'POST' && pathname === '/login') return login(req, res);
  if (req.method === 'GET' && fileMatch) return getFile(req, res, fileMatch[1]);
  error(res, 404, 'not_found', 'Try POST /login, then GET /files/{file_id}.');
}

const server = createServer((req, res) => {
  route(req, res).catch((err) => {
    console.error(err);
    if (!res.headersSent) error(res, 500, 'internal_error', 'Something failed; try again.');
    else res.destroy();
  });
});

const port = Number(env.PORT ?? 3000);
server.listen(port, '127.0.0.1', () => {
  console.log(`example listening on http://127.0.0.1:${server.address().port}`);
});

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
