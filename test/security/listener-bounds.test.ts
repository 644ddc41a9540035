/**
 * Every listener is bounded: origin, S3 and edge each hold at most so many connections from
 * one address and in all, closing the rest as they come; `coffer serve` gives each of its
 * three listeners a share of the process's descriptors, so idle sockets flooding its edge
 * leave the origin and S3 answering. Sockets only go to 127.0.0.1 (from other loopback
 * addresses where a test needs several clients), and every wait is bounded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressKey } from '../../src/core/listener-bounds.js';
import { connectionBudget, parseProcLimits } from '../../src/core/fd-budget.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { CLI } from '../helpers/processes.js';
import { poll, sleep } from '../kit/index.js';

interface Flood {
  sockets: net.Socket[];
  /** Sockets the server has not closed. */
  held(): number;
  close(): void;
}

/**
 * Opens `count` sockets to 127.0.0.1:`port`, each sending one byte of a request line, and
 * resolves once each is connected or closed and the server has had `settleMs` to close more.
 */
async function flood(port: number, count: number, opts: { from?: string; settleMs?: number } = {}): Promise<Flood> {
  const sockets: net.Socket[] = [];
  const closed = new Set<net.Socket>();
  const settled: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const s = net.connect({ port, host: '127.0.0.1', ...(opts.from ? { localAddress: opts.from } : {}) });
    sockets.push(s);
    s.on('error', () => {});
    s.once('close', () => closed.add(s));
    s.once('connect', () => s.write('G'));
    settled.push(new Promise<void>((r) => {
      s.once('connect', () => r());
      s.once('close', () => r());
    }));
  }
  await Promise.race([Promise.all(settled), sleep(15_000)]);
  await sleep(opts.settleMs ?? 400);
  return {
    sockets,
    held: () => sockets.filter((s) => !closed.has(s) && !s.destroyed).length,
    close: () => sockets.forEach((s) => s.destroy()),
  };
}

/** The caps every listener is checked against: 5 connections in all, 3 from one address. */
const CAPS = { COFFER_MAX_CONNECTIONS: '5', COFFER_MAX_CONNECTIONS_PER_ADDRESS: '3' };

/** Four clients from one address, four from another, one from a third: held 3, 2 and 0. */
async function expectCaps(port: number): Promise<void> {
  const floods: Flood[] = [];
  try {
    for (const [from, count] of [['127.0.0.21', 4], ['127.0.0.22', 4], ['127.0.0.23', 1]] as const) floods.push(await flood(port, count, { from }));
    expect(floods.map((f) => f.held())).toEqual([3, 2, 0]);
  } finally {
    floods.forEach((f) => f.close());
  }
  // Freed places are taken again.
  await sleep(200);
  const again = await flood(port, 4, { from: '127.0.0.23' });
  const held = again.held();
  again.close();
  expect(held).toBe(3);
}

describe('each listener caps connections per address and in all', () => {
  let o: TestOrigin;
  let plain: TestOrigin;
  let edge: TestEdge;
  beforeAll(async () => {
    // No edge follows this origin, so only the test's sockets reach its listeners.
    o = await startTestOrigin({ ...CAPS, COFFER_LOG_LEVEL: 'error' });
    plain = await startTestOrigin({ COFFER_LOG_LEVEL: 'error' });
    edge = await startTestEdge(plain, () => ({ ...CAPS, COFFER_LOG_LEVEL: 'error' }));
  });
  afterAll(async () => {
    await edge?.close();
    await o?.close();
    await plain?.close();
  });

  it('the edge', async () => {
    await expectCaps(edge.edge.port);
    const res = await fetch(`${edge.edge.url}/healthz`, { signal: AbortSignal.timeout(5000) });
    expect(res.status).toBe(200);
  });

  it('the origin', async () => {
    await expectCaps(o.origin.port);
  });

  it('the S3 interface', async () => {
    await expectCaps(o.origin.s3Port);
  });
});

