/**
 * The edge's log loads pino at its first line (src/edge/lazy-log.ts): lines logged while it
 * loads come out in order, at their level, each with the time it was logged; lines below the
 * level never load it.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { lazyLog } from '../../src/edge/lazy-log.js';
import { waitFor } from '../kit/index.js';

function sink() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { lines, stream };
}

describe('the edge log', () => {
  it('writes the lines logged while pino loads, in order, with the time each was logged', async () => {
    const { lines, stream } = sink();
    const log = lazyLog({ level: 'warn', base: { role: 'edge' } }, stream);
    const before = Date.now();
    log.warn({ file_id: 'a' }, 'first');
    log.info('below the level');
    log.error({ err: new Error('boom') }, 'second');
    const after = Date.now();
    await waitFor(() => lines.length === 2, { what: 'two lines' });
    expect(lines.map((l) => [l.level, l.msg, l.role])).toEqual([[40, 'first', 'edge'], [50, 'second', 'edge']]);
    expect(lines[0]!.file_id).toBe('a');
    expect((lines[1]!.err as { message: string }).message).toBe('boom');
    for (const l of lines) {
      expect(l.time).toBeGreaterThanOrEqual(before);
      expect(l.time).toBeLessThanOrEqual(after);
    }
    // Once loaded, a line is written at once.
    log.warn('third');
    expect(lines.at(-1)!.msg).toBe('third');
  });

  it('writes nothing, and loads nothing, for lines below its level', async () => {
    const { lines, stream } = sink();
    const log = lazyLog({ level: 'error' }, stream);
    log.warn('dropped');
    log.debug('dropped too');
    await new Promise((r) => setTimeout(r, 50));
    expect(lines).toEqual([]);
  });
});
