import type * as Sqlite from 'better-sqlite3';
import BetterSqlite3 from './better-sqlite3.js';
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
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: keepingStatements(sqlite) }) });
  const store = new KyselyMetadataStore(db, 'sqlite');
  await store.migrate();
  return store;
}

/** Prepared statements kept, by their SQL: a few hundred distinct queries cover the service. */
const KEPT_STATEMENTS = 500;
/**
 * Statements binding more parameters than this are not kept: their SQL varies with the data
 * (an `in` list of 1 to 500 ids, several rows inserted at once), so each is seldom asked for
 * again, and each holds some hundred kilobytes (a `delete … where id in` of 500 ids with its
 * foreign-key checks): kept, the deletes and listings of folders of every size held about
 * 90 MB. The service's fixed queries bind fewer.
 */
export const KEPT_MAX_PARAMETERS = 32;

function parameterCount(sql: string): number {
  let n = 0;
  for (let i = sql.indexOf('?'); i >= 0; i = sql.indexOf('?', i + 1)) n++;
  return n;
}

/**
 * The database as Kysely's SQLite dialect uses it, with each statement prepared once: Kysely
 * prepares every query it runs, and preparing costs more than running a small query.
 */
export function keepingStatements(sqlite: Sqlite.Database): { close(): void; prepare(sql: string): Sqlite.Statement } {
  const kept = new Map<string, Sqlite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql) {
      let statement = kept.get(sql);
      // One still being iterated cannot run again meanwhile: that query gets a statement of its own.
      if (statement?.busy) return sqlite.prepare(sql);
      if (statement) {
        // Most recently used last: the first is the one to drop.
        kept.delete(sql);
      } else {
        statement = sqlite.prepare(sql);
        if (parameterCount(sql) > KEPT_MAX_PARAMETERS) return statement;
        if (kept.size >= KEPT_STATEMENTS) kept.delete(kept.keys().next().value!);
      }
      kept.set(sql, statement);
      return statement;
    },
  };
}
