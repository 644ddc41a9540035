import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { AccessLog, accessLine, isoTime } from '../../src/edge/access-log.js';
import type { Answered } from '../../src/edge/metrics.js';

const base: Answered = {
  time: Date.UTC(2026, 10, 26, 11, 30, 5, 7), method: 'GET', fileId: 'f_abc123', status: 200, bytes: 4096, complete: true,
  durationMs: 0.123, cache: 'HIT', client: '127.0.0.1', range: null,
};

/** The line the log must write: exactly what JSON.stringify makes of the fields. */
function reference(a: Answered): string {
  return JSON.stringify({
    time: new Date(a.time).toISOString(), method: a.method, file_id: a.fileId, status: a.status, bytes: a.bytes, complete: a.complete,
    duration_ms: a.durationMs, cache: a.cache, client: a.client, range: a.range,
  });
}

describe('access log lines', () => {
  it('prints the time as toISOString does, across milliseconds, seconds and years', () => {
    const times = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, Date.UTC(1999, 11, 31, 23, 59, 59, 999), Date.UTC(2000, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      Date.UTC(10000, 0, 1, 0, 0, 0, 5), -1, -1001, Date.UTC(-5, 0, 1), base.time, base.time + 1, base.time - 1];
    for (let i = 0; i < 2000; i++) times.push(Math.floor(Math.random() * 4e12));
    for (const t of times) expect(isoTime(t)).toBe(new Date(t).toISOString());
  });

  it('is the same text as JSON.stringify, for hostile file ids, ranges and methods too', () => {
    const hostile = ['', '"', '\\', 'a"b\\c', '\n', '\r\n{"forged":true}', '\u0000\u001f\u007f', 'é', '文件', '\ud800', '\udc00x', '\u2028\u2029', '</script>', 'bytes=0-1,"x"'];
    const cases: Answered[] = [base, { ...base, fileId: null, cache: null, range: 'bytes=0-99', status: 404, bytes: 0, complete: false, durationMs: 12 }];
    for (const h of hostile) {
      cases.push({ ...base, fileId: h }, { ...base, range: h }, { ...base, method: h }, { ...base, client: h });
    }
    for (const a of cases) {
      const line = accessLine(a);
      expect(line).toBe(reference(a));
      expect(line).not.toContain('\n');
      expect(JSON.parse(line)).toEqual(JSON.parse(reference(a)));
    }
  });
});

describe('access log writing', () => {
  it('sets no timer while nothing is logged, and writes a batch 200 ms after its first line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'coffer-access-log-'));
    const path = join(dir, 'access.log');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    try {
      const log = AccessLog.open(path);
      // An idle edge: nothing waits to wake it.
      expect(vi.getTimerCount()).toBe(0);
      log.answered(base);
      log.answered({ ...base, status: 404 });
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(199);
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(1);
      expect(vi.getTimerCount()).toBe(0);
      vi.useRealTimers();
      await expect.poll(async () => (await readFile(path, 'utf8').catch(() => '')).split('\n').length).toBe(3);
      await log.close();
      const lines = (await readFile(path, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { status: number });
      expect(lines.map((l) => l.status)).toEqual([200, 404]);
    } finally {
      vi.useRealTimers();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('writes what is left when closed before the batch is due, and leaves no timer behind', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'coffer-access-log-'));
    const path = join(dir, 'access.log');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    try {
      const log = AccessLog.open(path);
      log.answered({ ...base, status: 206 });
      expect(vi.getTimerCount()).toBe(1);
      const closing = log.close();
      expect(vi.getTimerCount()).toBe(0);
      vi.useRealTimers();
      await closing;
      expect(JSON.parse((await readFile(path, 'utf8')).trim())).toMatchObject({ status: 206 });
    } finally {
      vi.useRealTimers();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
