/**
 * The command line's progress bars: no time estimate before a second and a MiB have gone
 * (the first parts' rate is mostly connection set-up), and every bar in one column however
 * long each label is.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ETA_AFTER_BYTES, ETA_AFTER_MS, Progress, etaText } from '../../src/cli/progress.js';

const MiB = 1024 * 1024;

function terminal() {
  let text = '';
  return { isTTY: true, columns: 120, write: (s: string) => void (text += s), text: () => text };
}

/** The bar lines of the last redraw, without escape sequences. */
const lastFrame = (text: string): string[] => {
  const frames = text.split('\x1b[0J');
  return frames.at(-1)!.split('\n').filter((l) => l.includes('%'));
};

afterEach(() => {
  vi.useRealTimers();
});

describe('etaText', () => {
  it('says nothing before a second, nor before a MiB, then estimates from this run\'s rate', () => {
    expect(ETA_AFTER_MS).toBe(1000);
    expect(ETA_AFTER_BYTES).toBe(MiB);
    expect(etaText({ bytes: 100 * MiB, ms: 999 }, 10 * MiB)).toBe('');
    expect(etaText({ bytes: MiB - 1, ms: 60_000 }, 10 * MiB)).toBe('');
    expect(etaText({ bytes: 2 * MiB, ms: 1000 }, 10 * MiB)).toBe('5s left');
    expect(etaText({ bytes: 2 * MiB, ms: 1000 }, 0)).toBe('');
  });
});

describe('Progress on a terminal', () => {
  it('shows no estimate in the first second, even after a fast first part, and one afterwards', () => {
    vi.useFakeTimers();
    let now = 0;
    const out = terminal();
    const p = new Progress(out, { live: true, verb: 'uploaded', now: () => now });
    const t = p.start('big.iso', 1024 * MiB);
    now = 50;
    t.update(5 * MiB);
    vi.advanceTimersByTime(150);
    expect(lastFrame(out.text())[0]).not.toMatch(/left/);
    now = 2000;
    t.update(40 * MiB);
    vi.advanceTimersByTime(150);
    expect(lastFrame(out.text())[0]).toMatch(/ 49s left$/);
    p.end();
  });

  it('bytes a resumed upload already had count for the bar, not for the estimate', () => {
    vi.useFakeTimers();
    let now = 0;
    const out = terminal();
    const p = new Progress(out, { live: true, verb: 'uploaded', now: () => now });
    const t = p.start('resumed.bin', 100 * MiB);
    t.update(90 * MiB, { initial: true });
    now = 1500;
    t.update(90 * MiB + 512 * 1024);
    vi.advanceTimersByTime(150);
    expect(lastFrame(out.text())[0]).toMatch(/ 90%/);
    expect(lastFrame(out.text())[0]).not.toMatch(/left/);
    p.end();
  });

  it('draws every bar in one column: short and long labels, the Total line, with and without an estimate', () => {
    vi.useFakeTimers();
    let now = 0;
    const out = terminal();
    const p = new Progress(out, { live: true, verb: 'uploaded', files: 3, now: () => now });
    for (const size of [10 * MiB, 200 * MiB, 3]) p.expect(size);
    const a = p.start('a', 10 * MiB);
    const b = p.start('photos/2026/summer/a-rather-long-file-name.jpg', 200 * MiB);
    const c = p.start('c.txt', 3);
    now = 3000;
    a.update(9 * MiB);
    b.update(2 * MiB);
    c.update(1);
    vi.advanceTimersByTime(150);
    const lines = lastFrame(out.text());
    expect(lines).toHaveLength(4);
    const columns = lines.map((l) => l.search(/[█░]/));
    expect(new Set(columns).size).toBe(1);
    expect(lines.map((l) => l.indexOf('%'))).toEqual(lines.map(() => columns[0]! + 24));
    expect(lines[0]).toMatch(/left$/);
    expect(lines[2]).not.toMatch(/left/);
    p.end();
  });
});
