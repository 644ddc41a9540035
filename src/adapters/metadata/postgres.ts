/**
 * Metadata in PostgreSQL: the same Kysely queries and migrations as the embedded store, over a
 * pool shared by every request of this origin, and safe with several origins on one database.
 *
 * - Transactions run at READ COMMITTED; the service takes row locks where a decision depends on
 *   a row another origin may change (`getFile(id, 'update')` and the like), and folder-tree
 *   changes serialise on an advisory lock. One that loses a deadlock, a serialisation check or a
 *   uniqueness race is run again (a few times), which is why transaction bodies do database work only.
 * - `exclusive(name, fn)` holds a session advisory lock on a connection of a small pool of its own
 *   (so a holder never waits for the pool its own work needs); a crashed holder's lock goes with
 *   its connection.
 * - Migrations run on a connection without a statement timeout, under Kysely's advisory lock,
 *   so origins starting together migrate once.
 * - bigint (int8) columns come back as numbers: they hold millisecond times and sizes, far below 2^53.
 * - `durable: false` sets `synchronous_commit = off` for that transaction alone: it is visible at
 *   once and ordered like any other, only a server crash may lose it (a part record the client
 *   can send again). Every other commit is flushed before it is answered.
 */
import { createHash } from 'node:crypto';
import { Kysely, PostgresDialect, sql } from './kysely.js';
import pg from 'pg';
import type { MetadataTx } from '../../core/ports.js';
import { KyselyMetadataStore, KyselyTx } from './kysely-store.js';
import type { Database } from './schema.js';

export interface PostgresStoreOptions {
  /** Connections for queries (default 10). */
  poolSize?: number;
  /** Connections that may hold `exclusive` locks at once (default 10). */
  lockPoolSize?: number;
  /** Longest any one statement may run, lock waits included (default 30 s). */
  statementTimeoutMs?: number;
}

const INT8 = 20;
const RETRYABLE = new Set(['40001', '40P01', '23505']); // serialization_failure, deadlock_detected, unique_violation
const ATTEMPTS = 5;

const typeParsers = {
  getTypeParser(oid: number, format?: string) {
    if (oid === INT8 && format !== 'binary') return (value: string) => Number(value);
    return (pg.types.getTypeParser as (oid: number, format?: string) => unknown)(oid, format);
  },
} as unknown as pg.CustomTypesConfig;

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

function newPool(url: string, max: number, statementTimeoutMs: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types: typeParsers,
    application_name: 'coffer',
    connectionTimeoutMillis: 15_000,
    ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {}),
    // A transaction is never left open while waiting for something else.
    idle_in_transaction_session_timeout: 60_000,
  });
  // An idle connection that breaks (a server restart) is dropped by the pool; without a
  // listener the event would end the process.
  pool.on('error', () => {});
  // One that breaks while a query holds it (a reset, a failover) fails that query, and the pool
  // drops it when it comes back; pg also emits the error on the client, which would end the
  // process too, as the pool listens only to its idle clients.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** Two 32-bit keys for pg_advisory_lock from any name. */
function lockKeys(name: string): [number, number] {
  const digest = createHash('sha256').update(name).digest();
  return [digest.readInt32BE(0), digest.readInt32BE(4)];
}

function isRetryable(err: unknown): boolean {
  return err instanceof pg.DatabaseError && err.code !== undefined && RETRYABLE.has(err.code);
}

export class PostgresMetadataStore extends KyselyMetadataStore {
  /** Several origins may share one PostgreSQL store. */
  override readonly sharedByOrigins = true;

  constructor(
    db: Kysely<Database>,
    private readonly url: string,
    private readonly lockPool: pg.Pool,
  ) {
    super(db, 'postgres');
  }

  override async migrate(): Promise<void> {
    // Index builds on a large database may take longer than any statement timeout.
    const pool = newPool(this.url, 1, 0);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    try {
      await new KyselyMetadataStore(db, 'postgres').migrate();
    } finally {
      await db.destroy();
    }
  }

  override async transaction<T>(fn: (tx: MetadataTx) => Promise<T>, opts: { durable?: boolean } = {}): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.transaction().execute(async (trx) => {
          if (opts.durable === false) await sql`set local synchronous_commit = off`.execute(trx);
          return fn(new KyselyTx(trx, 'postgres'));
        });
      } catch (err) {
        if (attempt >= ATTEMPTS || !isRetryable(err)) throw err;
        // Whoever won the race commits meanwhile; a little jitter keeps the retries apart.
        await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
      }
    }
  }

  override async exclusive<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const [k1, k2] = lockKeys(name);
    const client = await this.lockPool.connect();
    try {
      await client.query('select pg_advisory_lock($1, $2)', [k1, k2]);
    } catch (err) {
      client.release(true);
      throw err;
    }
    try {
      return await fn();
    } finally {
      let unlocked = true;
      await client.query('select pg_advisory_unlock($1, $2)', [k1, k2]).catch(() => {
        unlocked = false;
      });
      // A connection whose lock could not be given back is closed, which releases it.
      client.release(unlocked ? undefined : true);
    }
  }

  /**
   * One connection holds every `tryExclusive` of this origin as session advisory locks (they
   * are re-entrant on one connection, so the store also keeps a name to one holder in this
   * process). A long tus PATCH so holds no pooled connection; if the connection breaks, its
   * locks go with it, and the writers' compare-and-set on the upload's version still keeps
   * two of them from both recording.
   */
  private holder: Promise<pg.Client> | null = null;

  private holderClient(): Promise<pg.Client> {
    if (!this.holder) {
      const client = new pg.Client({ connectionString: this.url, application_name: 'coffer-locks', connectionTimeoutMillis: 15_000 });
      const connecting = client.connect().then(() => client);
      const forget = () => {
        if (this.holder === connecting) this.holder = null;
      };
      client.on('error', forget);
      client.on('end', forget);
      connecting.catch(forget);
      this.holder = connecting;
    }
    return this.holder;
  }

  protected override async holdAcrossProcesses(name: string): Promise<(() => Promise<void>) | null> {
    const [k1, k2] = lockKeys(`try:${name}`);
    const client = await this.holderClient();
    const { rows } = await client.query<{ held: boolean }>('select pg_try_advisory_lock($1, $2) as held', [k1, k2]);
    if (!rows[0]?.held) return null;
    return async () => {
      await client.query('select pg_advisory_unlock($1, $2)', [k1, k2]).catch(() => {
        // A connection that cannot give a lock back is closed, which gives back all of its.
        client.end().catch(() => {});
      });
    };
  }

  override async close(): Promise<void> {
    await super.close();
    await this.lockPool.end();
    const holder = this.holder;
    this.holder = null;
    if (holder) await holder.then((c) => c.end(), () => {}).catch(() => {});
  }
}

/** Opens (and migrates) the store at a postgres:// or postgresql:// URL. */
export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresMetadataStore> {
  if (!isPostgresUrl(url)) throw new Error('A PostgreSQL URL starts with postgres:// or postgresql://.');
  const statementTimeout = opts.statementTimeoutMs ?? 30_000;
  const pool = newPool(url, opts.poolSize ?? 10, statementTimeout);
  // Waiting for a lock may take as long as its holder's work: no statement timeout here.
  const lockPool = newPool(url, opts.lockPoolSize ?? 10, 0);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const store = new PostgresMetadataStore(db, url, lockPool);
  try {
    await store.migrate();
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
  return store;
}
