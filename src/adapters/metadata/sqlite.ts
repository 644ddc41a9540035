import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from './kysely.js';
import { KyselyMetadataStore } from './kysely-store.js';
import type { Database } from './schema.js';

/** The embedded store: one SQLite file in WAL mode, durable at every commit. */
export async function openSqliteStore(path: string): Promise<KyselyMetadataStore> {
  const sqlite = new BetterSqlite3(path);
  sqlite.pragma('journal_mode = WAL');
  // A 200 answer means the change survives a power cut, as an object store's would.
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  const store = new KyselyMetadataStore(db, 'sqlite');
  await store.migrate();
  return store;
}
