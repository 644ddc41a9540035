/**
 * https between edge and origin: an origin behind a TLS-terminating proxy with a self-signed
 * certificate (made here with openssl). An edge given the certificate as COFFER_ORIGIN_CA
 * follows the feed and delivers a file over it; an edge without it refuses the connection and
 * never becomes ready.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { spawnCoffer, stopAll } from '../helpers/processes.js';
import { sha256, sleep } from '../kit/index.js';

const EDGE_TOKEN = 'https-edge-token-' + randomBytes(12).toString('hex');
const LEASE_MS = 1000;

/** A TLS server that pipes each connection to the origin in the clear. */
async function tlsProxy(key: Buffer, cert: Buffer, target: URL): Promise<{ port: number; handshakes: () => number; close(): Promise<void> }> {
  let handshakes = 0;
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ key, cert }, (client) => {
    handshakes++;
    const upstream = net.connect({ host: target.hostname, port: Number(target.port) });
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    handshakes: () => handshakes,
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}

describe('https between edge and origin', () => {
  let dir = '';
  let origin: TestOrigin;
  let proxy: Awaited<ReturnType<typeof tlsProxy>>;
  let certPath = '';

  const edgeEnv = (name: string, ca?: string) => ({
    COFFER_EDGE_PORT: '0', COFFER_HOST: '127.0.0.1', COFFER_DATA_DIR: join(dir, name), COFFER_SIGNING_SECRET: origin.secret,
    COFFER_EDGE_TOKEN: EDGE_TOKEN, COFFER_EDGE_LEASE_MS: String(LEASE_MS), COFFER_LOG_LEVEL: 'warn',
    ...(ca ? { COFFER_ORIGIN_CA: ca } : {}),
  });

  beforeAll(async () => {
    expect(existsSync('/usr/bin/openssl') || existsSync('/bin/openssl'), 'openssl (Debian base) makes the test certificate').toBe(true);
    dir = await mkdtemp(join(tmpdir(), 'coffer-hub-https-'));
    certPath = join(dir, 'cert.pem');
    const keyPath = join(dir, 'key.pem');
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    ], { stdio: 'ignore' });
    origin = await startTestOrigin({ COFFER_EDGE_TOKEN: EDGE_TOKEN, COFFER_EDGE_LEASE_MS: String(LEASE_MS) });
    proxy = await tlsProxy(await readFile(keyPath), await readFile(certPath), new URL(origin.url));
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await proxy?.close();
    await origin?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('follows the feed and delivers files over https with COFFER_ORIGIN_CA', async () => {
    const edge = spawnCoffer({ kind: 'edge', name: 'edge over https', args: ['edge', '--origin', `https://127.0.0.1:${proxy.port}`], env: edgeEnv('trusting', certPath) });
    const url = await edge.ready;
    expect(proxy.handshakes()).toBeGreaterThan(0);
    // Completed after the edge is up: known from the feed, its bytes fetched over TLS.
    const bytes = randomBytes(300_000);
    const rec = await uploadBytes(origin, bytes, { name: 'over-tls.bin' });
    const res = await fetch(`${url}/files/${rec.file_id}`);
    expect(res.status).toBe(200);
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(rec.sha256);
    // A change made after that reaches the edge over the same feed before it is answered.
    expect((await origin.post('/collections/file/update', { file_id: rec.file_id, visibility: 'Private' })).status).toBe(200);
    const after = await fetch(`${url}/files/${rec.file_id}`);
    expect(after.status).toBe(403);
    await edge.stop();
  }, 60_000);

  it('refuses an origin whose certificate it cannot verify (no COFFER_ORIGIN_CA) and never becomes ready', async () => {
    const edge = spawnCoffer({
      kind: 'edge', name: 'edge without the CA', args: ['edge', '--origin', `https://127.0.0.1:${proxy.port}`], env: edgeEnv('untrusting'), readyTimeoutMs: 60_000,
    });
    let ready = false;
    void edge.ready.then(() => (ready = true), () => {});
    for (let i = 0; i < 60 && !/certificate/i.test(edge.stdout() + edge.stderr()); i++) await sleep(100);
    expect(edge.stdout() + edge.stderr()).toMatch(/certificate/i);
    await sleep(500);
    expect(ready, 'an edge that cannot verify its origin does not serve').toBe(false);
    expect(edge.exit, 'it keeps trying').toBeNull();
    await edge.stop();
  }, 30_000);
});
