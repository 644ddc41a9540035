/**
 * The edges' shared lease table (feed/hub.ts) over Kysely: the same queries on SQLite
 * and PostgreSQL. Every change of a row moves its version on, so writers compare and set.
 */
import type { Kysely, Transaction } from 'kysely';
import { sql } from './kysely.js';
import type { EdgeAck, EdgeLease } from '../../core/ports.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** PostgreSQL answers bigint as text; the records want numbers. */
function edgeLeaseRow(row: EdgeLease): EdgeLease {
  return {
    edge_id: row.edge_id, origin_id: row.origin_id, acked_seq: Number(row.acked_seq), heard_at: Number(row.heard_at),
    live_until: Number(row.live_until), state: row.state, version: Number(row.version),
  };
}

const byEdgeId = (x: { edge_id: string }, y: { edge_id: string }): number => (x.edge_id < y.edge_id ? -1 : x.edge_id > y.edge_id ? 1 : 0);

/**
 * One acknowledgement per edge (the highest of each figure), in key order: an upsert may touch
 * a row once, and key order keeps origins writing the same rows from deadlocking.
 */
export function mergeAcks(acks: EdgeAck[]): EdgeAck[] {
  const byEdge = new Map<string, EdgeAck>();
  for (const a of acks) {
    const had = byEdge.get(a.edge_id);
    byEdge.set(a.edge_id, had ? {
      ...a, acked_seq: Math.max(had.acked_seq, a.acked_seq), heard_at: Math.max(had.heard_at, a.heard_at), live_until: Math.max(had.live_until, a.live_until),
    } : a);
  }
  return [...byEdge.values()].sort(byEdgeId);
}

/** Edges in key order, for the same reason. */
export const inKeyOrder = <T extends { edge_id: string }>(edges: T[]): T[] => [...edges].sort(byEdgeId);

export class KyselyEdgeLeaseRows {
  constructor(private readonly db: Db, private readonly dialect: 'sqlite' | 'postgres') {}

  /** One row per edge, in key order (mergeAcks). */
  async upsert(acks: EdgeAck[]): Promise<EdgeLease[]> {
    const rows = await this.db.insertInto('edge_leases')
      .values(acks.map((a) => ({ ...a, state: 'behind' as const, version: 1 })))
      .onConflict((oc) => oc.column('edge_id').doUpdateSet({
        origin_id: sql`excluded.origin_id`,
        acked_seq: sql`case when excluded.acked_seq > edge_leases.acked_seq then excluded.acked_seq else edge_leases.acked_seq end`,
        heard_at: sql`excluded.heard_at`,
        live_until: sql`case when excluded.live_until > edge_leases.live_until then excluded.live_until else edge_leases.live_until end`,
        // Quiet for a lease, or answered without: it catches up before it holds a lease again.
        state: sql`case when edge_leases.state = 'lapsed' or edge_leases.live_until <= excluded.heard_at then 'behind' else edge_leases.state end`,
        version: sql`edge_leases.version + 1`,
      }))
      .returningAll()
      .execute();
    // Wakes origins waiting on these edges (feed/event-wake.ts).
    if (this.dialect === 'postgres') await sql`select pg_notify('coffer_edge_acks', '')`.execute(this.db);
    return rows.map(edgeLeaseRow);
  }

  /** Compare-and-set on each row's version; answers the edges marked. */
  async markLapsed(edges: Array<{ edge_id: string; version: number }>): Promise<string[]> {
    const marked: string[] = [];
    for (const e of edges) {
      const result = await this.db.updateTable('edge_leases').set({ state: 'lapsed', version: sql`version + 1` })
        .where('edge_id', '=', e.edge_id).where('version', '=', e.version).executeTakeFirst();
      if (Number(result.numUpdatedRows) > 0) marked.push(e.edge_id);
    }
    return marked;
  }

  async all(): Promise<EdgeLease[]> {
    return (await this.db.selectFrom('edge_leases').selectAll().execute()).map(edgeLeaseRow);
  }

  async markCaughtUp(edgeId: string, version: number): Promise<boolean> {
    const result = await this.db.updateTable('edge_leases').set({ state: 'caught_up', version: sql`version + 1` })
      .where('edge_id', '=', edgeId).where('version', '=', version).where('state', '=', 'behind').executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async prune(before: number): Promise<number> {
    const result = await this.db.deleteFrom('edge_leases').where('live_until', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
