/**
 * A Coffer server from before raw parts (contract §9), made of a real origin: a front that
 * answers a part sent as `application/octet-stream` the way such a server did (415
 * unsupported_media_type) and passes every other request on to the origin.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OldServer {
  url: string;
  /** Raw parts refused with 415, and JSON parts passed on, in order. */
  refused: number[];
  forwarded: number[];
  close(): Promise<void>;
}

const PART_PATH = '/collections/upload/file-progress';

export async function startOldServer(target: string): Promise<OldServer> {
  const refused: number[] = [];
  const forwarded: number[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (/^application\/octet-stream/i.test(req.headers['content-type'] ?? '')) {
      refused.push(Number(url.searchParams.get('partNumber')));
      // As the old server did: answered at once, the body read only to be thrown away.
      req.resume();
      res.writeHead(415, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ error: { code: 'unsupported_media_type', message: 'Send the body as JSON with "Content-Type: application/json".', details: {} } }));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (url.pathname === PART_PATH) forwarded.push(Number(/"partNumber":(\d+)/.exec(body.subarray(0, 4096).toString())?.[1]));
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'content-type', 'cookie', 'x-csrf-token']) {
        const v = req.headers[name];
        if (typeof v === 'string') headers[name] = v;
      }
      fetch(target + (req.url ?? '/'), { method: req.method!, headers, ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body }) })
        .then(async (upstream) => {
          const answer = Buffer.from(await upstream.arrayBuffer());
          res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
          res.end(answer);
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    refused,
    forwarded,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
