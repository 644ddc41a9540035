/**
 * An edge's two streams on a test origin, played by hand: its feed (`GET /_edge/feed`), gathered
 * as it arrives, and its acknowledgements (`POST /_edge/acks`), written line by line.
 */
import http from 'node:http';
import { expect } from 'vitest';
import type { TestOrigin } from './origin.js';

export interface FeedReader {
  /** Everything the feed sent so far. */
  text(): string;
  /** Its `event: lease` answers so far, parsed. */
  leases(): Array<Record<string, unknown>>;
  close(): void;
}

export function openFeed(o: TestOrigin, edge: string): Promise<FeedReader> {
  const token = o.origin.credentials.edgeTokens[0]!;
  return new Promise((resolve, reject) => {
    let text = '';
    const req = http.get(`${o.url}/_edge/feed?after=0&edge=${edge}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      expect(res.statusCode).toBe(200);
      res.setEncoding('utf8');
      res.on('data', (t: string) => (text += t));
      resolve({
        text: () => text,
        leases: () => text.split('\n\n').filter((b) => b.startsWith('event: lease')).map((b) => JSON.parse(b.split('data: ')[1]!) as Record<string, unknown>),
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

export interface AckWriter {
  /** The status the origin answered the stream with. */
  status: number;
  /** What the origin wrote on the stream's own answer. */
  body(): string;
  write(chunk: string | Buffer): void;
  closed(): boolean;
  end(): void;
  destroy(): void;
}

/** Opens an acknowledgement stream (with the edge token, chunked, as JSON lines unless `headers` say otherwise) on a connection of its own. */
export function openAcks(o: TestOrigin, edge: string, headers: Record<string, string> = {}, path = `/_edge/acks?edge=${edge}`): Promise<AckWriter> {
  const token = o.origin.credentials.edgeTokens[0]!;
  return new Promise((resolve, reject) => {
    let closed = false;
    let body = '';
    const req = http.request(`${o.url}${path}`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson', 'transfer-encoding': 'chunked', ...headers },
    }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (t: string) => (body += t));
      resolve({ status: res.statusCode!, body: () => body, write: (c) => req.write(c), closed: () => closed, end: () => req.end(), destroy: () => req.destroy() });
    });
    req.on('error', () => {});
    req.on('close', () => (closed = true));
    req.on('error', reject);
    req.flushHeaders();
  });
}
