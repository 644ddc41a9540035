/**
 * A TCP proxy in the test process, to cut a connection off silently: `freeze()` stops
 * forwarding in both directions without closing anything (the sockets are paused, so the
 * kernel's buffers fill and then the peers' writes stall, as when packets are dropped);
 * connections opened during the freeze are accepted and held, unforwarded. `thaw()`
 * forwards everything held, in order, and carries on. `cut()` resets every open connection.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  /** Forwarding work put off while frozen, run in order at the thaw. */
  private deferred: Array<() => void> = [];
  private frozenNow = false;
  /** Connections accepted so far. */
  connections = 0;

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    let proxy: TcpProxy | null = null;
    const server = createServer({ pauseOnConnect: true }, (client) => proxy!.accept(client, targetHost, targetPort));
    await new Promise<void>((r, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => r());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    proxy = new TcpProxy(server, address.port);
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get frozen(): boolean {
    return this.frozenNow;
  }

  /** Runs `fn` now, or at the thaw when frozen. */
  private act(fn: () => void): void {
    if (this.frozenNow) this.deferred.push(fn);
    else fn();
  }

  private track(s: Socket): void {
    this.sockets.add(s);
    s.on('error', () => undefined);
    s.once('close', () => this.sockets.delete(s));
    if (this.frozenNow) s.pause();
  }

  private accept(client: Socket, host: string, port: number): void {
    this.connections++;
    this.track(client);
    let upstream: Socket | null = null;
    this.act(() => {
      if (client.destroyed) return;
      upstream = connect(port, host);
      this.track(upstream);
      upstream.on('data', (d: Buffer) => this.act(() => { if (!client.destroyed) client.write(d); }));
      upstream.once('end', () => this.act(() => client.end()));
      upstream.once('close', () => this.act(() => client.destroy()));
    });
    client.on('data', (d: Buffer) => this.act(() => { if (upstream && !upstream.destroyed) upstream.write(d); }));
    client.once('end', () => this.act(() => upstream?.end()));
    client.once('close', () => this.act(() => upstream?.destroy()));
    if (!this.frozenNow) client.resume();
  }

  /** Closes every connection open now, abruptly (both ends see it reset); new ones are accepted as before. */
  cut(): void {
    for (const s of this.sockets) s.resetAndDestroy();
  }

  /** Stops forwarding, both ways, on every connection, without closing any. */
  freeze(): void {
    this.frozenNow = true;
    for (const s of this.sockets) s.pause();
  }

  /** Forwards what was held and resumes. */
  thaw(): void {
    this.frozenNow = false;
    const work = this.deferred;
    this.deferred = [];
    for (const fn of work) fn();
    for (const s of this.sockets) s.resume();
  }

  async close(): Promise<void> {
    this.deferred = [];
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
