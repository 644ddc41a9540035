/**
 * Transform slots shared fairly between clients: at most `concurrency` transforms run; the
 * rest wait, and a freed slot goes to the waiting client with the fewest transforms running,
 * among equals the one served least recently (round robin), so a client that asks for many
 * cannot push another's one request behind all of its own. One client may hold at most `perClient` transforms,
 * running or waiting; nothing waits longer than `maxWaitMs`; the whole line is bounded.
 */
import { performance } from 'node:perf_hooks';

/** Why a transform was not given a slot. */
export type Refusal = 'client' | 'full' | 'waited';

export class AdmissionError extends Error {
  constructor(readonly reason: Refusal, readonly retryAfter: number) {
    super(`transform refused (${reason})`);
  }
}

export interface LimiterOptions {
  concurrency: number;
  /** Transforms allowed to wait, all clients together. */
  maxQueued: number;
  /** Transforms one client may have running or waiting. */
  perClient: number;
  /** Longest wait for a slot. */
  maxWaitMs: number;
}

interface Waiter {
  client: string;
  resolve(): void;
  timer: NodeJS.Timeout;
}

/** The first guess at a transform's duration, before any has been measured. */
const FIRST_GUESS_MS = 1000;
const MAX_RETRY_AFTER = 60;

export class Limiter {
  private running = 0;
  private waitingCount = 0;
  private readonly runningBy = new Map<string, number>();
  /** Each waiting client's line, in the order the clients began to wait. */
  private readonly lines = new Map<string, Waiter[]>();
  /** When each client holding transforms last got a slot, as a count of slots given. */
  private readonly servedAt = new Map<string, number>();
  private served = 0;
  /** A moving average of transform durations: what Retry-After is estimated from. */
  private averageMs = FIRST_GUESS_MS;

  constructor(readonly options: LimiterOptions, private readonly now: () => number = () => performance.now()) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waitingCount;
  }

  /** The client the next free slot goes to (tests, diagnostics). */
  get nextClient(): string | undefined {
    return this.pick()?.[0];
  }

  /** Transforms `client` has running or waiting. */
  held(client: string): number {
    return (this.runningBy.get(client) ?? 0) + (this.lines.get(client)?.length ?? 0);
  }

  /** Why a transform for `client` would be refused now; null when it would be taken. */
  refusal(client: string): Refusal | null {
    if (this.held(client) >= this.options.perClient) return 'client';
    if (this.running >= this.options.concurrency && this.waitingCount >= this.options.maxQueued) return 'full';
    return null;
  }

  /** Seconds after which a slot is likely free: the line ahead drained at the measured pace. */
  retryAfter(): number {
    const rounds = this.waitingCount / this.options.concurrency + 1;
    return Math.min(MAX_RETRY_AFTER, Math.max(1, Math.ceil((this.averageMs * rounds) / 1000)));
  }

  /** Runs `task` in a slot; rejects with an AdmissionError when refused or kept waiting too long. */
  async run<T>(client: string, task: () => Promise<T>): Promise<T> {
    const refused = this.refusal(client);
    if (refused) throw new AdmissionError(refused, this.retryAfter());
    await this.turn(client);
    const started = this.now();
    try {
      return await task();
    } finally {
      this.averageMs = 0.8 * this.averageMs + 0.2 * (this.now() - started);
      const left = this.runningBy.get(client)! - 1;
      if (left === 0) this.runningBy.delete(client);
      else this.runningBy.set(client, left);
      this.pass();
      if (this.held(client) === 0) this.servedAt.delete(client);
    }
  }

  /** Resolves once a slot is this transform's. */
  private turn(client: string): Promise<void> {
    if (this.running < this.options.concurrency) {
      this.running++;
      this.startedBy(client);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        client,
        resolve,
        timer: setTimeout(() => {
          this.leave(waiter);
          reject(new AdmissionError('waited', this.retryAfter()));
        }, this.options.maxWaitMs),
      };
      waiter.timer.unref();
      const line = this.lines.get(client);
      if (line) line.push(waiter);
      else this.lines.set(client, [waiter]);
      this.waitingCount++;
    });
  }

  /** The slot of a finished transform passes straight to the next waiter: nobody slips in between. */
  private pass(): void {
    const next = this.pick();
    if (!next) {
      this.running--;
      return;
    }
    const [client, line] = next;
    const waiter = line.shift()!;
    this.waitingCount--;
    if (line.length === 0) this.lines.delete(client);
    clearTimeout(waiter.timer);
    this.startedBy(client);
    waiter.resolve();
  }

  /** Counted as running from the moment the slot is given, before its task resumes. */
  private startedBy(client: string): void {
    this.runningBy.set(client, (this.runningBy.get(client) ?? 0) + 1);
    this.servedAt.set(client, ++this.served);
  }

  /**
   * The waiting client with the fewest transforms running; among equals the one served least
   * recently, and among those never served the one that began to wait first.
   */
  private pick(): [string, Waiter[]] | undefined {
    let best: [string, Waiter[]] | undefined;
    let fewest = Infinity;
    let longest = Infinity;
    for (const entry of this.lines) {
      const running = this.runningBy.get(entry[0]) ?? 0;
      const servedAt = this.servedAt.get(entry[0]) ?? 0;
      if (running < fewest || (running === fewest && servedAt < longest)) {
        best = entry;
        fewest = running;
        longest = servedAt;
      }
    }
    return best;
  }

  private leave(waiter: Waiter): void {
    const line = this.lines.get(waiter.client);
    const at = line?.indexOf(waiter) ?? -1;
    if (!line || at < 0) return;
    line.splice(at, 1);
    this.waitingCount--;
    if (line.length === 0) this.lines.delete(waiter.client);
    if (this.held(waiter.client) === 0) this.servedAt.delete(waiter.client);
  }
}
