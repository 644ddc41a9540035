/**
 * A miss the cache cannot take (a file larger than the cache, or no room for another fill
 * now): its bytes go straight from the origin to the client, never through a parent edge,
 * judged again once the origin answers and gated chunk by chunk like every other response.
 */
import type http from 'node:http';
import type { InFlight } from './in-flight.js';
import type { OriginClient } from './origin-client.js';
import type { EdgeMetrics } from './metrics.js';
import type { ByteRange, Judgement } from './delivery.js';
import type { EdgeFile } from './state.js';
import { relay } from './send.js';
import { sendError } from './answer-headers.js';

export interface PassThroughDeps {
  origin: OriginClient;
  token: string;
  judge(e: InFlight): Judgement | Promise<Judgement>;
  /** Answers a refusal; true when it did. */
  refused(res: http.ServerResponse, judged: Judgement): judged is Exclude<Judgement, { file: EdgeFile }>;
  metrics(): EdgeMetrics;
  /** Registers the response and returns the gate its chunks pass. */
  track(e: InFlight): () => boolean | Promise<boolean>;
}

export interface PassThrough {
  (req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, miss: { file: EdgeFile; range: ByteRange | null }, headers: string[]): Promise<'done' | 'changed'>;
  close(): void;
}

export function passThroughFromOrigin(d: PassThroughDeps): PassThrough {
  const agent = d.origin.agent({ keepAlive: true, maxSockets: 16 });
  const fetchBlob = (id: string) => new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = d.origin.get(`/_edge/blob/${id}`, { agent, headers: { authorization: `Bearer ${d.token}` }, timeout: 30_000 }, resolve);
    req.on('timeout', () => req.destroy(new Error('the origin did not send the bytes in time')));
    req.on('error', reject);
  });

  const passThrough = async (req: http.IncomingMessage, res: http.ServerResponse, entry: InFlight, miss: { file: EdgeFile; range: ByteRange | null }, headers: string[]): Promise<'done' | 'changed'> => {
    const { file, range } = miss;
    const upstream = await fetchBlob(file.file_id);
    // The wait for the origin may have outlasted the file's right to be served.
    const judged = await d.judge(entry);
    if (d.refused(res, judged) || judged.file.sha256 !== file.sha256) {
      upstream.destroy();
      return res.headersSent ? 'done' : 'changed';
    }
    if (upstream.statusCode !== 200) {
      upstream.resume();
      sendError(res, 'bad_gateway', 'The origin could not send the file; try again.');
      return 'done';
    }
    const length = range ? range.end - range.start + 1 : file.size;
    d.metrics().body(res, false, length);
    res.writeHead(range ? 206 : 200, [...headers, 'Content-Length', String(length), 'X-Cache', 'MISS',
      ...(range ? ['Content-Range', `bytes ${range.start}-${range.end}/${file.size}`] : [])]);
    if (req.method === 'HEAD' || file.size === 0) {
      upstream.destroy();
      res.end();
      return 'done';
    }
    relay(upstream, res, file.size, range, d.track(entry));
    return 'done';
  };
  return Object.assign(passThrough, { close: () => agent.destroy() });
}
