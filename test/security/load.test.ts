/**
 * Under load, nothing is lost: the load test's workload (bench/load-core.ts) at a small
 * scale, one origin and three edges as processes, with 0 errors and 0 rule violations;
 * and the rules it judges answers by (bench/load-rules.ts), shown to catch each kind of
 * wrong answer so a clean run means something.
 */
import os from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { releaseWatchdog } from '../../bench/common.js';
import { runLoad } from '../../bench/load-core.js';
import { judge, possibleStates, type Delivery, type FileHistory } from '../../bench/load-rules.js';
import { CLI } from '../helpers/processes.js';

afterAll(() => releaseWatchdog());

const history = (changes: FileHistory['changes'], initial: 'Public' | 'Private' = 'Public'): FileHistory => ({
  fileId: 'f', size: 3, sha256: 'abc', initial, completedAt: 0, changes, unknownFrom: null,
});
const answer = (d: Partial<Delivery>): Delivery => ({
  fileId: 'f', edge: 0, signed: false, start: 10, end: 20, status: 200, errorCode: null, bytes: 3, sha256: 'abc', broken: false, ...d,
});

describe('the load test rules', () => {
  // Public until a switch sent at 100 and answered at 150; deleted by a call sent at 300, answered at 320.
  const h = history([
    { kind: 'visibility', value: 'Private', sent: 100, answered: 150 },
    { kind: 'delete', sent: 300, answered: 320 },
  ]);

  it('knows which states a request may meet', () => {
    expect([...possibleStates(h, 10, 20)]).toEqual(['Public']);
    expect([...possibleStates(h, 120, 130)].sort()).toEqual(['Private', 'Public']);
    expect([...possibleStates(h, 200, 250)]).toEqual(['Private']);
    expect([...possibleStates(h, 310, 311)].sort()).toEqual(['Private', 'deleted']);
    expect([...possibleStates(h, 400, 410)]).toEqual(['deleted']);
  });

  it('allows what may be right', () => {
    expect(judge(h, answer({}))).toEqual({ ok: true });
    expect(judge(h, answer({ start: 140, end: 160 }))).toEqual({ ok: true }); // the switch may not have reached this edge yet
    expect(judge(h, answer({ start: 200, end: 210, status: 403, errorCode: 'signature_required', sha256: null }))).toEqual({ ok: true });
    expect(judge(h, answer({ start: 200, end: 210, signed: true }))).toEqual({ ok: true });
    expect(judge(h, answer({ start: 310, end: 312, signed: true }))).toEqual({ ok: true });
    expect(judge(h, answer({ start: 310, end: 330, status: 404, errorCode: 'not_found', sha256: null, signed: true }))).toEqual({ ok: true });
  });

  it('catches each wrong answer', () => {
    const wrong = (d: Partial<Delivery>) => judge(h, answer(d));
    expect(wrong({ start: 200, end: 210 })).toMatchObject({ ok: false, rule: expect.stringContaining('Private throughout') });
    expect(wrong({ start: 321, end: 330, signed: true })).toMatchObject({ ok: false, rule: expect.stringContaining('after the delete') });
    expect(wrong({ sha256: 'abd' })).toMatchObject({ ok: false, rule: expect.stringContaining('SHA-256') });
    expect(wrong({ bytes: 2 })).toMatchObject({ ok: false, rule: expect.stringContaining('SHA-256') });
    expect(wrong({ status: 404, errorCode: 'not_found', sha256: null })).toMatchObject({ ok: false, rule: expect.stringContaining('existed') });
    expect(wrong({ status: 403, errorCode: 'signature_required', sha256: null })).toMatchObject({ ok: false, rule: expect.stringContaining('Public throughout') });
    expect(wrong({ status: 403, errorCode: 'invalid_signature', sha256: null, signed: true })).toMatchObject({ ok: false });
    // No answer, a 503 and a cut-off body are errors, counted apart.
    expect(wrong({ status: 0 })).toBeNull();
    expect(wrong({ status: 503 })).toBeNull();
    expect(wrong({ broken: true })).toBeNull();
  });
});

describe('the load test, small', () => {
  it('uploads, downloads at three edges, switches and deletes with 0 errors and 0 rule violations', async () => {
    const lines: string[] = [];
    const report = await runLoad({
      uploads: 20, minSize: 1024, maxSize: 6 * 1024 * 1024, downloaders: 8, switchers: 2, seconds: 10, edges: 3, partsInFlight: 8,
      entry: CLI, tmpDir: os.tmpdir(), keepData: false, seed: 7, log: (line) => lines.push(line),
    });
    const detail = JSON.stringify({ errors: report.errors, violations: report.violations, answers: report.answers }, null, 1);
    expect(report.errorCount, detail).toBe(0);
    expect(report.violationCount, detail).toBe(0);
    // The run did what it says: every upload stored, answers of every kind judged.
    expect(report.uploadedBytes).toBeGreaterThan(6 * 1024 * 1024);
    expect(report.switches).toBeGreaterThan(5);
    expect(report.deletes).toBeGreaterThan(0);
    expect(report.deliveries).toBeGreaterThan(100);
    for (const kind of ['plain 200', 'signed 200', 'plain 403 signature_required']) expect(report.answers[kind] ?? 0, `${kind}\n${detail}`).toBeGreaterThan(0);
    expect(Object.keys(report.peakRssMb).sort()).toEqual(['edge 1', 'edge 2', 'edge 3', 'origin']);
    for (const mb of Object.values(report.peakRssMb)) expect(mb).toBeGreaterThan(0);
  }, 120_000);
});
