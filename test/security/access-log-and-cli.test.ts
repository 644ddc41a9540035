/**
 * The edge's access log under hostile request lines (every line is one JSON object for one
 * request, whatever the path and Range hold), and the `coffer` commands, which load their
 * code on use: every --help works, and an unreachable service is a clear error.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEdge } from '../../src/edge/server.js';
import { startLoggingEdge, type LoggingEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { CLI } from '../helpers/processes.js';
import { rawSocket } from '../helpers/raw-http.js';
import { sleep } from '../kit/index.js';

// ================================================================ the edge's access log

describe('edge access log lines under hostile requests', () => {
  let o: TestOrigin;
  let logging: LoggingEdge;
  let edge: RunningEdge;
  let logPath: string;
  beforeAll(async () => {
    o = await startTestOrigin();
    logging = await startLoggingEdge(o);
    ({ edge, logPath } = logging);
  });
  afterAll(async () => {
    await logging?.close();
    await o?.close();
  });

  it('every line parses as JSON and holds exactly one request, whatever the path and Range', async () => {
    const f = await uploadBytes(o, Buffer.alloc(5000, 7), { name: 'log.bin' });
    const port = Number(new URL(edge.url).port);
    const paths = [
      `/files/${f.file_id}`, '/files/a"b', '/files/a\\b', '/files/%22%7D%0A%7B%22forged%22:1', '/files/"},{"forged":true,"x":"', '/files/\xe9\xff\xfe',
      '/files/\u00e9t\u00e9', `/files/${f.file_id}?"x\\y`, '/files/\x7f', '/files/a\tb',
    ];
    const ranges = ['bytes=0-1', 'bytes="0-1"', 'bytes=0-1\\"', '"},"forged":{"', 'bytes=\xe9\xff', 'bytes=0-1\t"', 'x'.repeat(300), '\\u0000'];
    let sent = 0;
    for (const p of paths) {
      for (const r of ranges) {
        await rawSocket(port, `GET ${p} HTTP/1.1\r\nHost: x\r\nRange: ${r}\r\nConnection: close\r\n\r\n`, 2000);
        sent++;
      }
    }
    // Raw control characters and newlines in the request line/headers: the parser refuses them, and nothing forged reaches the log.
    for (const bad of [`GET /files/a\nb HTTP/1.1\r\nHost: x\r\n\r\n`, `GET /files/a HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\n{"forged":true}\r\n\r\n`,
      `GET /files/a\r\n{"forged":true} HTTP/1.1\r\nHost: x\r\n\r\n`, `GET /files/\x00 HTTP/1.1\r\nHost: x\r\n\r\n`, `GET /files/a HTTP/1.1\r\nHost: x\r\nRange: \x01\x02"\r\n\r\n`]) {
      await rawSocket(port, bad, 2000);
    }
    // The log is flushed every 200 ms: wait until it stops growing.
    let count = -1;
    for (;;) {
      await sleep(600);
      const now = (await readFile(logPath, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
      if (now === count) break;
      count = now;
    }
    // Requests the HTTP parser refused never had a line; those it took have exactly one each.
    expect(count).toBeGreaterThanOrEqual(paths.filter((p) => /^[\x21-\x7e]+$/.test(p)).length * ranges.filter((r) => /^[\x20-\x7e]+$/.test(r)).length);
    expect(count).toBeLessThanOrEqual(sent + 5);
    const raw = await readFile(logPath);
    expect(raw.at(-1)).toBe(0x0a);
    const lines = raw.toString('utf8').split('\n').filter(Boolean);
    for (const line of lines) {
      let parsed: any;
      expect(() => { parsed = JSON.parse(line); }, line).not.toThrow();
      expect(Object.keys(parsed), line).toEqual(['time', 'method', 'file_id', 'status', 'bytes', 'complete', 'duration_ms', 'cache', 'client', 'range']);
      expect(parsed.forged, line).toBeUndefined();
      expect(parsed.method, line).toBe('GET');
      expect(typeof parsed.status, line).toBe('number');
    }
    // Quotes and backslashes survive as data.
    const ranged = lines.map((l) => JSON.parse(l).range);
    expect(ranged).toContain('bytes="0-1"');
    expect(ranged).toContain('"},"forged":{"');
    expect(ranged).toContain('bytes=0-1\\"');
    expect(lines.map((l) => JSON.parse(l).file_id)).toContain('a"b');
  });
});

// ================================================================ the CLI

function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    child.on('error', reject);
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('coffer CLI with commands loaded on use', () => {
  it('every command\'s --help works', async () => {
    const top = await runCli(['--help']);
    expect(top.code).toBe(0);
    const section = top.stdout.split('Commands:')[1]!.split('\n\n')[0]!;
    const names = [...section.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]!).filter((n) => n !== 'help');
    expect(names.length).toBeGreaterThan(8);
    for (const n of ['upload', 'ls', 'mkdir', 'rm', 'link', 'download', 'grant', 'origin', 'edge', 'serve']) expect(names).toContain(n);
    const results = await Promise.all(names.map((n) => runCli([n, '--help'])));
    for (const [i, r] of results.entries()) {
      expect(r.code, `${names[i]}: ${r.stderr}`).toBe(0);
      expect(r.stdout, names[i]).toMatch(new RegExp(`Usage: coffer ${names[i]}`));
    }
    for (const sub of ['create', 'ls', 'revoke']) {
      const r = await runCli(['keys', sub, '--help']);
      expect(r.code, `keys ${sub}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`Usage: coffer keys ${sub}`));
    }
  }, 120_000);

  it('a client command against an unreachable server fails with a clear coffer: message and exit 1', async () => {
    // A port nothing listens on.
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((r) => server.close(() => r()));
    const env = { COFFER_URL: `http://127.0.0.1:${port}`, COFFER_ACCESS_KEY: 'k' };
    const dir = await mkdtemp(join(tmpdir(), 'coffer-cli-attack-'));
    try {
      const file = join(dir, 'x.txt');
      await import('node:fs/promises').then((fs) => fs.writeFile(file, 'hi'));
      for (const args of [['ls'], ['mkdir', 'x'], ['upload', file], ['rm', 'abcdefghijklmnopqrstuv'], ['link', 'abcdefghijklmnopqrstuv'], ['grant', '--max-size', '10'], ['keys', 'ls'], ['download', 'abcdefghijklmnopqrstuv']]) {
        const r = await runCli(args, env);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(1);
        expect(r.stderr, args.join(' ')).toMatch(/^coffer: /m);
        expect(r.stderr, args.join(' ')).not.toMatch(/\n\s+at /);
        expect(r.stdout, args.join(' ')).toBe('');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
