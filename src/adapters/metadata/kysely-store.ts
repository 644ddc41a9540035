/**
 * The metadata store over Kysely: the same queries for SQLite and PostgreSQL.
 */
import { Migrator, sql, type Kysely, type Transaction } from 'kysely';
import type {
  BlobToDelete, MetadataStore, MetadataTx, NewEvent, PageQuery, SortField, StoredEvent, StoredFile, StoredFolder, StoredPart, StoredSession,
} from '../../core/ports.js';
import { CofferMigrations } from './migrations.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

const NUMERIC_FILE_FIELDS = ['size', 'created_at', 'updated_at', 'completed_at', 'upload_expires_at'] as const;

/** PostgreSQL answers bigint as text; the records want numbers. */
function fileRow(row: StoredFile): StoredFile {
  for (const f of NUMERIC_FILE_FIELDS) if (row[f] !== null && typeof row[f] !== 'number') (row as any)[f] = Number(row[f]);
  return row;
}
function folderRow(row: StoredFolder): StoredFolder {
  row.created_at = Number(row.created_at);
  row.updated_at = Number(row.updated_at);
  return row;
}
function sessionRow(row: StoredSession): StoredSession {
  row.created_at = Number(row.created_at);
  row.expires_at = Number(row.expires_at);
  return row;
}
function partRow(row: StoredPart): StoredPart {
  row.size = Number(row.size);
  row.updated_at = Number(row.updated_at);
  return row;
}

// Kysely takes at most this many bound values comfortably on both engines.
const IN_BATCH = 500;
function batches<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += IN_BATCH) out.push(items.slice(i, i + IN_BATCH));
  return out;
}

class KyselyTx implements MetadataTx {
  constructor(private readonly db: Db, private readonly dialect: 'sqlite' | 'postgres') {}

  async getFolder(id: string) {
    const row = await this.db.selectFrom('folders').selectAll().where('id', '=', id).executeTakeFirst();
    return row && folderRow(row);
  }

  async folderChain(id: string): Promise<StoredFolder[]> {
    const rows = await this.db
      .withRecursive('chain(id, depth)', (qb) =>
        qb.selectNoFrom([sql<string>`${id}`.as('id'), sql<number>`0`.as('depth')]).unionAll((qb2) =>
          qb2.selectFrom('folders').innerJoin('chain', 'chain.id', 'folders.id')
            .where('folders.parent_id', 'is not', null)
            .select([sql<string>`folders.parent_id`.as('id'), sql<number>`chain.depth + 1`.as('depth')])
            .where('chain.depth', '<', 10_000)))
      .selectFrom('chain')
      .innerJoin('folders', 'folders.id', 'chain.id')
      .selectAll('folders')
      .orderBy('chain.depth')
      .execute();
    return rows.map(folderRow);
  }

  async findFolderByName(parentId: string | null, name: string) {
    let q = this.db.selectFrom('folders').selectAll().where('name', '=', name);
    q = parentId === null ? q.where('parent_id', 'is', null) : q.where('parent_id', '=', parentId);
    const row = await q.executeTakeFirst();
    return row && folderRow(row);
  }

  async insertFolder(folder: StoredFolder) {
    await this.db.insertInto('folders').values(folder).execute();
  }

  async updateFolder(id: string, patch: Partial<Omit<StoredFolder, 'id'>>) {
    await this.db.updateTable('folders').set(patch).where('id', '=', id).execute();
  }

  async descendantFolderIds(id: string): Promise<string[]> {
    const rows = await this.db
      .withRecursive('tree(id)', (qb) =>
        qb.selectFrom('folders').select('id').where('parent_id', '=', id).union((qb2) =>
          qb2.selectFrom('folders').innerJoin('tree', 'tree.id', 'folders.parent_id').select('folders.id')))
      .selectFrom('tree').select('id').execute();
    return rows.map((r) => r.id);
  }

  async countChildren(folderId: string) {
    const files = await this.db.selectFrom('files').select((eb) => eb.fn.countAll<number>().as('n')).where('folder_id', '=', folderId).executeTakeFirstOrThrow();
    const folders = await this.db.selectFrom('folders').select((eb) => eb.fn.countAll<number>().as('n')).where('parent_id', '=', folderId).executeTakeFirstOrThrow();
    return { files: Number(files.n), folders: Number(folders.n) };
  }

