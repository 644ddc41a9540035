/**
 * The guides' examples run as written. In docs/sdk.md, docs/cli.md, docs/s3.md and docs/api.md
 * every ```js block and every ```sh block is run; illustrative blocks carry other tags (```text,
 * ```ts). A ```js browser block is a page's script: it runs in Chromium (helpers/docs-browser.ts).
 *
 * One real service (`coffer serve` on free ports, a temporary data dir, a known key and
 * secret) serves both documents. Each document gets a fresh working directory holding
 * `node_modules/coffer` (a link to this repository, so `import … from 'coffer/sdk'`
 * resolves as it does for a user), the tus clients docs/api.md installs, and `bin/coffer` (the built CLI), first on PATH, with
 * COFFER_URL, COFFER_ACCESS_KEY, COFFER_SIGNING_SECRET and COFFER_CDN_URL set, S3_ENDPOINT
 * (the S3 port's URL) for docs/s3.md, and none of the machine's own AWS_* settings.
 *
 * The ```js blocks run first, in order, each as its own `.mjs` file with `node`; then all
 * ```sh blocks run in order in one bash process with `set -euo pipefail`, so variables
 * carry from one block to the next. A failure names the document, the block's line and
 * first line, and what it wrote to stderr.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, spawnCoffer, stopAll } from '../helpers/processes.js';
import { runBrowserBlock } from '../helpers/docs-browser.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DOC_TIMEOUT_MS = 60_000;
/** docs/s3.md starts the aws CLI nine times, a Python interpreter each: seconds apiece on a busy machine. */
const S3_DOC_TIMEOUT_MS = 150_000;
/** docs/cli.md starts the CLI some sixty times, up to a second apiece on a busy machine. */
const CLI_DOC_TIMEOUT_MS = 120_000;
const KEY = 'docs-key-' + randomBytes(8).toString('hex');
const SECRET = 'docs-secret-' + randomBytes(8).toString('hex');
/** Tags that look runnable but are not: a block tagged so would silently be skipped. */
const AMBIGUOUS = new Set(['bash', 'shell', 'zsh', 'javascript', 'mjs', 'node']);

interface Block {
  lang: 'js' | 'sh';
  /** A ```js browser block: a page's script. */
  browser: boolean;
  /** Line of the opening fence, from 1. */
  line: number;
  code: string;
}

/** The runnable fenced blocks of a Markdown document, in order. */
function runnableBlocks(doc: string, markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, tag, info] = open;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !(lines[i]!.trim().startsWith(fence!) && lines[i]!.trim().replace(/[`~]/g, '') === ''); i++) {
      body.push(lines[i]!.startsWith(indent!) ? lines[i]!.slice(indent!.length) : lines[i]!);
    }
    if (i >= lines.length) throw new Error(`${doc}:${start + 1}: this code block is never closed.`);
    const lang = tag!.toLowerCase();
    if (AMBIGUOUS.has(lang)) {
      throw new Error(`${doc}:${start + 1}: a block tagged "${tag}" would not run; tag it js or sh to run it, or text to show it.`);
    }
    if (lang === 'js' || lang === 'sh') blocks.push({ lang, browser: lang === 'js' && /\bbrowser\b/.test(info!), line: start + 1, code: body.join('\n') });
  }
  return blocks;
}

const firstLine = (b: Block): string => b.code.split('\n').find((l) => l.trim() !== '')?.trim() ?? '(empty)';

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    // Its own process group, so a timeout also ends whatever a block started.
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }, Math.max(1, timeoutMs));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr, timedOut });
    });
  });
}

const tail = (text: string, lines = 40): string => text.trimEnd().split('\n').slice(-lines).join('\n');

function failure(doc: string, block: Block, r: Run, stderr: string): Error {
  const how = r.timedOut ? 'did not finish within the time left for the document' : `exited with ${r.code ?? r.signal}`;
  return new Error(`${doc}:${block.line}: the ${block.lang} block starting "${firstLine(block)}" ${how}.\nstderr:\n${tail(stderr) || '(empty)'}`);
}

let dataDir: string;
let env: Record<string, string>;
/** Packages docs/api.md tells its reader to install, linked from this repository's node_modules. */
const CLIENT_PACKAGES = ['tus-js-client', '@uppy/core', '@uppy/tus'];
const workDirs: string[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'coffer-docs-data-'));
  const serve = spawnCoffer({
    name: 'serve', kind: 'edge', args: ['serve'],
    env: { COFFER_PORT: '0', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: dataDir, COFFER_ACCESS_KEY: KEY, COFFER_SIGNING_SECRET: SECRET },
  });
  const edgeUrl = await serve.ready;
  const originUrl = /origin listening on (http:\/\/\S+)/.exec(serve.stdout())![1]!;
  const s3Url = /s3 listening on (http:\/\/\S+)/.exec(serve.stdout())![1]!;
  env = { COFFER_URL: originUrl, COFFER_ACCESS_KEY: KEY, COFFER_SIGNING_SECRET: SECRET, COFFER_CDN_URL: edgeUrl, S3_ENDPOINT: s3Url };
});

afterAll(async () => {
  await stopAll();
  for (const d of [dataDir, ...workDirs]) if (d) await rm(d, { recursive: true, force: true });
});

/** A fresh directory as a user of the package would have it: `coffer` installed and on PATH. */
async function workDir(): Promise<{ dir: string; env: NodeJS.ProcessEnv }> {
  const dir = await mkdtemp(join(tmpdir(), 'coffer-docs-'));
  workDirs.push(dir);
  await mkdir(join(dir, 'node_modules'));
  await symlink(ROOT, join(dir, 'node_modules', 'coffer'), 'dir');
  await mkdir(join(dir, 'node_modules', '@uppy'));
  for (const pkg of CLIENT_PACKAGES) await symlink(join(ROOT, 'node_modules', pkg), join(dir, 'node_modules', pkg), 'dir');
  await mkdir(join(dir, 'bin'));
  await writeFile(join(dir, 'bin', 'coffer'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  await chmod(join(dir, 'bin', 'coffer'), 0o755);
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COFFER_') && !k.startsWith('VITEST') && !k.startsWith('AWS_') && !k.startsWith('RCLONE_') && k !== 'NODE_OPTIONS'));
  return {
    dir,
    env: {
      ...base, ...env,
      PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}`,
      // The CLI keeps its resumable uploads under XDG_STATE_HOME: keep them in the directory too.
      XDG_STATE_HOME: join(dir, '.state'),
    },
  };
}

