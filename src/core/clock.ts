/**
 * Time, as a port: the service, the edge feed, leases, expiry, sessions, grants and links read it
 * here, so tests can set it (test/kit/clock.ts) instead of sleeping.
 */
export interface TimerHandle {
  unref?(): unknown;
}

export interface Clock {
  /** Wall time, ms since the epoch: expiry, signatures, records. */
  now(): number;
  /** Monotonic ms for durations (leases, deadlines); never goes back. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
  setInterval(fn: () => void, ms: number): TimerHandle;
  clearInterval(handle: TimerHandle | undefined): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout | undefined),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout | undefined),
};