  async deleteFolders(ids: string[]) {
    // Children before parents keeps the parent reference valid at every step.
    for (const id of [...ids].reverse()) await this.db.deleteFrom('folders').where('id', '=', id).execute();
  }

  async filesInFolders(folderIds: string[]): Promise<StoredFile[]> {
    const out: StoredFile[] = [];
    for (const batch of batches(folderIds)) {
      const rows = await this.db.selectFrom('files').selectAll().where('folder_id', 'in', batch).execute();
      out.push(...rows.map(fileRow));
    }
    return out;
  }

  async getFile(id: string) {
    const row = await this.db.selectFrom('files').selectAll().where('id', '=', id).executeTakeFirst();
    return row && fileRow(row);
  }

  async insertFile(file: StoredFile) {
    await this.db.insertInto('files').values(file).execute();
  }

  async updateFile(id: string, patch: Partial<Omit<StoredFile, 'id'>>) {
    await this.db.updateTable('files').set(patch).where('id', '=', id).execute();
  }

  async deleteFiles(ids: string[]) {
    for (const batch of batches(ids)) {
      await this.db.deleteFrom('parts').where('file_id', 'in', batch).execute();
      await this.db.deleteFrom('files').where('id', 'in', batch).execute();
    }
  }

  async getPart(fileId: string, partNumber: number) {
    const row = await this.db.selectFrom('parts').selectAll().where('file_id', '=', fileId).where('part_number', '=', partNumber).executeTakeFirst();
    return row && partRow(row);
  }

  async upsertPart(part: StoredPart) {
    await this.db.insertInto('parts').values(part)
      .onConflict((oc) => oc.columns(['file_id', 'part_number']).doUpdateSet({ size: part.size, etag: part.etag, updated_at: part.updated_at }))
      .execute();
  }

  async listParts(fileId: string) {
    const rows = await this.db.selectFrom('parts').selectAll().where('file_id', '=', fileId).orderBy('part_number').execute();
    return rows.map(partRow);
  }

  async partNumbers(fileId: string) {
    const rows = await this.db.selectFrom('parts').select('part_number').where('file_id', '=', fileId).execute();
    return rows.map((r) => Number(r.part_number));
  }

  async deleteParts(fileId: string) {
    await this.db.deleteFrom('parts').where('file_id', '=', fileId).execute();
  }

  async appendEvent(event: NewEvent, at: number): Promise<number> {
    if (this.dialect === 'postgres') {
      // Serialises appends so sequence numbers commit in order and a follower never skips one.
      await sql`select pg_advisory_xact_lock(7262951)`.execute(this.db);
    }
    const row = await this.db.insertInto('events').values({
      type: event.type,
      file_id: event.file_id ?? null,
      folder_id: event.folder_id ?? null,
      data: JSON.stringify(event.data),
      created_at: at,
    }).returning('seq').executeTakeFirstOrThrow();
    return Number(row.seq);
  }

  async queueBlobDeletion(blobs: BlobToDelete[], at: number) {
    for (const batch of batches(blobs)) {
      await this.db.insertInto('blob_trash').values(batch.map((b) => ({ ...b, created_at: at }))).execute();
    }
  }

  async insertSession(session: StoredSession) {
    await this.db.insertInto('sessions').values(session).execute();
  }

  async getSession(tokenHash: string) {
    const row = await this.db.selectFrom('sessions').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    return row && sessionRow(row);
  }

