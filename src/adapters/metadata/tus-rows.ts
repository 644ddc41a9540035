/** tus uploads (contract §9) over Kysely: the same queries on SQLite and PostgreSQL. */
import type { Kysely, Transaction } from 'kysely';
import type { TusRows } from '../../core/ports.js';
import type { StoredTusUpload } from '../../core/tus.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** PostgreSQL answers bigint as text where no parser is set; the rows want numbers. */
function tusRow(row: StoredTusUpload): StoredTusUpload {
  return { ...row, tail_size: Number(row.tail_size), version: Number(row.version), joined: Number(row.joined), created_at: Number(row.created_at) };
}

export class KyselyTusRows implements TusRows {
  constructor(private readonly db: Db) {}

  async insert(row: StoredTusUpload): Promise<void> {
    await this.db.insertInto('tus_uploads').values(row).execute();
  }

  async get(fileId: string): Promise<StoredTusUpload | undefined> {
    const row = await this.db.selectFrom('tus_uploads').selectAll().where('file_id', '=', fileId).executeTakeFirst();
    return row && tusRow(row);
  }

  async ofFiles(fileIds: string[]): Promise<StoredTusUpload[]> {
    const out: StoredTusUpload[] = [];
    for (let i = 0; i < fileIds.length; i += 500) {
      const rows = await this.db.selectFrom('tus_uploads').selectAll().where('file_id', 'in', fileIds.slice(i, i + 500)).execute();
      out.push(...rows.map(tusRow));
    }
    return out;
  }

  async update(fileId: string, version: number, patch: Partial<Omit<StoredTusUpload, 'file_id' | 'version'>>): Promise<boolean> {
    const result = await this.db.updateTable('tus_uploads').set({ ...patch, version: version + 1 })
      .where('file_id', '=', fileId).where('version', '=', version).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async partialBytesOfGrant(grantId: string): Promise<number> {
    const row = await this.db.selectFrom('files').innerJoin('tus_uploads', 'tus_uploads.file_id', 'files.id')
      .select((eb) => eb.fn.sum<number>('files.size').as('bytes'))
      .where('files.grant_id', '=', grantId).where('tus_uploads.kind', '=', 'partial').executeTakeFirst();
    return Number(row?.bytes ?? 0);
  }
}