/** What the application's server does for the page of a browser block: a grant for one image. */
async function makeGrant(): Promise<string> {
  const res = await fetch(`${env.COFFER_URL}/collections/upload/grant`, {
    method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ max_size: 10_000_000, content_types: ['image/*'] }),
  });
  if (!res.ok) throw new Error(`grant: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { grant: string }).grant;
}

/** Runs every runnable block of one document; throws on the first that fails. */
async function runDoc(doc: string, timeoutMs = DOC_TIMEOUT_MS): Promise<{ js: number; sh: number }> {
  const deadline = Date.now() + timeoutMs - 2_000;
  let markdown: string;
  try {
    markdown = await readFile(join(ROOT, doc), 'utf8');
  } catch (err) {
    throw new Error(`${doc} is missing (${(err as Error).message}); the docs test runs its examples.`);
  }
  const blocks = runnableBlocks(doc, markdown);
  if (blocks.length === 0) throw new Error(`${doc} has no \`\`\`js or \`\`\`sh block: nothing in it is checked.`);
  const { dir, env: blockEnv } = await workDir();

  const js = blocks.filter((b) => b.lang === 'js');
  for (const block of js) {
    if (block.browser) {
      await runBrowserBlock(`block-${block.line}`, block.code, { dir, originUrl: env.COFFER_URL!, grant: makeGrant }, deadline - Date.now())
        .catch((err: Error) => {
          throw new Error(`${doc}:${block.line}: the js browser block starting "${firstLine(block)}" failed: ${err.message}`);
        });
      continue;
    }
    const file = join(dir, `block-${block.line}.mjs`);
    await writeFile(file, block.code + '\n');
    const r = await run(process.execPath, [file], dir, blockEnv, deadline - Date.now());
    if (r.code !== 0) throw failure(doc, block, r, r.stderr);
  }

  const sh = blocks.filter((b) => b.lang === 'sh');
  if (sh.length > 0) {
    // The marker before each block says, on a failure, which block was running.
    const script = ['set -euo pipefail', ...sh.flatMap((b) => [`echo "@@docs-block ${b.line}" >&2`, b.code])].join('\n') + '\n';
    await writeFile(join(dir, 'blocks.sh'), script);
    const r = await run('bash', [join(dir, 'blocks.sh')], dir, blockEnv, deadline - Date.now());
    if (r.code !== 0) {
      const markers = [...r.stderr.matchAll(/^@@docs-block (\d+)$/gm)];
      const lastLine = Number(markers.at(-1)?.[1] ?? sh[0]!.line);
      const block = sh.find((b) => b.line === lastLine)!;
      const ownStderr = r.stderr.slice((markers.at(-1)?.index ?? 0)).replace(/^@@docs-block \d+\n/, '');
      throw failure(doc, block, r, ownStderr);
    }
  }
  return { js: js.length, sh: sh.length };
}

describe('the guides run as written', () => {
  it('docs/sdk.md', async () => {
    const ran = await runDoc('docs/sdk.md');
    expect(ran.js).toBeGreaterThan(0);
  }, DOC_TIMEOUT_MS);

  it('docs/cli.md', async () => {
    const ran = await runDoc('docs/cli.md', CLI_DOC_TIMEOUT_MS);
    expect(ran.sh).toBeGreaterThan(0);
  }, CLI_DOC_TIMEOUT_MS);

  it('docs/api.md: tus-js-client in Node and Uppy in Chromium', async () => {
    const ran = await runDoc('docs/api.md', DOC_TIMEOUT_MS);
    expect(ran.js).toBeGreaterThanOrEqual(2);
    // Both files are stored and ready: the Node client's and the one picked in the page.
    const res = await fetch(`${env.COFFER_URL}/collections/list`, {
      method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ limit: 1000 }),
    });
    const files = ((await res.json()) as { files: Array<{ name: string; status: string }> }).files;
    for (const name of ['report.txt', 'picked.png']) expect(files.find((f) => f.name === name), name).toMatchObject({ status: 'ready' });
  }, DOC_TIMEOUT_MS);

  it('docs/s3.md', async () => {
    const ran = await runDoc('docs/s3.md', S3_DOC_TIMEOUT_MS);
    expect(ran.sh).toBeGreaterThan(0);
  }, S3_DOC_TIMEOUT_MS);
});
