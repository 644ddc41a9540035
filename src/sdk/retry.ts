/** Backoff for calls that may be repeated: exponential, capped, with jitter. */

export interface RetryOptions {
  /** Attempts in all, the first included (default 5). */
  attempts?: number;
  /** Delay before the first retry, doubled each time (default 250 ms). */
  baseDelayMs?: number;
  /** Longest delay between attempts (default 8000 ms). */
  maxDelayMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { attempts: 5, baseDelayMs: 250, maxDelayMs: 8_000 };

/** The delay before retry number `retry` (1-based): full jitter over the doubled base. */
export function backoffDelay(retry: number, opts: Required<RetryOptions>, random: () => number = Math.random): number {
  const ceiling = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** (retry - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
