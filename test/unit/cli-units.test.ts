/** Sizes and durations as the access commands read them (src/cli/units.ts). */
import { describe, expect, test } from 'vitest';
import { parseDuration, parseSize, untilText } from '../../src/cli/units.js';

describe('parseSize', () => {
  test('bytes, decimal units and binary units, in any letter case, with or without a space', () => {
    const cases: Array<[string, number]> = [
      ['0', 0], ['1048576', 1_048_576], ['10B', 10], ['1kb', 1000], ['10MB', 10_000_000], ['10 MB', 10_000_000], ['2GB', 2e9], ['1TB', 1e12],
      ['1KiB', 1024], ['5MiB', 5 * 1024 ** 2], ['5mib', 5 * 1024 ** 2], ['1.5MB', 1_500_000], ['1.5KiB', 1536], ['2GiB', 2 * 1024 ** 3], [' 3MiB ', 3 * 1024 ** 2],
    ];
    for (const [text, bytes] of cases) expect(parseSize(text), text).toBe(bytes);
  });

  test('anything else, and fractions of a byte, are refused', () => {
    for (const text of ['', 'MB', '10XB', '10M', '-1', '1e6', '0.1KiB', '1.5', '10 M B', '5MiBs', '9'.repeat(30)]) expect(parseSize(text), text).toBeNull();
  });
});

describe('parseDuration', () => {
  test('seconds alone or with s, m, h, d', () => {
    const cases: Array<[string, number]> = [['3600', 3600], ['90s', 90], ['15m', 900], ['12h', 43_200], ['7d', 604_800], ['30D', 2_592_000], ['0', 0]];
    for (const [text, seconds] of cases) expect(parseDuration(text), text).toBe(seconds);
  });

  test('anything else is refused', () => {
    for (const text of ['', 'soon', '1.5h', '-5', '1w', '1h30m', 'h']) expect(parseDuration(text), text).toBeNull();
  });
});

describe('untilText', () => {
  test('how far ahead a time is, roughly', () => {
    const now = Date.parse('2026-01-01T00:00:00.000Z');
    const at = (s: number) => new Date(now + s * 1000).toISOString();
    expect(untilText(at(-1), now)).toBe('expired');
    expect(untilText(at(45), now)).toBe('in 45s');
    expect(untilText(at(900), now)).toBe('in 15m');
    expect(untilText(at(3600), now)).toBe('in 60m');
    expect(untilText(at(86_400), now)).toBe('in 24h');
    expect(untilText(at(7 * 86_400 + 3 * 3600), now)).toBe('in 7d 3h');
    expect(untilText('not a time', now)).toBe('');
  });
});