describe('the budget of descriptors', () => {
  it('keeps a reserve and shares the rest between listeners, two descriptors a connection', () => {
    expect(connectionBudget(3, 512)).toBe(64);
    expect(connectionBudget(3, 20_000)).toBe(2500);
    expect(connectionBudget(1, 1024)).toBe(384);
    expect(connectionBudget(3, 64)).toBe(1);
  });

  it('reads the soft limit of /proc/self/limits', () => {
    const text = 'Limit                     Soft Limit           Hard Limit           Units     \n'
      + 'Max processes             63704                63704                processes \n'
      + 'Max open files            4096                 524288               files     \n';
    expect(parseProcLimits(text)).toBe(4096);
    expect(parseProcLimits(text.replace('4096 ', 'unlimited'))).toBe(1_048_576);
    expect(parseProcLimits('nothing')).toBeUndefined();
  });

  it('counts an IPv6 client by its /64 and a mapped IPv4 one by its address', () => {
    expect(addressKey('127.0.0.1')).toBe('127.0.0.1');
    expect(addressKey('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(addressKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2::9')).toBe(addressKey('2001:db8:1:2:ffff::1'));
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('a::b:c:d:e:1.2.3.4')).toBe('a:0:b:c::/64');
  });
});

/** The open-file limit `coffer serve` runs under: a few hundred sockets exhaust it. */
const FD_LIMIT = 512;
const FLOOD = 700;

interface Serve {
  child: ChildProcess;
  lines: Record<string, string>;
}

/** `coffer serve` as its own process, under `ulimit -n FD_LIMIT`, so the descriptors are its own. */
function startServe(dataDir: string): Promise<Serve> {
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COFFER_')));
  Object.assign(env, {
    COFFER_HOST: '127.0.0.1', COFFER_PORT: '0', COFFER_EDGE_PORT: '0', COFFER_S3_PORT: '0', COFFER_DATA_DIR: dataDir,
    COFFER_LOG_LEVEL: 'error', COFFER_HEADERS_TIMEOUT_MS: '60000', COFFER_IDLE_TIMEOUT_MS: '60000',
  });
  const child = spawn('/bin/sh', ['-c', `ulimit -n ${FD_LIMIT} && exec "$0" "$@"`, process.execPath, CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const lines: Record<string, string> = {};
    const timer = setTimeout(() => reject(new Error(`serve printed no listening lines in time:\n${out}`)), 20_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      for (const m of out.matchAll(/^(origin|edge|s3) listening on (\S+)$/gm)) lines[m[1]!] = m[2]!;
      if (lines.origin && lines.edge && lines.s3) {
        clearTimeout(timer);
        resolve({ child, lines });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${out}`));
    });
  });
}

describe('coffer serve', () => {
  let serve: Serve | undefined;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'coffer-bounds-'));
    serve = await startServe(dataDir);
  });
  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  });

  it('keeps its origin and S3 answering while idle sockets flood its edge, which serves again after', async () => {
    const { lines } = serve!;
    const edgePort = Number(new URL(lines.edge!).port);
    const f = await flood(edgePort, FLOOD);
    try {
      const health = await fetch(`${lines.origin}/healthz`, { signal: AbortSignal.timeout(5000) });
      expect(health.status).toBe(200);
      // An unsigned request answered in S3's terms: the S3 listener accepts and reads.
      const s3 = await fetch(`${lines.s3}/`, { signal: AbortSignal.timeout(5000) });
      expect(s3.status).toBe(403);
      expect(await s3.text()).toContain('<Error>');
      // The edge holds its share of the descriptors and no more.
      expect(f.held()).toBeGreaterThan(0);
      expect(f.held()).toBeLessThanOrEqual(connectionBudget(3, FD_LIMIT));
    } finally {
      f.close();
    }
    let status = 0;
    await poll(async () => {
      status = await fetch(`${lines.edge}/healthz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0);
      return status === 200;
    }, { timeoutMs: 10_000, intervalMs: 100 });
    expect(status).toBe(200);
  });
});
