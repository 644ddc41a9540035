/**
 * The Playground in a real browser: an origin and an edge in this process (real HTTP, a
 * real SQLite file and blob directory), Debian's Chromium driven by playwright-core, and
 * a page signed in through the origin's session endpoint. Expects `npm run build` to have
 * built dist/playground (npm test does).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { loadConfig, type SettingName } from '../../src/config/config.js';
import { startEdge, type RunningEdge } from '../../src/edge/server.js';
import { CofferClient } from '../../src/sdk/index.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';

/** Debian's package; CHROMIUM_PATH points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Where the browser tests put their screenshots. */
export const SCREENSHOTS = join(ROOT, 'test-results', 'playground');

export interface Playground {
  /** The origin: the Playground is at `url + '/'`. */
  url: string;
  edgeUrl: string;
  /** The access key, for the sign-in form and for checks through the API. */
  key: string;
  origin: TestOrigin;
  edge: RunningEdge;
  /** A Bearer-key client of the same service, for setting up and checking. */
  api: CofferClient;
  browser: Browser;
  /** A fresh context (its own cookies and storage) and page, not signed in. */
  newPage(options?: BrowserContextOptions): Promise<{ context: BrowserContext; page: Page }>;
  /** A fresh context whose session cookie comes from POST /session, with the Playground open. */
  signedInPage(options?: BrowserContextOptions & { path?: string }): Promise<{ context: BrowserContext; page: Page }>;
  /** Saves a full-page screenshot as test-results/playground/NAME.png; returns the path. */
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

const quiet = () => new Writable({ write: (_c, _e, cb) => cb() });

export async function startPlayground(settings: Partial<Record<SettingName, string>> = {}): Promise<Playground> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`No Chromium at ${CHROMIUM}: install Debian's package (apt-get install chromium; npm test does this when run as root), or set CHROMIUM_PATH.`);
  }
  if (!existsSync(join(ROOT, 'dist', 'playground', 'index.html'))) {
    throw new Error('dist/playground is not built: run `npm run build` first (npm test does).');
  }
  const origin = await startTestOrigin({ COFFER_LOG_LEVEL: 'warn', ...settings });
  const edgeDir = await mkdtemp(join(tmpdir(), 'coffer-pg-edge-'));
  const edgeConfig = loadConfig({}, {
    COFFER_HOST: '127.0.0.1', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: edgeDir,
    COFFER_SIGNING_SECRET: origin.secret, COFFER_EDGE_TOKEN: origin.origin.credentials.edgeTokens[0], COFFER_LOG_LEVEL: 'warn',
  });
  const edge = await startEdge(edgeConfig, origin.url, { cacheDir: edgeDir, logStream: quiet() });
  // Delivery URLs point at this edge, as `coffer serve` arranges for a port chosen at start.
  origin.config.cdnUrl = edge.url;
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  await mkdir(SCREENSHOTS, { recursive: true });
  const contexts = new Set<BrowserContext>();

  const newPage = async (options: BrowserContextOptions = {}) => {
    const context = await browser.newContext({ baseURL: origin.url, viewport: { width: 1280, height: 800 }, ...options });
    contexts.add(context);
    const page = await context.newPage();
    return { context, page };
  };

  return {
    url: origin.url,
    edgeUrl: edge.url,
    key: origin.key,
    origin,
    edge,
    api: new CofferClient({ url: origin.url, accessKey: origin.key }),
    browser,
    newPage,
    async signedInPage(options = {}) {
      const { path = '/', ...contextOptions } = options;
      const { context, page } = await newPage(contextOptions);
      const res = await context.request.post('/session', { data: { access_key: origin.key } });
      if (!res.ok()) throw new Error(`POST /session answered ${res.status()}: ${await res.text()}`);
      await page.goto(path);
      return { context, page };
    },
    async screenshot(page, name) {
      const path = join(SCREENSHOTS, `${name}.png`);
      await page.screenshot({ path, fullPage: false });
      return path;
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => undefined);
      await browser.close().catch(() => undefined);
      await edge.close();
      await origin.close();
      await rm(edgeDir, { recursive: true, force: true });
    },
  };
}
