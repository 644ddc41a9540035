/**
 * The metadata store over Kysely: the same queries for SQLite and PostgreSQL.
 */
import type { Kysely, Transaction } from 'kysely';
import { Migrator, sql } from './kysely.js';
import type {
  BlobToDelete, EdgeAck, EdgeReportRow, GrantRows, KeyRows, S3Rows, TusRows, UsageRows, WebhookRows, EdgeLease, MetadataStore, MetadataTx, NewEvent, PageQuery, RowLock, StoredEvent, StoredFile, StoredFolder, StoredPart, StoredSession,
} from '../../core/ports.js';
import { KeyedQueue } from '../../core/coalesce.js';
import { MAX_FOLDER_DEPTH } from '../../core/upload.js';
import { CofferMigrations } from './migrations.js';
import { KyselyGrantRows, KyselyKeyRows } from './access-rows.js';
import { KyselyWebhookRows } from './webhook-rows.js';
import { KyselyUsageRows } from './usage-rows.js';
import { KyselyTusRows } from './tus-rows.js';
import { KyselyS3Rows } from './s3-rows.js';
import { KyselyEdgeLeaseRows, inKeyOrder, mergeAcks } from './edge-lease-rows.js';
import { pageQuery } from './page-query.js';
import { batches, fileRow, folderRow, partRow, sessionRow } from './stored-rows.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** Advisory lock keys (PostgreSQL): one for the event log, one for the folder tree. */
const EVENTS_LOCK = 7262951;
const FOLDER_TREE_LOCK = 7262952;

export class KyselyTx implements MetadataTx {
  readonly keys: KeyRows;
  readonly grants: GrantRows;
  readonly webhooks: WebhookRows;
  readonly usage: UsageRows;
  readonly tus: TusRows;
  readonly s3: S3Rows;
  private readonly leases: KyselyEdgeLeaseRows;

  constructor(private readonly db: Db, private readonly dialect: 'sqlite' | 'postgres') {
    this.s3 = new KyselyS3Rows(db, dialect, fileRow, folderRow);
    this.leases = new KyselyEdgeLeaseRows(db, dialect);
    this.keys = new KyselyKeyRows(db);
    this.grants = new KyselyGrantRows(db);
    this.webhooks = new KyselyWebhookRows(db, dialect);
    this.usage = new KyselyUsageRows(db);
    this.tus = new KyselyTusRows(db);
  }

  /** Row locks exist on PostgreSQL; SQLite runs one transaction at a time. */
  private withLock<Q extends { forUpdate(): Q; forShare(): Q }>(query: Q, lock: RowLock | undefined): Q {
    if (!lock || this.dialect !== 'postgres') return query;
    return lock === 'update' ? query.forUpdate() : query.forShare();
  }

  async getFolder(id: string, lock?: RowLock) {
    const row = await this.withLock(this.db.selectFrom('folders').selectAll().where('id', '=', id), lock).executeTakeFirst();
    return row && folderRow(row);
  }

