/**
 * A TCP proxy in the test process, to cut a connection off silently: `freeze()` stops
 * forwarding in both directions without closing anything (the sockets are paused, so the
 * kernel's buffers fill and then the peers' writes stall, as when packets are dropped);
 * connections opened during the freeze are accepted and held, unforwarded. `thaw()`
 * forwards everything held, in order, and carries on. `cut()` resets every open connection.
 * `intercept(pattern)` holds the next connection whose first bytes match until the test
 * resets it, to fail one chosen request (say, one edge's fetch of one file) at a chosen moment.
 * `cutAt(n)` and `freezeAt(n)` do the same as `cut()` and `freeze()` the moment n bytes in all
 * have gone to the target, and not one more: a test that must break a body in its middle
 * counts what the server can have been sent, not what the client says it wrote.
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
  /** Bytes forwarded to the target so far, over every connection. */
  sentToTarget = 0;
  /** What `cutAt` and `freezeAt` asked for, soonest first. */
  private marks: Array<{ at: number; act: () => void }> = [];

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
    this.forward(client, () => upstream, pass, (peer, d) => this.toTarget(peer, d));
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
  private forward(
    from: Socket, to: () => Socket | null, pass: (d: Buffer) => boolean = () => true,
    write: (peer: Socket, d: Buffer) => void = (peer, d) => void peer.write(d),
  ): void {
    let ended = false;
    from.on('data', (d: Buffer) => pass(d) && this.act(() => {
      const peer = to();
      if (peer && !peer.destroyed) write(peer, d);
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

  /**
   * Writes a client's bytes to the target. A mark inside them splits them there: its action
   * runs once exactly its count has gone, and the rest goes as any later bytes would (never,
   * after a cut; at the thaw, after a freeze).
   */
  private toTarget(peer: Socket, d: Buffer): void {
    const mark = this.marks[0];
    if (!mark || this.sentToTarget + d.length < mark.at) {
      this.sentToTarget += d.length;
      peer.write(d);
      return;
    }
    const head = Math.max(0, mark.at - this.sentToTarget);
    if (head > 0) peer.write(d.subarray(0, head));
    this.sentToTarget += head;
    this.marks.shift();
    mark.act();
    const rest = d.subarray(head);
    if (rest.length === 0) return;
    const more = () => { if (!peer.destroyed) this.toTarget(peer, rest); };
    // Ahead of whatever is held already, so the bytes stay in order.
    if (this.frozenNow) this.deferred.unshift(more);
    else more();
  }

  private mark(at: number, act: () => void): Promise<void> {
    return new Promise((resolve) => {
      this.marks.push({ at, act: () => { act(); resolve(); } });
      this.marks.sort((a, b) => a.at - b.at);
    });
  }

  /** Cuts (see `cut`) once `total` bytes in all have been forwarded to the target, and no more; resolves then. */
  cutAt(total: number): Promise<void> {
    return this.mark(total, () => this.cut());
  }

  /** Freezes (see `freeze`) once `total` bytes in all have been forwarded to the target; resolves then. */
  freezeAt(total: number): Promise<void> {
    return this.mark(total, () => this.freeze());
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
    // A freezeAt reached on the way freezes again, keeping the rest.
    while (!this.frozenNow && this.deferred.length > 0) this.deferred.shift()!();
    if (!this.frozenNow) for (const s of this.sockets) s.resume();
  }

  async close(): Promise<void> {
    this.deferred = [];
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
