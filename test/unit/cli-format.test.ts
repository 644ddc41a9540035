/**
 * How the command line shows things (src/cli/format.ts) and its progress display
 * (src/cli/progress.ts) with a fake standard error, a terminal or not; and how ids that
 * begin with "-" reach the commands (src/cli/client.ts).
 */
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dashIdsAsOperands, registerClientCommands } from '../../src/cli/commands.js';
import { formatBytes, formatDuration, formatRate, formatTime, safeText, shorten, table } from '../../src/cli/format.js';
import { Progress } from '../../src/cli/progress.js';

describe('formatBytes', () => {
  it('shows bytes as they are, and binary units with one decimal from KiB up', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1)).toBe('1 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1.0 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(200_000)).toBe('195.3 KiB');
    expect(formatBytes(1024 * 1024 - 1)).toBe('1024.0 KiB');
    expect(formatBytes(13 * 1024 * 1024)).toBe('13.0 MiB');
    expect(formatBytes(5 * 1024 ** 3)).toBe('5.0 GiB');
    expect(formatBytes(2 * 1024 ** 4)).toBe('2.0 TiB');
    expect(formatBytes(3 * 1024 ** 6)).toBe('3072.0 PiB');
  });

  it('formatRate is bytes per second, rounded', () => {
    expect(formatRate(0)).toBe('0 B/s');
    expect(formatRate(10.4)).toBe('10 B/s');
    expect(formatRate(26 * 1024 * 1024)).toBe('26.0 MiB/s');
  });
});

describe('formatDuration', () => {
  it('seconds, minutes and seconds, hours and minutes', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(4.4)).toBe('4s');
    expect(formatDuration(59.4)).toBe('59s');
    expect(formatDuration(60)).toBe('1m00s');
    expect(formatDuration(125)).toBe('2m05s');
    expect(formatDuration(3599)).toBe('59m59s');
    expect(formatDuration(3600)).toBe('1h00m');
    expect(formatDuration(3720)).toBe('1h02m');
    expect(formatDuration(100 * 3600 + 59)).toBe('100h00m');
  });

  it('an unknown or negative duration is "--"', () => {
    for (const v of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1]) expect(formatDuration(v)).toBe('--');
  });
});

describe('formatTime', () => {
  it('is local time to the minute, and leaves what is not a time alone', () => {
    const iso = '2026-11-21T17:39:44.123Z';
    const d = new Date(iso);
    const p = (n: number) => String(n).padStart(2, '0');
    expect(formatTime(iso)).toBe(`${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`);
    expect(formatTime('not a time')).toBe('not a time');
  });
});

describe('safeText', () => {
  it('leaves ordinary names, accents, CJK and emoji alone', () => {
    for (const s of ['photo.jpg', 'café déjà vu.txt', '日本語の名前.pdf', 'rocket 🚀.png', 'a b\u00a0c']) expect(safeText(s)).toBe(s);
  });

  it('escapes C0 controls, DEL and C1 controls (CSI U+009B could start an escape sequence)', () => {
    expect(safeText('a\x1b[2Jb')).toBe('a\\u001b[2Jb');
    expect(safeText('line\nbreak\r\t')).toBe('line\\u000abreak\\u000d\\u0009');
    expect(safeText('\u0000')).toBe('\\u0000');
    expect(safeText('del\u007f')).toBe('del\\u007f');
    expect(safeText('\u0080x\u009b31mred\u009f')).toBe('\\u0080x\\u009b31mred\\u009f');
  });

  it('escapes bidirectional overrides, embeddings, isolates and marks, which could reorder what is shown', () => {
    // "invoice‮fdp.exe" would show as "invoiceexe.pdf".
    expect(safeText('invoice\u202efdp.exe')).toBe('invoice\\u202efdp.exe');
    for (const c of ['\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069']) {
      expect(safeText(`x${c}y`)).toBe(`x\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}y`);
    }
    // Neighbours of those ranges are ordinary characters.
    expect(safeText('\u200d\u2065\u206a\u00a0')).toBe('\u200d\u2065\u206a\u00a0');
  });
});

describe('shorten', () => {
  it('keeps text that fits', () => {
    expect(shorten('photo.jpg', 9)).toBe('photo.jpg');
    expect(shorten('photo.jpg', 50)).toBe('photo.jpg');
  });

  it('cuts the middle out so the start and the extension show, within the width', () => {
    const s = shorten('a-very-long-file-name-indeed.tar.gz', 16);
    expect([...s]).toHaveLength(16);
    expect(s).toBe('a-very-l….tar.gz');
    expect(s.startsWith('a-very')).toBe(true);
    expect(s.endsWith('.tar.gz')).toBe(true);
    expect(shorten('abcdefghij', 5)).toBe('ab…ij');
    expect(shorten('abcdefghij', 2)).toBe('a…');
    expect(shorten('abcdefghij', 1)).toBe('…');
    expect(shorten('abcdefghij', 0)).toBe('…');
  });

  it('counts characters, not UTF-16 units, and never splits a surrogate pair', () => {
    const s = shorten('🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀.png', 8);
    expect([...s]).toHaveLength(8);
    expect(s).toBe('🚀🚀🚀🚀…png');
    expect(s).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });
});

describe('table', () => {
  it('aligns columns with two spaces and does not pad the last column', () => {
    const out = table([
      ['ID', 'NAME', 'SIZE'],
      ['abc', 'photo.jpg', '13.0 MiB'],
      ['abcdef', 'x/', '-'],
    ]);
    expect(out).toBe([
      'ID      NAME       SIZE',
      'abc     photo.jpg  13.0 MiB',
      'abcdef  x/         -',
    ].join('\n'));
  });

  it('measures width in characters', () => {
    expect(table([['日本', 'a'], ['x', 'b']])).toBe('日本  a\nx   b');
    expect(table([])).toBe('');
    expect(table([['only']])).toBe('only');
  });
});

