/** Per-file, per-day usage (contract §11) over Kysely: the same queries on SQLite and PostgreSQL. */
import type { Kysely, Transaction } from 'kysely';
import { sql } from './kysely.js';
import type { UsageRow, UsageRows } from '../../core/ports.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

export class KyselyUsageRows implements UsageRows {
  constructor(private readonly db: Db) {}

  async add(rows: UsageRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += 200) {
      await this.db.insertInto('file_usage').values(rows.slice(i, i + 200))
        .onConflict((oc) => oc.columns(['file_id', 'day']).doUpdateSet({
          downloads: sql`file_usage.downloads + excluded.downloads`,
          bytes: sql`file_usage.bytes + excluded.bytes`,
        }))
        .execute();
    }
  }

  async ofFile(fileId: string): Promise<{ downloads: number; bytes: number }> {
    const row = await this.db.selectFrom('file_usage')
      .select((eb) => [eb.fn.sum<number>('downloads').as('downloads'), eb.fn.sum<number>('bytes').as('bytes')])
      .where('file_id', '=', fileId).executeTakeFirst();
    return { downloads: Number(row?.downloads ?? 0), bytes: Number(row?.bytes ?? 0) };
  }

  async byDay(fromDay: number): Promise<Array<{ day: number; downloads: number; bytes: number }>> {
    const rows = await this.db.selectFrom('file_usage')
      .select((eb) => ['day', eb.fn.sum<number>('downloads').as('downloads'), eb.fn.sum<number>('bytes').as('bytes')])
      .where('day', '>=', fromDay).groupBy('day').orderBy('day').execute();
    return rows.map((r) => ({ day: Number(r.day), downloads: Number(r.downloads), bytes: Number(r.bytes) }));
  }
}
