/**
 * One HTTP request on a fresh connection over node:http, with the path sent exactly as given
 * (no URL normalisation: `..`, %2F and %00 reach the server as written), the body whole or in
 * pieces (optionally cut off), and the whole answer read.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import { expect } from 'vitest';

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body parsed as JSON, or undefined. */
  json: any;
}

export interface RawRequest {
  method?: string;
  headers?: Record<string, string>;
  /** Bytes, or pieces sent one after another (chunked unless Content-Length is given). */
  body?: Buffer | AsyncIterable<Buffer>;
  /** Close the connection once the body's pieces are written, without ending the request. */
  cut?: boolean;
  /** Leave the request unfinished once the body is written: the answer must come without the rest. */
  open?: boolean;
  /** Gives up when the connection is idle this long (default 10 s). */
  timeoutMs?: number;
}

export function jsonOrUndefined(body: Buffer): any {
  try {
    return JSON.parse(body.toString());
  } catch {
    return undefined;
  }
}

export function rawRequest(base: string, path: string, opts: RawRequest = {}): Promise<RawAnswer> {
  const u = new URL(base);
  const method = opts.method ?? 'GET';
  return new Promise<RawAnswer>((resolve, reject) => {
    let answered = false;
    const req = httpRequest({
      host: u.hostname, port: Number(u.port), path, method, headers: opts.headers ?? {}, agent: false, timeout: opts.timeoutMs ?? 10_000,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        answered = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: jsonOrUndefined(body) });
        if (opts.open) req.destroy();
      });
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${base}${path}`)));
    req.on('error', (err) => answered || reject(err));
    const body = opts.body;
    if (body === undefined) req.end();
    else if (Buffer.isBuffer(body)) opts.open ? req.write(body) : req.end(body);
    else {
      (async () => {
        for await (const piece of body) {
          if (!req.write(piece)) await new Promise<void>((r) => req.once('drain', () => r()));
        }
        if (opts.cut) {
          // Once what was written has left this process.
          await new Promise<void>((r) => req.write('', () => r()));
          req.destroy(new Error('cut off by the test'));
        } else req.end();
      })().catch((err: Error) => req.destroy(err));
    }
  });
}

/** Sends `text` on a raw socket and reads until the server closes (or `ms` pass). */
export function rawSocket(port: number, text: string, ms = 3000): Promise<string> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => { answer += c; });
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer));
    setTimeout(() => socket.destroy(), ms);
  });
}

/** An error answer in the contract's shape, whatever its status. */
export function expectContractError(a: RawAnswer, status: number, where: string): void {
  expect(a.status, where).toBe(status);
  expect(a.json, `${where}: ${a.body.toString().slice(0, 200)}`).toBeTypeOf('object');
  expect(Object.keys(a.json ?? {}), `${where}: ${a.body.toString().slice(0, 200)}`).toEqual(['error']);
  expect(Object.keys(a.json.error).sort(), where).toEqual(['code', 'details', 'message']);
}