// ---------------------------------------------------------------- Progress

function fakeStream(isTTY: boolean, columns = 100) {
  const chunks: string[] = [];
  return { isTTY, columns, chunks, write: (s: string) => chunks.push(s), text: () => chunks.join('') };
}

describe('Progress', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('on a terminal: bars, percentages, a Total line for several files, redrawn in place', () => {
    vi.useFakeTimers();
    let now = 0;
    const out = fakeStream(true);
    const p = new Progress(out, { live: true, verb: 'uploaded', files: 2, now: () => now });
    p.expect(1000);
    p.expect(3000);
    const a = p.start('a.bin', 1000);
    const b = p.start('b.bin', 3000);
    now = 1000;
    a.update(500);
    b.update(1500);
    vi.advanceTimersByTime(150);
    const first = out.text();
    // 500 bytes in a second are too few for an estimate (cli-progress.test.ts).
    expect(first).toMatch(/a\.bin +█{10}░{10}  50% +500 B\/s\n/);
    expect(first).not.toMatch(/left/);
    expect(first).toMatch(/b\.bin +█{10}░{10}  50%/);
    expect(first).toMatch(/Total 0\/2, 2\.0 KiB\/3\.9 KiB +█{10}░{10}  50%/);
    expect(first).not.toMatch(/\x1b/);

    a.done('ID1');
    const after = out.text().slice(first.length);
    // The three bar lines are erased, the finished line is printed, the rest redrawn.
    expect(after.startsWith('\x1b[3F\x1b[0Juploaded a.bin (1000 B) ID1\n')).toBe(true);
    expect(after).toMatch(/Total 1\/2, /);
    expect(after).not.toMatch(/a\.bin +█/);

    b.done();
    p.end();
    const all = out.text();
    expect(all).toContain('uploaded b.bin (2.9 KiB)\n');
    expect(all.endsWith('\x1b[0J')).toBe(true);
  });

  it('not on a terminal: plain lines only, a running task at most every plainEveryMs', () => {
    let now = 0;
    const out = fakeStream(false);
    const p = new Progress(out, { live: false, verb: 'downloaded', plainEveryMs: 1000, now: () => now });
    const t = p.start('big.bin', 4 * 1024 * 1024);
    now = 500;
    t.update(1024 * 1024);
    expect(out.text()).toBe('');
    now = 1500;
    t.update(2 * 1024 * 1024);
    now = 1600;
    t.update(3 * 1024 * 1024);
    t.done('to ./big.bin');
    p.end();
    expect(out.text()).toBe('big.bin: 50% (2.0 MiB of 4.0 MiB)\ndownloaded big.bin (4.0 MiB) to ./big.bin\n');
  });

  it('a failed task prints its message; labels are made safe', () => {
    const out = fakeStream(false);
    const p = new Progress(out, { live: false, verb: 'uploaded' });
    p.start('evil\u202etxt.exe', 10).fail('interrupted');
    expect(out.text()).toBe('failed evil\\u202etxt.exe: interrupted\n');
  });
});

// ---------------------------------------------------------------- ids beginning with "-"

describe('dashIdsAsOperands', () => {
  const program = new Command().name('coffer');
  registerClientCommands(program, { stdout: { write: () => true }, stderr: { write: () => true }, env: {} });
  program.command('serve').option('--data-dir <dir>');
  const id = '-s6_feJC3ikD4iHykAo6_w';
  const other = '-AAAAAAAAAAAAAAAAAAAAA';
  const rewrite = (...args: string[]) => dashIdsAsOperands(program, ['node', 'main.js', ...args]).slice(2);

  it('leaves arguments without such an id alone', () => {
    expect(rewrite('rm', '-r', 'abc', '--json')).toEqual(['rm', '-r', 'abc', '--json']);
    expect(rewrite('ls', '--bogus')).toEqual(['ls', '--bogus']);
  });

  it('puts ids that begin with "-" after "--", keeping options, their values and the operands\' order', () => {
    expect(rewrite('rm', id, '--json')).toEqual(['rm', '--json', '--', id]);
    expect(rewrite('rm', '-r', id)).toEqual(['rm', '-r', '--', id]);
    expect(rewrite('mv', id, other, '--url=http://x', '--key', 'k')).toEqual(['mv', '--url=http://x', '--key', 'k', '--', id, other]);
    expect(rewrite('rename', id, 'new name', '--json')).toEqual(['rename', '--json', '--', id, 'new name']);
    expect(rewrite('download', id, '-o', '-')).toEqual(['download', '-o', '-', '--', id]);
    // An option's value stays its value, whatever it looks like.
    expect(rewrite('upload', 'a.txt', '--folder', id)).toEqual(['upload', '--folder', id, '--', 'a.txt']);
    expect(rewrite('link', id, '--', '-x')).toEqual(['link', '--', id, '-x']);
  });

  it('still lets the parser report unknown options, and leaves other commands alone', () => {
    expect(rewrite('rm', '-rf', id)).toEqual(['rm', '-rf', '--', id]);
    expect(rewrite('serve', '--data-dir', id)).toEqual(['serve', '--data-dir', id]);
  });

  it('the parsed command receives the id', async () => {
    const seen: unknown[] = [];
    const p = new Command().name('coffer').exitOverride();
    p.command('rm').argument('<id>').option('-r, --recursive').option('--json').action((got: string, flags: unknown) => void seen.push(got, flags));
    await p.parseAsync(['node', 'main.js', 'rm', '--json', '--', id]);
    expect(seen).toEqual([id, { json: true }]);
  });
});
