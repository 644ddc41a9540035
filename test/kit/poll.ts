/**
 * Waiting in tests: `sleep`, and polling a condition on the wall clock. Waits on expiry, leases
 * or revocation belong on a ManualClock (clock.ts) instead; these are for work that runs by itself
 * (another process, a background task, bytes on a socket).
 */
export interface PollOptions {
  /** How long to keep asking (default 5 s). */
  timeoutMs?: number;
  /** Pause between two asks (default 50 ms). */
  intervalMs?: number;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Asks `cond` until it holds or the time is up; whether it held. */
export async function poll(cond: () => boolean | Promise<boolean>, opts: PollOptions = {}): Promise<boolean> {
  const until = Date.now() + (opts.timeoutMs ?? 5000);
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > until) return false;
    await sleep(opts.intervalMs ?? 50);
  }
}

/** Asks `cond` until it holds; throws, naming `what` (made when needed), when the time is up. */
export async function waitFor(cond: () => boolean | Promise<boolean>, opts: PollOptions & { what?: string | (() => string) } = {}): Promise<void> {
  if (await poll(cond, opts)) return;
  const what = typeof opts.what === 'function' ? opts.what() : opts.what;
  throw new Error(what ? `timed out waiting for ${what}` : 'timed out');
}

/** Runs `assertion` until it passes; when the time is up, its last failure is thrown. */
export async function eventually(assertion: () => Promise<void> | void, opts: PollOptions = {}): Promise<void> {
  const until = Date.now() + (opts.timeoutMs ?? 3000);
  for (;;) {
    try {
      await assertion();
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(opts.intervalMs ?? 50);
    }
  }
}
