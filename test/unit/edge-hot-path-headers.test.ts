/**
 * The edge reads a request's conditional and range headers from rawHeaders instead of
 * req.headers: every spelling, repetition and empty value must read as Node's own
 * req.headers reads it, sent through a real server on a raw socket.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askedHeaders, rangeHeader } from '../../src/edge/request-headers.js';

/** Header blocks as a client may send them (after the request line and Host). */
const CASES: string[][] = [
  [],
  ['Accept: */*', 'User-Agent: test', 'Cache-Control: no-cache'],
  ['If-None-Match: "a"'],
  ['if-none-match: "a"', 'IF-NONE-MATCH: "b", W/"c"'],
  ['If-None-Match:'],
  ['If-Modified-Since: Tue, 01 Jan 2030 00:00:00 GMT', 'if-modified-since: Wed, 02 Jan 2030 00:00:00 GMT'],
  ['Range: bytes=0-9'],
  ['range: bytes=0-1', 'RANGE: bytes=5-'],
  ['Range:   bytes=2-3   '],
  ['If-Range: "x"', 'if-range: "y"', 'Range: bytes=0-0'],
  ['X-Range: bytes=0-1', 'Ranges: bytes=0-1', 'If-None-Matches: "z"', 'If-Modified-Sincer: x'],
  ['Cache-Control: max-age=0', 'Accept-Encoding: gzip', 'If-None-Match: "q"', 'Range: bytes=1-2', 'If-Modified-Since: x', 'If-Range: "q"'],
];

let server: http.Server;
let port: number;
const seen: Array<{ raw: string[]; headers: http.IncomingHttpHeaders }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ raw: req.rawHeaders, headers: req.headers });
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Sends one request with these header lines; resolves what the server saw. */
async function send(lines: string[]): Promise<{ raw: string[]; headers: http.IncomingHttpHeaders }> {
  const before = seen.length;
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`GET /files/x HTTP/1.1\r\nHost: edge\r\n${lines.map((l) => `${l}\r\n`).join('')}Connection: close\r\n\r\n`);
    });
    socket.on('data', () => {});
    socket.on('end', () => resolve());
    socket.on('error', reject);
  });
  return seen[before]!;
}

describe('request headers read from rawHeaders', () => {
  it('read as req.headers reads them', async () => {
    for (const lines of CASES) {
      const { raw, headers } = await send(lines);
      expect(askedHeaders(raw), lines.join(' | ')).toEqual(JSON.parse(JSON.stringify({
        ifNoneMatch: headers['if-none-match'],
        ifModifiedSince: headers['if-modified-since'],
        range: headers.range,
        ifRange: headers['if-range'],
      })));
      expect(rangeHeader(raw)).toBe(headers.range);
    }
  });

  it('share one empty answer when a request carries none of them', () => {
    const a = askedHeaders(['Host', 'edge', 'Accept', '*/*']);
    expect(a).toEqual({});
    expect(askedHeaders(['Host', 'other'])).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
  });
});