  async deleteSession(tokenHash: string) {
    const result = await this.db.deleteFrom('sessions').where('token_hash', '=', tokenHash).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

type SortColumn = 'name_key' | 'created_at' | 'updated_at' | 'size';

/** The column a sort reads; folders have no size and sort by name then. */
function sortColumn(table: 'files' | 'folders', sort: SortField): SortColumn {
  if (sort === 'name' || (table === 'folders' && sort === 'size')) return 'name_key';
  return sort;
}

export class KyselyMetadataStore implements MetadataStore {
  readonly read: MetadataTx;

  constructor(private readonly db: Kysely<Database>, readonly dialect: 'sqlite' | 'postgres') {
    this.read = new KyselyTx(db, dialect);
  }

  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.db, provider: new CofferMigrations(this.dialect), migrationTableName: 'coffer_migrations', migrationLockTableName: 'coffer_migrations_lock' });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  }

  transaction<T>(fn: (tx: MetadataTx) => Promise<T>, opts: { durable?: boolean } = {}): Promise<T> {
    if (opts.durable === false && this.dialect === 'sqlite') {
      // One reserved connection, so the relaxed setting covers this transaction alone.
      return this.db.connection().execute(async (conn) => {
        await sql`pragma synchronous = normal`.execute(conn);
        try {
          return await conn.transaction().execute((trx) => fn(new KyselyTx(trx, this.dialect)));
        } finally {
          await sql`pragma synchronous = full`.execute(conn);
        }
      });
    }
    return this.db.transaction().execute((trx) => fn(new KyselyTx(trx, this.dialect)));
  }

  private page<T extends 'files' | 'folders'>(table: T, q: PageQuery, column: SortColumn) {
    const parentCol = table === 'files' ? 'folder_id' : 'parent_id';
    let query = this.db.selectFrom(table as 'files').selectAll();
    query = q.parentId === null ? query.where(parentCol as 'folder_id', 'is', null) : query.where(parentCol as 'folder_id', '=', q.parentId);
    if (table === 'files') query = query.where('status', '=', 'ready');
    if (q.nameContains !== undefined && q.nameContains !== '') {
      const pattern = `%${q.nameContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      query = query.where(sql<boolean>`name_key like ${pattern} escape '\\'`);
    }
    const col = column as 'name_key';
    if (q.after) {
      const op = q.order === 'asc' ? '>' : '<';
      query = query.where((eb) => eb(eb.refTuple(col, 'id'), op, eb.tuple(q.after!.value as string, q.after!.id)));
    }
    return query.orderBy(col, q.order).orderBy('id', q.order).limit(q.limit);
  }

  /** The SQL and parameters of one page exactly as listFolders/listFiles run it (for query-plan checks). */
  compilePage(table: 'files' | 'folders', q: PageQuery): { sql: string; parameters: readonly unknown[] } {
    return this.page(table, q, sortColumn(table, q.sort)).compile();
  }

  async listFolders(q: PageQuery): Promise<StoredFolder[]> {
    const rows = await this.page('folders', q, sortColumn('folders', q.sort)).execute();
    return (rows as unknown as StoredFolder[]).map(folderRow);
  }

  async listFiles(q: PageQuery): Promise<StoredFile[]> {
    const rows = await this.page('files', q, sortColumn('files', q.sort)).execute();
    return rows.map(fileRow);
  }

  async expiredUploads(now: number, limit: number) {
    const rows = await this.db.selectFrom('files').selectAll()
      .where('status', '=', 'uploading').where('upload_expires_at', '<=', now)
      .orderBy('upload_expires_at').limit(limit).execute();
    return rows.map(fileRow);
  }

  async allFolders() {
    return (await this.db.selectFrom('folders').selectAll().execute()).map(folderRow);
  }

  async allReadyFiles() {
    return (await this.db.selectFrom('files').selectAll().where('status', '=', 'ready').execute()).map(fileRow);
  }

  async eventsAfter(seq: number, limit: number): Promise<StoredEvent[]> {
    const rows = await this.db.selectFrom('events').selectAll().where('seq', '>', seq).orderBy('seq').limit(limit).execute();
    return rows.map((r) => ({
      seq: Number(r.seq), type: r.type as StoredEvent['type'], file_id: r.file_id, folder_id: r.folder_id,
      data: JSON.parse(r.data) as Record<string, unknown>, created_at: Number(r.created_at),
    }));
  }

  async lastEventSeq(): Promise<number> {
    const row = await this.db.selectFrom('events').select((eb) => eb.fn.max('seq').as('seq')).executeTakeFirst();
    return Number(row?.seq ?? 0);
  }

  async pendingBlobDeletions(limit: number) {
    const rows = await this.db.selectFrom('blob_trash').selectAll().orderBy('id').limit(limit).execute();
    return rows.map((r) => ({ id: Number(r.id), bucket: r.bucket, blob_key: r.blob_key, upload_id: r.upload_id, object: Number(r.object) }));
  }

  async forgetBlobDeletions(ids: number[]) {
    for (const batch of batches(ids)) await this.db.deleteFrom('blob_trash').where('id', 'in', batch).execute();
  }

  async deleteExpiredSessions(now: number) {
    const result = await this.db.deleteFrom('sessions').where('expires_at', '<=', now).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}
