/**
 * What an outside attack pass found, each kept as a test: a deeply nested chunk body that
 * froze the origin, bodies trickled in forever, a re-sent part answered 200 and then dropped
 * by a concurrent complete, signed links that verified under many spellings, a Public URL
 * with a stray "%" refused, and parser errors answered outside the contract's shape.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { RunningEdge } from '../../src/edge/server.js';
import { limitConnectionsPerAddress } from '../../src/core/listener-bounds.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { expectError } from '../helpers/api.js';

const IDLE_MS = 1000;
let o: TestOrigin;
let running: TestEdge;
let edge: RunningEdge;
beforeAll(async () => {
  o = await startTestOrigin({ COFFER_IDLE_TIMEOUT_MS: String(IDLE_MS) });
  running = await startTestEdge(o);
  edge = running.edge;
});
afterAll(async () => {
  await running?.close();
  await o?.close();
});

/** Sends raw bytes; resolves with what came back once the server closes or `ms` pass. */
function rawExchange(port: number, text: string, ms = 5000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => { answer += c; });
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer));
    setTimeout(() => {
      socket.destroy();
      resolve(answer);
    }, ms).unref();
  });
}

describe('chunk bodies', () => {
  test('deep nesting in the fields is refused as it is read, and the origin stays responsive', async () => {
    const grant = (await o.post('/collections/upload/grant', { max_size: 10 })).body.grant as string;
    const depth = 2_000_000;
    const body = `{"x":${'['.repeat(depth)}${']'.repeat(depth)},"bucket":"b","key":"k","uploadId":"u","fileId":"f","partNumber":1,"body":"QUJD"}`;
    const started = performance.now();
    const head = `POST /collections/upload/file-progress HTTP/1.1\r\nHost: x\r\nAuthorization: Grant ${grant}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    // The answer comes as soon as the nesting gives it away, before the body is all sent.
    const refused = rawExchange(o.origin.port, head + body, 30_000);
    const health = await fetch(`${o.url}/healthz`);
    expect(health.status).toBe(200);
    const answer = await refused;
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error.code).toBe('invalid_request');
    // Refused long before a parse of 4 MB of nesting would have finished (seconds of CPU).
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  test('more than 64 KiB of fields besides body is refused', async () => {
    const s = (await o.post('/collections/upload/file', { name: 'f.bin', visibility: 'Public', size: 3, file_type: 'other' })).body;
    // Whitespace is valid JSON, and costs the parser all the same.
    const padding = ' '.repeat(70 * 1024);
    const body = `{"bucket":"${s.bucket}",${padding}"key":"${s.key}","uploadId":"${s.uploadId}","fileId":"${s.fileId}","partNumber":1,"body":"YWJj"}`;
    const r = await o.post('/collections/upload/file-progress', undefined, { raw: body });
    expectError(r, 400, 'invalid_request');
    expect(r.body.error.message).toContain('65536');
  });
});

describe('slow clients', () => {
  test('a body trickled in a byte at a time is dropped by its deadline, with no credential', async () => {
    const body = '{"access_key":"' + 'x'.repeat(100) + '"}';
    const started = performance.now();
    const closed = await new Promise<number>((resolve) => {
      const socket = net.connect(o.origin.port, '127.0.0.1', () => {
        socket.write(`POST /session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body[0]}`);
      });
      let sent = 1;
      // Often enough that the idle timeout never fires.
      const timer = setInterval(() => {
        if (sent < body.length - 1 && !socket.destroyed) socket.write(body[sent++]!);
      }, IDLE_MS / 4);
      socket.on('error', () => {});
      socket.on('close', () => {
        clearInterval(timer);
        resolve(performance.now() - started);
      });
      setTimeout(() => socket.destroy(), 20_000).unref();
    });
    // The deadline: the idle timeout plus 64 KiB at 64 KiB/s.
    expect(closed).toBeLessThan(IDLE_MS + 1000 + 3000);
  });

  test('one address holds at most so many connections; more are closed as they come', async () => {
    const server = http.createServer((_req, res) => res.end('ok'));
    limitConnectionsPerAddress(server, 5);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const sockets: net.Socket[] = [];
    const closed: boolean[] = [];
    for (let i = 0; i < 8; i++) {
      const s = net.connect(port, '127.0.0.1');
      const idx = i;
      closed[idx] = false;
      s.on('close', () => { closed[idx] = true; });
      s.on('error', () => {});
      sockets.push(s);
      await new Promise((r) => s.once('connect', r));
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(closed.filter(Boolean).length).toBe(3);
    // Once some close, others may come again.
    for (const s of sockets) s.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const again = await fetch(`http://127.0.0.1:${port}/`);
    expect(await again.text()).toBe('ok');
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
});

describe('a part re-sent while the upload completes', () => {
  test('is answered 200 only if the file holds it, else 409', async () => {
    const chunk = 5 * 1024 * 1024;
    for (let round = 0; round < 8; round++) {
      const first = randomBytes(chunk);
      const second = randomBytes(100);
      const replacement = randomBytes(chunk);
      const s = (await o.post('/collections/upload/file', { name: 'race.bin', visibility: 'Public', size: chunk + 100, file_type: 'other' })).body;
      const part = (n: number, bytes: Buffer) => ({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: n, body: bytes.toString('base64') });
      expect((await o.post('/collections/upload/file-progress', part(1, first))).status).toBe(200);
      expect((await o.post('/collections/upload/file-progress', part(2, second))).status).toBe(200);
      const [complete, resend] = await Promise.all([
        o.post('/collections/upload/complete-upload', { file_id: s.fileId }),
        o.post('/collections/upload/file-progress', part(1, replacement)),
      ]);
      const sha = (a: Buffer) => createHash('sha256').update(a).update(second).digest('hex');
      let final = complete;
      if (complete.status !== 200) final = await o.post('/collections/upload/complete-upload', { file_id: s.fileId });
      expect(final.status, JSON.stringify(final.body)).toBe(200);
      if (resend.status === 200) expect(final.body.sha256, `round ${round}: a part answered 200 must be in the file`).toBe(sha(replacement));
      else {
        expectError(resend, 409, 'upload_completed');
        expect(final.body.sha256).toBe(sha(first));
      }
    }
  });
});

describe('signed links', () => {
  let link: URL;
  let publicFile: any;
  beforeAll(async () => {
    const f = await uploadBytes(o, Buffer.from('private bytes'), { name: 'p.txt', visibility: 'Private', file_type: 'document' });
    link = new URL((await o.post('/collections/create-link', { file_id: f.file_id, file_type: 'document' })).body.presigned_url);
    publicFile = await uploadBytes(o, Buffer.from('public bytes'), { name: 'pub.txt', visibility: 'Public', file_type: 'document' });
  });
  const at = async (pathAndQuery: string) => {
    const res = await fetch(`${edge.url}${pathAndQuery}`);
    const text = await res.text();
    return { status: res.status, code: res.status === 200 ? null : JSON.parse(text).error.code };
  };

  test('verify in one spelling only', async () => {
    const query = link.search.slice(1);
    expect((await at(`${link.pathname}?${query}`)).status).toBe(200);
    const sig = link.searchParams.get('X-Sig')!;
    const expires = link.searchParams.get('X-Expires')!;
    const encodeAll = (v: string) => [...v].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('');
    const spellings = [
      query.replace(`X-Sig=${sig}`, `X-Sig=${encodeAll(sig)}`),
      query.replace(`X-Sig=${sig}`, `X-Sig=${encodeAll(sig).toLowerCase()}`),
      query.replace(`X-Sig=${sig}`, `X-Sig=%${sig.charCodeAt(0).toString(16)}${sig.slice(1)}`),
      query.replace('X-Sig=', 'X%2DSig='),
      query.replace(`X-Expires=${expires}`, `X-Expires=%3${expires[0]}${expires.slice(1)}`),
      `${query}&`,
      `&${query}`,
    ];
    for (const q of spellings) expect(await at(`${link.pathname}?${q}`), q).toEqual({ status: 403, code: 'invalid_signature' });
  });

  test('a request line in absolute form gets the same answer as in origin form, whatever the host', async () => {
    const status = async (target: string) => {
      const answer = await rawExchange(edge.port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      return Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
    };
    const privatePath = link.pathname;
    for (const host of ['http://x', 'https://evil.example:1', 'HTTP://127.0.0.1']) {
      expect(await status(`${host}/files/${publicFile.file_id}`), host).toBe(200);
      expect(await status(`${host}${privatePath}${link.search}`), host).toBe(200);
      expect(await status(`${host}${privatePath}`), host).toBe(403);
      expect(await status(`${host}${privatePath}?X-Expires=${link.searchParams.get('X-Expires')}&X-Sig=AAAA`), host).toBe(403);
      expect(await status(`${host}/files/..%2f${publicFile.file_id}`), host).toBe(400);
      expect(await status(`${host}/healthz`), host).toBe(200);
    }
  });

  test('a stray "%" in the query of a Public URL is no signature error', async () => {
    for (const q of ['utm=100%', 'q=%zz', '%', 'a=%E0%A4%A']) {
      expect((await at(`/files/${publicFile.file_id}?${q}`)).status, q).toBe(200);
    }
    // A malformed query that tries to carry a signature is still refused.
    expect(await at(`/files/${publicFile.file_id}?X-Sig=%zz&X-Expires=1`)).toEqual({ status: 403, code: 'invalid_signature' });
  });
});

describe('requests the HTTP parser refuses', () => {
  test('are answered in the contract\'s error shape, at the origin and the edge', async () => {
    for (const port of [o.origin.port, edge.port]) {
      for (const text of ['post /collections/list HTTP/1.1\r\nHost: x\r\n\r\n', 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n', 'GET / HTTP/1.1\r\nBad Header: 1\r\n\r\n']) {
        const answer = await rawExchange(port, text);
        expect(answer, JSON.stringify(text)).toMatch(/^HTTP\/1\.1 400 /);
        const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
        expect(body).toEqual({ error: { code: 'invalid_request', message: expect.any(String), details: {} } });
      }
    }
  });
});
