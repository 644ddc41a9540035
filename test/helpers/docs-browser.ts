/**
 * Runs a guide's ```js browser block as a page of an application would: bundled by vite from
 * the document's working directory (whose node_modules holds what the guide says to install),
 * served from its own origin beside a file input and the application's `/upload-grant`
 * endpoint, and opened in Debian's Chromium through playwright-core. A small PNG is chosen in
 * every file input. The block passes once it logs a line beginning "done:"; an uncaught
 * error, a console.error or the time running out fails it.
 */
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { build } from 'vite';
import { CHROMIUM } from '../browser/harness.js';

/** The address the guides write for a local origin, replaced with the test service's. */
const DOCS_ORIGIN = 'http://127.0.0.1:8080';
/** A 64×48 PNG: what the page's user picks. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAEAAAAAwCAIAAAAuKetIAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAe0lEQVRoge2SAQkAQBCDFsz+GOtjjOMHBtCxCKdJ3cAFUF/RXYi7pG7gAqiv6C7EXVI3cAHUV3QX4i6pG7gA6iu6C3GX1A1cAPUV3YW4S+oGLoD6iu5C3CV1AxdAfUV3Ie6SuoELoL6iuxB3Sd3ABVBf0V2Iu6Ru4OcBD5ySAOLVuM8AAAAAAElFTkSuQmCC', 'base64');

export interface BrowserBlockEnv {
  dir: string;
  originUrl: string;
  /** Makes the grant the page's application hands it. */
  grant: () => Promise<string>;
}

async function bundle(dir: string, name: string, code: string, originUrl: string): Promise<Buffer> {
  const entry = join(dir, `${name}.mjs`);
  // The flag is set once the block's top-level code (its awaits included) has run.
  await writeFile(entry, `${code.replaceAll(DOCS_ORIGIN, originUrl)}\nglobalThis.__docsBlockReady = true;\n`);
  const outDir = join(dir, `${name}-dist`);
  await build({
    configFile: false, root: dir, logLevel: 'silent',
    build: { outDir, emptyOutDir: true, minify: false, target: 'esnext', lib: { entry, formats: ['es'], fileName: () => 'page.js' } },
  });
  return readFile(join(outDir, 'page.js'));
}

/** Resolves with the page's log, or rejects with it and the reason. */
export async function runBrowserBlock(name: string, code: string, env: BrowserBlockEnv, timeoutMs: number): Promise<string> {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: install Debian's package (apt-get install chromium), or set CHROMIUM_PATH.`);
  const script = await bundle(env.dir, name, code, env.originUrl);
  const html = '<!doctype html><meta charset="utf-8"><title>docs</title><input type="file" multiple><script type="module" src="/page.js"></script>';
  const page = createServer((req, res) => {
    if (req.url === '/page.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    if (req.url === '/upload-grant' && req.method === 'POST') {
      env.grant().then((grant) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ grant })), () => res.writeHead(500).end());
      return;
    }
    if (req.url === '/') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    if (req.url === '/favicon.ico') return void res.writeHead(204).end();
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', () => r()));
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const log: string[] = [];
  try {
    const tab = await browser.newPage();
    const outcome = new Promise<void>((resolve, reject) => {
      tab.on('pageerror', (err) => reject(new Error(`uncaught: ${err.message}`)));
      tab.on('console', (msg) => {
        log.push(`${msg.type()}: ${msg.text()}`);
        if (msg.type() === 'error') reject(new Error(`console.error: ${msg.text()}`));
        else if (msg.text().startsWith('done:')) resolve();
      });
      setTimeout(() => reject(new Error(`no "done:" line within ${timeoutMs} ms`)), timeoutMs).unref();
    });
    outcome.catch(() => undefined);
    try {
      await tab.goto(`http://127.0.0.1:${(page.address() as { port: number }).port}/`);
      await Promise.race([outcome, tab.waitForFunction(() => (globalThis as { __docsBlockReady?: boolean }).__docsBlockReady === true, null, { timeout: timeoutMs })]);
      await tab.setInputFiles('input[type=file]', { name: 'picked.png', mimeType: 'image/png', buffer: PNG });
      await outcome;
    } catch (err) {
      throw new Error(`${(err as Error).message}\npage log:\n${log.join('\n') || '(empty)'}`);
    }
    return log.join('\n');
  } finally {
    await browser.close().catch(() => undefined);
    await new Promise<void>((r) => page.close(() => r()));
  }
}
