/** The shared keyed queue (src/core/coalesce.ts): one at a time per key, keys side by side. */
import { describe, expect, it } from 'vitest';
import { KeyedQueue } from '../../src/core/coalesce.js';

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

describe('KeyedQueue', () => {
  it('runs work for one key in order, one at a time, and other keys alongside', async () => {
    const q = new KeyedQueue<string>();
    const log: string[] = [];
    let running = 0;
    let most = 0;
    const job = (name: string) => async () => {
      running++;
      most = Math.max(most, running);
      log.push(`start ${name}`);
      await tick();
      log.push(`end ${name}`);
      running--;
      return name;
    };
    const a = [q.run('a', job('a1')), q.run('a', job('a2')), q.run('a', job('a3'))];
    const b = q.run('b', job('b1'));
    expect(q.has('a') && q.has('b')).toBe(true);
    expect(await Promise.all([...a, b])).toEqual(['a1', 'a2', 'a3', 'b1']);
    const onlyA = log.filter((l) => l.endsWith('a1') || l.endsWith('a2') || l.endsWith('a3'));
    expect(onlyA).toEqual(['start a1', 'end a1', 'start a2', 'end a2', 'start a3', 'end a3']);
    // b ran while a did.
    expect(most).toBe(2);
  });

  it('goes on after a failure, which reaches only its own caller', async () => {
    const q = new KeyedQueue<number>();
    const failed = q.run(1, async () => {
      throw new Error('boom');
    });
    const next = q.run(1, async () => 'after');
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('after');
  });

  it('forgets a key once its work has ended, drains everything and tells when it is empty', async () => {
    let emptied = 0;
    const q = new KeyedQueue<string>(() => emptied++);
    void q.run('x', tick);
    void q.run('y', tick);
    expect(q.keys().sort()).toEqual(['x', 'y']);
    await q.drain();
    expect(q.size).toBe(0);
    expect(q.has('x')).toBe(false);
    expect(emptied).toBe(1);
  });
});
