/**
 * The background runner (src/service/background.ts): a failed run is reported and retried later
 * with a growing delay, a success stops the retries, and no rejection ever escapes it. Also the
 * unhandled-rejection watch (src/metrics/unhandled.ts) every origin and edge counts through.
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Background, type BackgroundTask } from '../../src/service/background.js';
import { watchUnhandledRejections } from '../../src/metrics/unhandled.js';
import { sleep, waitFor } from '../kit/index.js';

describe('Background', () => {
  const escaped: unknown[] = [];
  const onRejection = (reason: unknown) => escaped.push(reason);
  let failures: Array<{ task: BackgroundTask; err: unknown }>;
  let runner: Background;
  beforeEach(() => {
    escaped.length = 0;
    failures = [];
    process.on('unhandledRejection', onRejection);
    runner = new Background({ onFailure: (task, err) => failures.push({ task, err }), retryBaseMs: 20, retryMaxMs: 80 });
  });
  afterEach(async () => {
    await runner.close();
    // Rejections are told after a turn of the event loop.
    await sleep(20);
    process.off('unhandledRejection', onRejection);
    expect(escaped).toEqual([]);
  });

  it('reports a failed run, retries it later with a growing delay, and stops once it succeeds', async () => {
    const attempts: number[] = [];
    let healthy = false;
    const work = async () => {
      attempts.push(Date.now());
      if (!healthy) throw new Error('the store is down');
    };
    expect(await runner.run('trash', work)).toBe(false);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.task).toBe('trash');
    expect((failures[0]!.err as Error).message).toBe('the store is down');
    await waitFor(() => attempts.length >= 4, { timeoutMs: 2000, intervalMs: 5 });
    expect(runner.failuresInARow('trash')).toBeGreaterThanOrEqual(3);
    // 20, 40, then 80 ms (the most): timers never fire early, allowing a millisecond of rounding.
    const gaps = attempts.slice(1, 4).map((t, i) => t - attempts[i]!);
    expect(gaps[0]!).toBeGreaterThanOrEqual(19);
    expect(gaps[1]!).toBeGreaterThanOrEqual(39);
    expect(gaps[2]!).toBeGreaterThanOrEqual(79);
    healthy = true;
    await waitFor(() => runner.failuresInARow('trash') === 0, { timeoutMs: 3000, intervalMs: 5 });
    const settled = attempts.length;
    await sleep(200);
    expect(attempts).toHaveLength(settled);
  });

  it('never rejects: not for a rejection, a synchronous throw, nor a reporter that throws', async () => {
    const broken = new Background({ onFailure: () => { throw new Error('the logger is gone'); } });
    try {
      expect(await broken.run('key-touch', () => Promise.reject(new Error('no')), { retry: false })).toBe(false);
      expect(await broken.run('key-touch', () => { throw new Error('at once'); }, { retry: false })).toBe(false);
      // Left unawaited, as the service leaves its work.
      void broken.run('key-touch', async () => { throw new Error('unawaited'); }, { retry: false });
    } finally {
      await broken.close();
    }
  });

  it('does not retry best-effort work, nor after it is closed', async () => {
    let calls = 0;
    await runner.run('key-touch', async () => { calls++; throw new Error('no'); }, { retry: false });
    await runner.run('trash', async () => { calls++; throw new Error('no'); });
    await runner.close();
    await sleep(100);
    expect(calls).toBe(2);
    expect(failures.map((f) => f.task)).toEqual(['key-touch', 'trash']);
  });

  it('closing waits for the runs under way', async () => {
    let finished = false;
    void runner.run('trash', async () => { await sleep(30); finished = true; });
    await runner.close();
    expect(finished).toBe(true);
  });
});

describe('watchUnhandledRejections', () => {
  it('tells each watcher until it stops watching', () => {
    const proc = new EventEmitter();
    const a: unknown[] = [];
    const b: unknown[] = [];
    const stopA = watchUnhandledRejections((r) => a.push(r), proc);
    const stopB = watchUnhandledRejections((r) => { b.push(r); throw new Error('a broken watcher'); }, proc);
    proc.emit('unhandledRejection', 'first', Promise.resolve());
    stopB();
    proc.emit('unhandledRejection', 'second', Promise.resolve());
    stopA();
    expect(proc.listenerCount('unhandledRejection')).toBe(0);
    expect(a).toEqual(['first', 'second']);
    expect(b).toEqual(['first']);
  });
});
