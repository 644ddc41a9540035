/**
 * A TCP forwarder that keeps what clients send (requests are small here: the feed, acks,
 * blob fetches and usage reports), so a test can count the origin's blob fetches and read
 * the edges' usage reports without touching the origin.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export class RequestTap {
  /** Everything each connection sent, as latin1 text, in the order connections opened. */
  readonly sent: string[] = [];
  private readonly sockets = new Set<Socket>();
  /** Bytes forwarded back to clients so far, over every connection. */
  responded = 0;
  private limit: { at: number; hit: boolean; reached(): void } | null = null;
  private holding: { pattern: RegExp; release: Array<() => void> } | null = null;

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(target: string): Promise<RequestTap> {
    const { hostname, port } = new URL(target);
    let tap!: RequestTap;
    const server = createServer((client) => {
      const at = tap.sent.push('') - 1;
      const upstream = connect(Number(port), hostname);
      for (const s of [client, upstream]) {
        tap.sockets.add(s);
        s.on('error', () => undefined);
        s.once('close', () => tap.sockets.delete(s));
      }
      let first = true;
      let queued: Buffer[] | null = null;
      client.on('data', (d: Buffer) => {
        tap.sent[at] += d.toString('latin1');
        const hold = tap.holding;
        if (first && hold?.pattern.test(d.toString('latin1'))) {
          // Held: nothing of this connection goes on until released.
          const q: Buffer[] = (queued = []);
          hold.release.push(() => {
            queued = null;
            for (const b of q) upstream.write(b);
          });
        }
        first = false;
        if (queued) queued.push(d);
        else upstream.write(d);
      });
      client.once('end', () => upstream.end());
      upstream.on('data', (d: Buffer) => tap.respond(upstream, client, d));
      client.once('close', () => upstream.destroy());
      // An orderly end from the origin is passed on as one, after what is still buffered for the
      // client (kernel buffers may not have taken it yet); a close without one, as a close.
      let upstreamEnded = false;
      upstream.once('end', () => {
        upstreamEnded = true;
        client.end();
      });
      upstream.once('close', () => {
        if (!upstreamEnded) client.destroy();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    tap = new RequestTap(server, typeof address === 'object' && address ? address.port : 0);
    return tap;
  }

  /** Holds every new connection whose first bytes match `pattern` until the returned function is called. */
  holdRequests(pattern: RegExp): () => void {
    const hold = { pattern, release: [] as Array<() => void> };
    this.holding = hold;
    return () => {
      this.holding = null;
      for (const r of hold.release) r();
    };
  }

  /** Stops forwarding answers once `total` bytes in all have gone back to clients; resolves then. */
  holdAnswersAfter(total: number): Promise<void> {
    return new Promise((reached) => {
      this.limit = { at: total, hit: false, reached };
    });
  }

  private respond(upstream: Socket, client: Socket, d: Buffer): void {
    const limit = this.limit;
    if (limit?.hit) return;
    if (limit && this.responded + d.length >= limit.at) {
      const room = limit.at - this.responded;
      client.write(d.subarray(0, room));
      this.responded += room;
      limit.hit = true;
      upstream.pause();
      limit.reached();
      return;
    }
    this.responded += d.length;
    client.write(d);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** How many requests asked for this file's bytes. */
  blobFetches(fileId: string): number {
    const line = `GET /_edge/blob/${fileId}`;
    return this.sent.reduce((n, text) => n + text.split(line).length - 1, 0);
  }

  /** The bodies of every usage report sent so far, parsed. */
  usageReports(): any[] {
    const reports: any[] = [];
    for (const text of this.sent) {
      for (const m of text.matchAll(/POST \/_edge\/usage HTTP\/1\.1\r\n([\s\S]*?)\r\n\r\n/g)) {
        const length = Number(/content-length:\s*(\d+)/i.exec(m[1]!)?.[1] ?? 0);
        const start = m.index! + m[0].length;
        const body = text.slice(start, start + length);
        if (body.length === length) reports.push(JSON.parse(Buffer.from(body, 'latin1').toString('utf8')));
      }
    }
    return reports;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
