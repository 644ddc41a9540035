/** A client that stalls its headers or its body is dropped, with or without a key. */
import net from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';

let o: TestOrigin;
beforeAll(async () => {
  o = await startTestOrigin({ COFFER_HEADERS_TIMEOUT_MS: '500', COFFER_IDLE_TIMEOUT_MS: '1000' });
});
afterAll(async () => o?.close());

/** Sends `text`, then nothing; resolves with how long the server kept the connection open. */
function stall(text: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(o.origin.port, '127.0.0.1', () => socket.write(text));
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => resolve(performance.now() - started));
    setTimeout(() => {
      socket.destroy();
      reject(new Error('the server held a stalled connection for 20 s'));
    }, 20_000).unref();
  });
}

test('headers that stop half-way are dropped after the headers timeout', async () => {
  const held = await stall('POST /collections/list HTTP/1.1\r\nHost: x\r\nContent-Ty');
  expect(held).toBeLessThan(5_000);
});

test('a body that stops after "{" is dropped after the idle timeout, with and without a key', async () => {
  for (const auth of ['', `Authorization: Bearer ${'x'}\r\n`]) {
    const held = await stall(`POST /collections/list HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n{`);
    expect(held).toBeLessThan(6_000);
  }
  const key = `Authorization: Bearer ${o.key}\r\n`;
  const held = await stall(`POST /collections/folder/create HTTP/1.1\r\nHost: x\r\n${key}Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n{`);
  expect(held).toBeLessThan(6_000);
});

test('a chunk body that stalls is dropped and leaves no part behind', async () => {
  const init = await o.post('/collections/upload/file', { name: 'a.bin', visibility: 'Public', size: 100, file_type: 'other' });
  const s = init.body;
  const head = JSON.stringify({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 1 }).slice(0, -1) + ',"body":"AAAA';
  const held = await stall(`POST /collections/upload/file-progress HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${o.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n${head}`);
  expect(held).toBeLessThan(6_000);
  const status = await o.post('/collections/upload/status', { file_id: s.fileId });
  expect(status.body.missing).toEqual([1]);
});

test('a slow but steady body is not cut off', async () => {
  const body = JSON.stringify({ name: 'slow', visibility: 'Public' });
  const answer = await new Promise<string>((resolve) => {
    const socket = net.connect(o.origin.port, '127.0.0.1');
    let data = '';
    socket.on('data', (c) => { data += c; });
    socket.on('close', () => resolve(data));
    socket.write(`POST /collections/folder/create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${o.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
    let i = 0;
    const pieces = [body.slice(0, 8), body.slice(8, 16), body.slice(16, 24), body.slice(24)];
    const timer = setInterval(() => {
      socket.write(pieces[i++]!);
      if (i === pieces.length) clearInterval(timer);
    }, 600);
  });
  expect(answer).toMatch(/^HTTP\/1\.1 200/);
});
