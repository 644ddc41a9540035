/**
 * PostgreSQL failing under a running origin: the lease table several origins decide by keeps
 * every acknowledgement an origin answered with a lease, even across a crash of the database
 * (else another origin could answer a delete while that edge still serves from its cache), and
 * a connection broken while a query holds it fails that query, not the process.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type PostgresMetadataStore } from '../../src/adapters/metadata/postgres.js';
import { createDatabase, createDatabaseOn, launchCluster, type ClusterHandle } from '../helpers/postgres.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
});

describe('a crash of the database', () => {
  it('keeps every acknowledgement an origin answered with a lease', async () => {
    // The WAL writer wakes every 10 s: a commit that does not wait for its WAL is not written
    // when the server crashes right after it.
    const cluster: ClusterHandle = await launchCluster({ settings: ['wal_writer_delay=10s'] });
    closers.push(() => cluster.stop());
    await cluster.ready;
    const url = await createDatabaseOn(cluster.adminUrl);
    const before = await openPostgresStore(url);
    closers.push(() => before.close());
    const now = Date.now();
    const ack = { edge_id: 'edge-1', origin_id: 'origin-a', acked_seq: 7, heard_at: now, live_until: now + 5000 };
    await before.recordEdgeAcks([ack]);
    await cluster.crash();
    await cluster.restart();
    const after = await openPostgresStore(url);
    closers.push(() => after.close());
    expect(await after.edgeLeases()).toEqual([expect.objectContaining({ edge_id: 'edge-1', acked_seq: 7, live_until: now + 5000 })]);
  });
});

describe('a connection reset while a query holds it', () => {
  it('fails that query only; the store goes on with new connections', async () => {
    const url = new URL(await createDatabase());
    const proxy = await TcpProxy.start(url.hostname, Number(url.port));
    closers.push(() => proxy.close());
    url.port = String(proxy.port);
    const store: PostgresMetadataStore = await openPostgresStore(url.toString());
    closers.push(() => store.close());
    let begun!: () => void;
    const holding = new Promise<void>((resolve) => (begun = resolve));
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    // A transaction holds its connection from BEGIN to COMMIT.
    const held = store.transaction(async () => {
      begun();
      await resumed;
    });
    await holding;
    proxy.cut();
    // Give the reset time to reach the client before the transaction goes on.
    await new Promise((r) => setTimeout(r, 200));
    resume();
    await expect(held).rejects.toThrow();
    await expect(store.edgeLeases()).resolves.toEqual([]);
  });
});
