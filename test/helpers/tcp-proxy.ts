/**
 * A TCP proxy in the test process, to cut a connection off silently: `freeze()` stops
 * forwarding in both directions without closing anything (the sockets are paused, so the
 * kernel's buffers fill and then the peers' writes stall, as when packets are dropped);
 * connections opened during the freeze are accepted and held, unforwarded. `thaw()`
 * forwards everything held, in order, and carries on. `cut()` resets every open connection.
 * `intercept(pattern)` holds the next connection whose first bytes match until the test
 * resets it, to fail one chosen request (say, one edge's fetch of one file) at a chosen moment.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  /** Forwarding work put off while frozen, run in order at the thaw. */
  private deferred: Array<() => void> = [];
  private frozenNow = false;
  /** Connections accepted so far. */
  connections = 0;
  private interceptions: Array<{ pattern: RegExp; held: (client: Socket) => void }> = [];

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
      this.forward(upstream, () => client);
    });
    let first = true;
    let held = false;
    // The first bytes decide whether an interception holds this connection.
    const pass = (d: Buffer): boolean => {
      if (first) {
        first = false;
        const at = this.interceptions.findIndex((i) => i.pattern.test(d.toString('latin1')));
        if (at >= 0) {
          held = true;
          client.pause();
          this.interceptions.splice(at, 1)[0]!.held(client);
        }
      }
      return !held;
    };
    this.forward(client, () => upstream, pass);
    if (!this.frozenNow) client.resume();
  }

  /**
   * Holds the next connection whose first bytes match `pattern`, forwarding nothing of it.
   * `held` resolves once one is; `reset()` then resets it.
   */
  intercept(pattern: RegExp): { held: Promise<void>; reset(): void } {
    let socket: Socket | null = null;
    const held = new Promise<void>((resolve) => {
      this.interceptions.push({ pattern, held: (client) => { socket = client; resolve(); } });
    });
    return { held, reset: () => (socket as Socket | null)?.resetAndDestroy() };
  }

  /**
   * Forwards what `from` sends. An orderly end is passed on as an end, so what is still
   * buffered for the other side reaches it first; a close without one, as a reset.
   */
  private forward(from: Socket, to: () => Socket | null, pass: (d: Buffer) => boolean = () => true): void {
    let ended = false;
    from.on('data', (d: Buffer) => pass(d) && this.act(() => {
      const peer = to();
      if (peer && !peer.destroyed) peer.write(d);
    }));
    from.once('end', () => {
      ended = true;
      this.act(() => to()?.end());
    });
    from.once('close', () => this.act(() => {
      const peer = to();
      if (!ended && peer && !peer.destroyed) peer.resetAndDestroy();
    }));
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
