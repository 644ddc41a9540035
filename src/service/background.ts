/**
 * Work no request waits for (emptying the trash, sweeping expired uploads and sessions,
 * touching keys) runs here, so that its failure is reported and counted instead of becoming
 * an unhandled rejection, which would end the process. Work that can simply run again (the
 * trash is a durable queue) is retried later, with backoff.
 */

/** A few fixed names, safe as a metric label. */
export const BACKGROUND_TASKS = ['trash', 'upload-expiry', 'session-expiry', 'key-touch'] as const;
export type BackgroundTask = (typeof BACKGROUND_TASKS)[number];

export interface BackgroundOptions {
  /** Told of each failed run. */
  onFailure?: (task: BackgroundTask, err: unknown) => void;
  /** The first retry's delay; each further failure in a row doubles it, up to `retryMaxMs`. */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

export interface RunOptions {
  /** Run again later when it fails (default); false for best-effort work. */
  retry?: boolean;
}

export class Background {
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  /** Failures in a row, by task: what the next retry's delay grows with. */
  private readonly streak = new Map<BackgroundTask, number>();
  private readonly retries = new Map<BackgroundTask, NodeJS.Timeout>();
  private readonly running = new Set<Promise<boolean>>();
  private closed = false;

  constructor(private readonly opts: BackgroundOptions = {}) {
    this.retryBaseMs = opts.retryBaseMs ?? 1000;
    this.retryMaxMs = opts.retryMaxMs ?? 60_000;
  }

  /**
   * Runs `work`; resolves true once it succeeded, false when it failed. Never rejects, so
   * callers may leave it unawaited. Runs of one task do the same work, so a retry pending
   * for it runs the latest failed one, and a success makes it moot.
   */
  run(task: BackgroundTask, work: () => Promise<unknown>, opts: RunOptions = {}): Promise<boolean> {
    // Started at once; a synchronous throw fails the run like a rejection.
    const done = new Promise<unknown>((resolve) => resolve(work())).then(
      () => {
        this.succeeded(task);
        return true;
      },
      (err: unknown) => {
        this.failed(task, work, err, opts.retry ?? true);
        return false;
      },
    );
    this.running.add(done);
    void done.then(() => this.running.delete(done));
    return done;
  }

  /** Failures in a row of one task; 0 once it succeeded. */
  failuresInARow(task: BackgroundTask): number {
    return this.streak.get(task) ?? 0;
  }

  /** Cancels pending retries and waits for the runs under way. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.retries.values()) clearTimeout(timer);
    this.retries.clear();
    while (this.running.size > 0) await Promise.all(this.running);
  }

  private succeeded(task: BackgroundTask): void {
    this.streak.delete(task);
    const timer = this.retries.get(task);
    if (timer) clearTimeout(timer);
    this.retries.delete(task);
  }

  private failed(task: BackgroundTask, work: () => Promise<unknown>, err: unknown, retry: boolean): void {
    const inARow = (this.streak.get(task) ?? 0) + 1;
    this.streak.set(task, inARow);
    try {
      this.opts.onFailure?.(task, err);
    } catch {
      // A broken reporter must not turn into the rejection this class exists to prevent.
    }
    if (!retry || this.closed) return;
    const previous = this.retries.get(task);
    if (previous) clearTimeout(previous);
    const delay = Math.min(this.retryMaxMs, this.retryBaseMs * 2 ** (inARow - 1));
    const timer = setTimeout(() => {
      this.retries.delete(task);
      void this.run(task, work);
    }, delay);
    // A retry never keeps a process alive that has nothing else to do.
    timer.unref();
    this.retries.set(task, timer);
  }
}
