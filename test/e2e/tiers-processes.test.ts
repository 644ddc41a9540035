/**
 * Issue 26, tiers, with real edge processes (`dist/cli/main.js edge --parent …`): a parent
 * killed (SIGKILL) while its child's prewarm waits on it or in the middle of sending it, and a parent stopped (SIGSTOP)
 * before a new file's prewarm. The children fall back to the origin and serve the right bytes.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { spawnCoffer, stopAll, type CofferProcess } from '../helpers/processes.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { RequestTap } from '../helpers/request-tap.js';
import { sha256, waitFor } from '../kit/index.js';

let o: TestOrigin;
let root = '';
const proxies: TcpProxy[] = [];
const taps: RequestTap[] = [];

beforeAll(async () => {
  o = await startTestOrigin();
  root = await mkdtemp(join(tmpdir(), 'coffer-tiers-'));
});

afterAll(async () => {
  await stopAll();
  await Promise.all([...proxies, ...taps].map((p) => p.close()));
  await o?.close();
  await rm(root, { recursive: true, force: true });
});

async function proxyTo(url: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(url);
  const p = await TcpProxy.start(hostname, Number(port));
  proxies.push(p);
  return p;
}

let n = 0;
async function spawnEdge(originUrl: string, parents: string[] = []): Promise<{ proc: CofferProcess; url: string }> {
  const name = `edge ${++n}`;
  const proc = spawnCoffer({
    kind: 'edge', name, readyTimeoutMs: 30_000,
    args: ['edge', '--origin', originUrl, ...(parents.length ? ['--parent', parents.join(',')] : []), '--name', name],
    env: {
      COFFER_EDGE_PORT: '0', COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: join(root, `e${n}`), COFFER_LOG_LEVEL: 'warn',
      COFFER_SIGNING_SECRET: o.secret, COFFER_EDGE_TOKEN: o.origin.credentials.edgeTokens[0],
    },
  });
  return { proc, url: await proc.ready };
}

/** Waits until the edge answers the file from its cache, with these bytes. */
async function servedWhole(edgeUrl: string, id: string, sha: string): Promise<void> {
  await waitFor(async () => {
    const r = await fetch(`${edgeUrl}/files/${id}`).catch(() => null);
    if (!r) return false;
    const body = Buffer.from(await r.arrayBuffer());
    return r.status === 200 && r.headers.get('x-cache') === 'HIT' && sha256(body) === sha;
  }, { timeoutMs: 30_000, what: `${id} a HIT at ${edgeUrl}` });
}

describe('a parent that dies or stops', () => {
  it('a parent killed while its child waits on it for a prewarm: the child fills from the origin', async () => {
    // The parent reaches the origin through a proxy that holds its blob fetch: its fill never ends.
    const originSide = await proxyTo(o.url);
    const parent = await spawnEdge(originSide.url);
    const toParent = await proxyTo(parent.url);
    const child = await spawnEdge(o.url, [toParent.url]);
    const held = originSide.intercept(/^GET \/_edge\/blob\//);
    const asked = toParent.connections;
    const bytes = randomBytes(2_000_000);
    const rec = await uploadBytes(o, bytes, { name: 'killed-parent.bin' });
    await held.held;
    await waitFor(() => toParent.connections > asked, { timeoutMs: 20_000, what: 'the child asking its parent' });
    parent.proc.child.kill('SIGKILL');
    await parent.proc.exited;
    await servedWhole(child.url, rec.file_id, sha256(bytes));
  }, 60_000);

  it('a parent killed in the middle of sending a prewarm: the child discards the part and fills from the next parent', async () => {
    const parent = await spawnEdge(o.url);
    const second = await spawnEdge(o.url);
    const toParent = await RequestTap.start(parent.url);
    const toSecond = await RequestTap.start(second.url);
    taps.push(toParent, toSecond);
    const child = await spawnEdge(o.url, [toParent.url, toSecond.url]);
    // The child has had 1 MiB of the file from its parent when the parent dies.
    const midway = toParent.holdAnswersAfter(1024 * 1024);
    const bytes = randomBytes(5 * 1024 * 1024);
    const rec = await uploadBytes(o, bytes, { name: 'killed-mid-body.bin' });
    await midway;
    parent.proc.child.kill('SIGKILL');
    await parent.proc.exited;
    await servedWhole(child.url, rec.file_id, sha256(bytes));
    expect(toSecond.blobFetches(rec.file_id)).toBe(1);
  }, 60_000);

  it('a stopped parent (SIGSTOP): the child gives it up after 3 s of silence and fills from the origin', async () => {
    const parent = await spawnEdge(o.url);
    const second = await spawnEdge(o.url);
    const child = await spawnEdge(o.url, [parent.url, second.url]);
    parent.proc.child.kill('SIGSTOP');
    try {
      const bytes = randomBytes(1_000_000);
      const rec = await uploadBytes(o, bytes, { name: 'stopped-parent.bin' });
      // The second parent, or the origin: either way the right bytes.
      await servedWhole(child.url, rec.file_id, sha256(bytes));
    } finally {
      parent.proc.child.kill('SIGCONT');
    }
  }, 60_000);
});

describe('coffer edge --parent', () => {
  it('refuses a parent with a path, or more than 8, before it starts', async () => {
    for (const parents of ['http://10.0.1.5:8081/edge', Array.from({ length: 9 }, (_, i) => `http://p${i}:8081`).join(',')]) {
      const proc = spawnCoffer({
        kind: 'edge', name: 'bad parents', args: ['edge', '--origin', o.url, '--parent', parents],
        env: { COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: join(root, 'bad'), COFFER_SIGNING_SECRET: o.secret, COFFER_EDGE_TOKEN: 't' },
      });
      expect((await proc.exited).code).toBe(1);
      expect(proc.stderr()).toMatch(/^coffer: COFFER_EDGE_PARENTS/);
    }
  });
});
