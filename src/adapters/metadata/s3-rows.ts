/**
 * What the S3 interface reads and writes (contract §12) over Kysely. Keys sort as bytes of
 * UTF-8, as S3 lists them: `collate "C"` on PostgreSQL, SQLite's own comparison there.
 */
import type { Kysely, Transaction } from 'kysely';
import { sql } from './kysely.js';
import type { RowLock, S3Entry, S3Rows, S3Upload, StoredFile, StoredFolder } from '../../core/ports.js';
import type { Database } from './schema.js';
import { compareKeys } from '../../core/names.js';

type Db = Kysely<Database> | Transaction<Database>;

const uploadRow = (row: S3Upload): S3Upload => ({ ...row, created_at: Number(row.created_at) });

export class KyselyS3Rows implements S3Rows {
  constructor(
    private readonly db: Db,
    private readonly dialect: 'sqlite' | 'postgres',
    private readonly fileRow: (row: StoredFile) => StoredFile,
    private readonly folderRow: (row: StoredFolder) => StoredFolder,
  ) {}

  private get bytes() {
    return this.dialect === 'postgres' ? sql` collate "C"` : sql``;
  }

  async filesNamed(folderId: string | null, name: string, lock?: RowLock): Promise<StoredFile[]> {
    let q = this.db.selectFrom('files').selectAll().where('name', '=', name).where('status', '=', 'ready');
    q = folderId === null ? q.where('folder_id', 'is', null) : q.where('folder_id', '=', folderId);
    q = q.orderBy('completed_at', 'desc').orderBy('id', 'desc');
    if (lock && this.dialect === 'postgres') q = lock === 'update' ? q.forUpdate() : q.forShare();
    return (await q.execute()).map(this.fileRow);
  }

  async entries(folderId: string | null, after: string | null, limit: number): Promise<{ entries: S3Entry[]; more: boolean }> {
    const b = this.bytes;
    let files = this.db.selectFrom('files').selectAll().where('status', '=', 'ready');
    files = folderId === null ? files.where('folder_id', 'is', null) : files.where('folder_id', '=', folderId);
    if (after !== null) files = files.where(sql<boolean>`name${b} > ${after}`);
    const fileRows = await files.orderBy(sql`name${b}`).orderBy('completed_at', 'desc').orderBy('id', 'desc').limit(limit).execute();

    const folderKey = sql<string>`(name || '/')${b}`;
    let folders = this.db.selectFrom('folders').selectAll();
    folders = folderId === null ? folders.where('parent_id', 'is', null) : folders.where('parent_id', '=', folderId);
    if (after !== null) folders = folders.where(sql<boolean>`${folderKey} > ${after}`);
    const folderRows = await folders.orderBy(folderKey).limit(limit).execute();

    const merged: S3Entry[] = [
      ...fileRows.map((r): S3Entry => ({ kind: 'file', key: r.name, file: this.fileRow(r) })),
      ...folderRows.map((r): S3Entry => ({ kind: 'folder', key: `${r.name}/`, folder: this.folderRow(r) })),
    ];
    // Stable: files of one name keep the store's newest-first order.
    merged.sort((x, y) => compareKeys(x.key, y.key));
    const more = fileRows.length === limit || folderRows.length === limit;
    return { entries: merged.slice(0, limit), more: more || merged.length > limit };
  }

  async insertUpload(upload: S3Upload): Promise<void> {
    await this.db.insertInto('s3_uploads').values(upload).execute();
  }

  async getUpload(fileId: string): Promise<S3Upload | undefined> {
    const row = await this.db.selectFrom('s3_uploads').selectAll().where('file_id', '=', fileId).executeTakeFirst();
    return row && uploadRow(row);
  }

  async deleteUpload(fileId: string): Promise<void> {
    await this.db.deleteFrom('s3_uploads').where('file_id', '=', fileId).execute();
  }

  async listUploads(bucketId: string, prefix: string, after: { key: string; fileId: string } | null, limit: number): Promise<S3Upload[]> {
    let q = this.db.selectFrom('s3_uploads').selectAll().where('bucket_id', '=', bucketId);
    // A range, not LIKE: SQLite's LIKE ignores the case of ASCII letters.
    if (prefix !== '') q = q.where('object_key', '>=', prefix);
    if (after) q = q.where((eb) => eb(eb.refTuple('object_key', 'file_id'), '>', eb.tuple(after.key, after.fileId)));
    const rows: S3Upload[] = [];
    for (const row of await q.orderBy('object_key').orderBy('file_id').limit(limit).execute()) {
      // In key order, the first key without the prefix ends the run of those with it.
      if (!row.object_key.startsWith(prefix)) break;
      rows.push(row);
    }
    return rows.map(uploadRow);
  }
}
