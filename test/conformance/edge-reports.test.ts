/**
 * The MetadataStore's edge reports (recordEdgeReport, edgeReports, pruneEdgeReports: the
 * fleet's half beside the lease table, src/feed/fleet.ts), the same on SQLite and PostgreSQL.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { MetadataStore } from '../../src/core/ports.js';
import { openSqliteStore } from '../../src/adapters/metadata/sqlite.js';
import { openPostgresStore } from '../../src/adapters/metadata/postgres.js';
import { createDatabase } from '../helpers/postgres.js';

const engines: Array<[string, () => Promise<{ store: MetadataStore; cleanup(): Promise<void> }>]> = [
  ['sqlite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'coffer-reports-'));
    return { store: await openSqliteStore(join(dir, 'meta.sqlite')), cleanup: () => rm(dir, { recursive: true, force: true }) };
  }],
  ['postgres', async () => ({ store: await openPostgresStore(await createDatabase()), cleanup: async () => {} })],
];

const T0 = 1_790_000_000_000;

describe.each(engines)('edge reports on %s', (_name, open) => {
  let store: MetadataStore;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ store, cleanup } = await open());
  });
  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  it('writes a report without a sync of its own: 200 edges must not stall the origin behind the disk', async () => {
    const tx = vi.spyOn(store, 'transaction');
    try {
      await store.recordEdgeReport({ edge_id: 'relaxed', origin_id: 'o1', received_at: T0, report: '{}' });
      expect(tx).toHaveBeenCalledTimes(1);
      expect(tx.mock.calls[0]![1]).toEqual({ durable: false });
    } finally {
      tx.mockRestore();
    }
    await store.pruneEdgeReports(T0 + 1);
  });

  it('keeps one row per edge, the newest replacing the one before, times as numbers', async () => {
    await store.recordEdgeReport({ edge_id: 'a', origin_id: 'o1', received_at: T0, report: '{"n":1}' });
    await store.recordEdgeReport({ edge_id: 'b', origin_id: 'o1', received_at: T0 + 5, report: '{"n":2}' });
    await store.recordEdgeReport({ edge_id: 'a', origin_id: 'o2', received_at: T0 + 10, report: '{"n":3}' });
    const rows = (await store.edgeReports()).sort((x, y) => (x.edge_id < y.edge_id ? -1 : 1));
    expect(rows).toEqual([
      { edge_id: 'a', origin_id: 'o2', received_at: T0 + 10, report: '{"n":3}' },
      { edge_id: 'b', origin_id: 'o1', received_at: T0 + 5, report: '{"n":2}' },
    ]);
  });

  it('prunes the reports received before a time', async () => {
    expect(await store.pruneEdgeReports(T0 + 6)).toBe(1);
    expect((await store.edgeReports()).map((r) => r.edge_id)).toEqual(['a']);
  });
});