  async folderChain(id: string): Promise<StoredFolder[]> {
    // PostgreSQL types the recursive column from this seed: text in the ids' collation.
    const seed = this.dialect === 'postgres' ? sql<string>`cast(${id} as text) collate "C"` : sql<string>`${id}`;
    // At most MAX_FOLDER_DEPTH folders: a longer chain comes back cut short (its last folder has a parent).
    const rows = await this.db
      .withRecursive('chain(id, depth)', (qb) =>
        qb.selectNoFrom([seed.as('id'), sql<number>`0`.as('depth')]).unionAll((qb2) =>
          qb2.selectFrom('folders').innerJoin('chain', 'chain.id', 'folders.id')
            .where('folders.parent_id', 'is not', null)
            .select([sql<string>`folders.parent_id`.as('id'), sql<number>`chain.depth + 1`.as('depth')])
            .where('chain.depth', '<', MAX_FOLDER_DEPTH - 1)))
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

  async folderHeight(id: string, limit: number): Promise<number> {
    const row = await this.db
      .withRecursive('tree(id, depth)', (qb) =>
        qb.selectFrom('folders').select(['id', sql<number>`1`.as('depth')]).where('parent_id', '=', id).unionAll((qb2) =>
          qb2.selectFrom('folders').innerJoin('tree', 'tree.id', 'folders.parent_id')
            .select(['folders.id', sql<number>`tree.depth + 1`.as('depth')])
            .where('tree.depth', '<', limit)))
      .selectFrom('tree').select((eb) => eb.fn.max('depth').as('height')).executeTakeFirst();
    return Number(row?.height ?? 0);
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

  async filesInFolders(folderIds: string[], lock?: RowLock): Promise<StoredFile[]> {
    const out: StoredFile[] = [];
    for (const batch of batches(folderIds)) {
      const rows = await this.withLock(this.db.selectFrom('files').selectAll().where('folder_id', 'in', batch).orderBy('id'), lock).execute();
      out.push(...rows.map(fileRow));
    }
    return out;
  }

  async lockFolders(ids: string[]) {
    if (this.dialect !== 'postgres') return;
    for (const batch of batches(ids)) await this.db.selectFrom('folders').select('id').where('id', 'in', batch).orderBy('id').forUpdate().execute();
  }

  async lockFolderTree() {
    if (this.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${sql.lit(FOLDER_TREE_LOCK)})`.execute(this.db);
  }

  async getFile(id: string, lock?: RowLock) {
    const row = await this.withLock(this.db.selectFrom('files').selectAll().where('id', '=', id), lock).executeTakeFirst();
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
      await this.db.deleteFrom('s3_uploads').where('file_id', 'in', batch).execute();
      await this.db.deleteFrom('files').where('id', 'in', batch).execute();
    }
  }

  async getPart(fileId: string, partNumber: number) {
    const row = await this.db.selectFrom('parts').selectAll().where('file_id', '=', fileId).where('part_number', '=', partNumber).executeTakeFirst();
    return row && partRow(row);
  }

  async upsertPart(part: StoredPart) {
    await this.db.insertInto('parts').values(part)
      .onConflict((oc) => oc.columns(['file_id', 'part_number']).doUpdateSet({ size: part.size, etag: part.etag, updated_at: part.updated_at, md5: part.md5 ?? null }))
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
      await sql`select pg_advisory_xact_lock(${sql.lit(EVENTS_LOCK)})`.execute(this.db);
    }
    const row = await this.db.insertInto('events').values({
      type: event.type,
      file_id: event.file_id ?? null,
      folder_id: event.folder_id ?? null,
      data: JSON.stringify(event.data),
      created_at: at,
    }).returning('seq').executeTakeFirstOrThrow();
    // Wakes other origins' edge feeds at commit (feed/event-wake.ts); delivered only if this commits.
    if (this.dialect === 'postgres') await sql`select pg_notify('coffer_events', ${String(row.seq)})`.execute(this.db);
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

  /** For KyselyMetadataStore.recordEdgeAcks: one row per edge, in key order. */
  upsertEdgeAcks(acks: EdgeAck[]): Promise<EdgeLease[]> {
    return this.leases.upsert(acks);
  }

  /** For KyselyMetadataStore.recordEdgeReport: the edge's last report replaces its earlier one. */
  async upsertEdgeReport(row: EdgeReportRow): Promise<void> {
    await this.db.insertInto('edge_reports').values(row)
      .onConflict((oc) => oc.column('edge_id').doUpdateSet({
        origin_id: sql`excluded.origin_id`, received_at: sql`excluded.received_at`, report: sql`excluded.report`,
      }))
      .execute();
  }

  /** For KyselyMetadataStore.markEdgesLapsed: compare-and-set on each row's version. */
  markEdgesLapsed(edges: Array<{ edge_id: string; version: number }>): Promise<string[]> {
    return this.leases.markLapsed(edges);
  }
}

export class KyselyMetadataStore implements MetadataStore {
  readonly read: MetadataTx;
  /** A SQLite store is one origin's (PostgresMetadataStore says otherwise). */
  readonly sharedByOrigins: boolean = false;

  private readonly leases: KyselyEdgeLeaseRows;

  constructor(protected readonly db: Kysely<Database>, readonly dialect: 'sqlite' | 'postgres') {
    this.read = new KyselyTx(db, dialect);
    this.leases = new KyselyEdgeLeaseRows(db, dialect);
  }

  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.db, provider: new CofferMigrations(this.dialect), migrationTableName: 'coffer_migrations', migrationLockTableName: 'coffer_migrations_lock' });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  }

  transaction<T>(fn: (tx: MetadataTx) => Promise<T>, opts: { durable?: boolean } = {}): Promise<T> {
    if (this.dialect === 'sqlite') {
      // BEGIN IMMEDIATE takes the write lock first, waiting up to busy_timeout for it: several
      // origin processes may share one SQLite file (WAL), and a deferred transaction that had
      // read before another process wrote could not write at all ("database is locked").
      return this.db.connection().execute(async (conn) => {
        // One reserved connection, so a relaxed setting covers this transaction alone.
        const relaxed = opts.durable === false;
        if (relaxed) await sql`pragma synchronous = normal`.execute(conn);
        try {
          await sql`begin immediate`.execute(conn);
          try {
            const result = await fn(new KyselyTx(conn, this.dialect));
            await sql`commit`.execute(conn);
            return result;
          } catch (err) {
            await sql`rollback`.execute(conn).catch(() => {});
            throw err;
          }
        } finally {
          if (relaxed) await sql`pragma synchronous = full`.execute(conn);
        }
      });
    }
    return this.db.transaction().execute((trx) => fn(new KyselyTx(trx, this.dialect)));
  }

  private readonly exclusiveRuns = new KeyedQueue<string>();

  /** A SQLite store belongs to one process: a queue per name in memory is enough. */
  async exclusive<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.exclusiveRuns.run(name, fn);
  }

  /** Names a `tryExclusive` of this process is running. */
  private readonly tried = new Set<string>();

  async tryExclusive<T>(name: string, fn: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }> {
    if (this.tried.has(name)) return { ran: false };
    this.tried.add(name);
    try {
      const release = await this.holdAcrossProcesses(name);
      if (!release) return { ran: false };
      try {
        return { ran: true, value: await fn() };
      } finally {
        await release();
      }
    } finally {
      this.tried.delete(name);
    }
  }

  /**
   * Takes `name` from other processes sharing the store, without waiting; returns how to give
   * it back, or null when another holds it. A SQLite store belongs to one process: nothing to take.
   */
  protected async holdAcrossProcesses(_name: string): Promise<(() => Promise<void>) | null> {
    return async () => {};
  }

  /** The SQL and parameters of one page exactly as listFolders/listFiles run it (for query-plan checks). */
  compilePage(table: 'files' | 'folders', q: PageQuery): { sql: string; parameters: readonly unknown[] } {
    return pageQuery(this.db, table, q).compile();
  }

  async listFolders(q: PageQuery): Promise<StoredFolder[]> {
    const rows = await pageQuery(this.db, 'folders', q).execute();
    return (rows as unknown as StoredFolder[]).map(folderRow);
  }

  async listFiles(q: PageQuery): Promise<StoredFile[]> {
    const rows = await pageQuery(this.db, 'files', q).execute();
    return rows.map(fileRow);
  }

  async countOpenUploads(): Promise<number> {
    const row = await this.db.selectFrom('files').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'uploading').executeTakeFirst();
    return Number(row?.n ?? 0);
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

  // ---- the edges' shared lease table (feed/hub.ts) ----------------------------

  async recordEdgeAcks(acks: EdgeAck[]): Promise<EdgeLease[]> {
    const rows = mergeAcks(acks);
    if (rows.length === 0) return [];
    // An origin answers a lease from the row as written, and other origins decide by the row:
    // on a database shared by origins, a crash of the database alone must not lose it, or another
    // origin could answer a change while that edge still serves from its cache. One origin's own
    // file loses the last of these only with the machine, and its edges' leases with it.
    return this.transaction((tx) => (tx as KyselyTx).upsertEdgeAcks(rows), { durable: this.sharedByOrigins });
  }

  edgeLeases(): Promise<EdgeLease[]> {
    return this.leases.all();
  }

  async markEdgesLapsed(edges: Array<{ edge_id: string; version: number }>): Promise<string[]> {
    if (edges.length === 0) return [];
    return this.transaction(async (tx) => (tx as KyselyTx).markEdgesLapsed(inKeyOrder(edges)));
  }

  markEdgeCaughtUp(edgeId: string, version: number): Promise<boolean> {
    return this.leases.markCaughtUp(edgeId, version);
  }

  pruneEdgeLeases(before: number): Promise<number> {
    return this.leases.prune(before);
  }

  // ---- the edges' last reports of themselves (feed/fleet.ts) --------------------

  recordEdgeReport(row: EdgeReportRow): Promise<void> {
    // An operator's view, written every few seconds per edge (20 a second at 200 edges): no sync
    // per report, which would stall the origin's loop behind the disk; a crash loses at most the last.
    return this.transaction((tx) => (tx as KyselyTx).upsertEdgeReport(row), { durable: false });
  }

  async edgeReports(): Promise<EdgeReportRow[]> {
    const rows = await this.db.selectFrom('edge_reports').selectAll().execute();
    // PostgreSQL answers bigint as text.
    return rows.map((r) => ({ ...r, received_at: Number(r.received_at) }));
  }

  async pruneEdgeReports(before: number): Promise<number> {
    const result = await this.db.deleteFrom('edge_reports').where('received_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}
