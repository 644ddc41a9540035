/**
 * One set of migrations for SQLite and PostgreSQL. Types are chosen to mean the same on
 * both; only auto-numbered keys differ. Times are Unix milliseconds in bigint columns.
 */
import type { Kysely, Migration, MigrationProvider } from 'kysely';
import { sql } from './kysely.js';
import { reachMigrations } from './migrations-reach.js';

type Dialect = 'sqlite' | 'postgres';

function serialKey(dialect: Dialect) {
  return dialect === 'postgres' ? ('bigserial' as const) : ('integer' as const);
}

function initial(dialect: Dialect): Migration {
  // Sort keys compare bytes on both engines, so pages line up the same way. Ids are sort keys
  // too (they break ties), and the columns that refer to them match their collation.
  const sortText = dialect === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('folders')
        .addColumn('id', sortText, (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('name_key', sortText, (c) => c.notNull())
        .addColumn('visibility', 'text', (c) => c.notNull())
        .addColumn('parent_id', sortText, (c) => c.references('folders.id'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      // Names are unique among the sub-folders of one parent, the root included.
      await sql`create unique index folders_parent_name on folders (coalesce(parent_id, ''), name)`.execute(db);
      await db.schema.createIndex('folders_parent_name_key').on('folders').columns(['parent_id', 'name_key', 'id']).execute();
      await db.schema.createIndex('folders_parent_created').on('folders').columns(['parent_id', 'created_at', 'id']).execute();

      await db.schema
        .createTable('files')
        .addColumn('id', sortText, (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('name_key', sortText, (c) => c.notNull())
        .addColumn('visibility', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('file_type', 'text', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('folder_id', sortText, (c) => c.references('folders.id'))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('sha256', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('completed_at', 'bigint')
        .addColumn('bucket', 'text', (c) => c.notNull())
        .addColumn('blob_key', 'text', (c) => c.notNull())
        .addColumn('upload_id', 'text')
        .addColumn('upload_expires_at', 'bigint')
        .execute();
      for (const col of ['name_key', 'created_at', 'size']) {
        await db.schema.createIndex(`files_folder_${col}`).on('files').columns(['folder_id', 'status', col, 'id']).execute();
      }
      await db.schema.createIndex('files_upload_expiry').on('files').columns(['status', 'upload_expires_at']).execute();

      await db.schema
        .createTable('parts')
        .addColumn('file_id', sortText, (c) => c.notNull().references('files.id').onDelete('cascade'))
        .addColumn('part_number', 'integer', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('etag', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('parts_pk', ['file_id', 'part_number'])
        .execute();

      await db.schema
        .createTable('events')
        .addColumn('seq', serialKey(dialect), (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('file_id', 'text')
        .addColumn('folder_id', 'text')
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('blob_trash')
        .addColumn('id', serialKey(dialect), (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
        .addColumn('bucket', 'text', (c) => c.notNull())
        .addColumn('blob_key', 'text', (c) => c.notNull())
        .addColumn('upload_id', 'text')
        .addColumn('object', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<any>) {
      for (const t of ['blob_trash', 'events', 'parts', 'files', 'folders']) await db.schema.dropTable(t).execute();
    },
  };
}

/** The Playground's "Modified" column: pages by updated_at read an index in order, as the other sorts do. */
const sortByUpdated: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.createIndex('folders_parent_updated').on('folders').columns(['parent_id', 'updated_at', 'id']).execute();
    await db.schema.createIndex('files_folder_updated_at').on('files').columns(['folder_id', 'status', 'updated_at', 'id']).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('files_folder_updated_at').execute();
    await db.schema.dropIndex('folders_parent_updated').execute();
  },
};

/** Playground sessions, kept in the database so sign-out ends them on every origin sharing it. */
const sessions: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('sessions')
      .addColumn('token_hash', 'text', (c) => c.primaryKey())
      .addColumn('csrf_token', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    // The sweeper deletes by expiry.
    await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('sessions').execute();
  },
};

/**
 * The edges' shared lease table (feed/hub.ts): what each edge has applied, until when
 * it counts as live, and whether it may hold a lease, written by whichever origin hears it, so
 * that a change made on one origin waits for edges following another.
 */
const edgeLeases: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('edge_leases')
      .addColumn('edge_id', 'text', (c) => c.primaryKey())
      .addColumn('origin_id', 'text', (c) => c.notNull())
      .addColumn('acked_seq', 'bigint', (c) => c.notNull())
      .addColumn('heard_at', 'bigint', (c) => c.notNull())
      .addColumn('live_until', 'bigint', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('version', 'bigint', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('edge_leases').execute();
  },
};

/**
 * Keys and upload grants (contract §10), and on files: the grant an upload was started under
 * and when the file's signed links were last revoked.
 */
function access(dialect: Dialect): Migration {
  const sortText = dialect === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('access_keys')
        .addColumn('id', sortText, (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('secret_hash', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('folder_id', sortText)
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .addColumn('last_used_at', 'bigint')
        .execute();
      await db.schema
        .createTable('upload_grants')
        .addColumn('id', sortText, (c) => c.primaryKey())
        .addColumn('secret_hash', 'text', (c) => c.notNull())
        .addColumn('folder_id', sortText)
        .addColumn('visibility', 'text')
        .addColumn('max_size', 'bigint', (c) => c.notNull())
        .addColumn('content_types', 'text')
        .addColumn('max_files', 'integer', (c) => c.notNull())
        .addColumn('used_files', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.notNull())
        .execute();
      await db.schema.alterTable('files').addColumn('grant_id', 'text').execute();
      await db.schema.alterTable('files').addColumn('links_revoked_at', 'bigint').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('files').dropColumn('links_revoked_at').execute();
      await db.schema.alterTable('files').dropColumn('grant_id').execute();
      await db.schema.dropTable('upload_grants').execute();
      await db.schema.dropTable('access_keys').execute();
    },
  };
}

/** Webhooks (contract §11): subscriptions, and the deliveries made from the event log for each. */
function webhooks(dialect: Dialect): Migration {
  const sortText = dialect === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhooks')
        .addColumn('id', sortText, (c) => c.primaryKey())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('events', 'text', (c) => c.notNull())
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('cursor_seq', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', sortText, (c) => c.primaryKey())
        .addColumn('webhook_id', sortText, (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('event_seq', 'bigint', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('order_key', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('locked_until', 'bigint', (c) => c.notNull())
        .addColumn('last_status', 'integer')
        .addColumn('last_response', 'text')
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('delivered_at', 'bigint')
        .execute();
      await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
      await db.schema.createIndex('webhook_deliveries_order').on('webhook_deliveries').columns(['webhook_id', 'order_key', 'status', 'event_seq']).execute();
      await db.schema.createIndex('webhook_deliveries_list').on('webhook_deliveries').columns(['webhook_id', 'event_seq', 'id']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('webhook_deliveries').execute();
      await db.schema.dropTable('webhooks').execute();
    },
  };
}

/** Downloads and bytes each file's edges reported, per UTC day (contract §11's usage). */
function usage(dialect: Dialect): Migration {
  const sortText = dialect === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('file_usage')
        .addColumn('file_id', sortText, (c) => c.notNull())
        .addColumn('day', 'integer', (c) => c.notNull())
        .addColumn('downloads', 'bigint', (c) => c.notNull())
        .addColumn('bytes', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('file_usage_pk', ['file_id', 'day'])
        .execute();
      await db.schema.createIndex('file_usage_day').on('file_usage').column('day').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('file_usage').execute();
    },
  };
}

/** tus uploads (contract §9): what tus keeps beside each upload's file record. */
function tus(dialect: Dialect): Migration {
  const sortText = dialect === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('tus_uploads')
        .addColumn('file_id', sortText, (c) => c.primaryKey().references('files.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('metadata', 'text')
        .addColumn('concat', 'text')
        .addColumn('tail_key', 'text')
        .addColumn('tail_size', 'bigint', (c) => c.notNull())
        .addColumn('next_tail_key', 'text')
        .addColumn('version', 'bigint', (c) => c.notNull())
        .addColumn('joined', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      // A grant's open partial uploads are summed at each new one.
      await db.schema.createIndex('files_grant').on('files').column('grant_id').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('files_grant').execute();
      await db.schema.dropTable('tus_uploads').execute();
    },
  };
}

/**
 * The S3 interface (contract §12): each key's sealed SigV4 secret; on files the S3 ETag and
 * what the client stored with the object; each part's MD5; folders the S3 interface made for a
 * key's path; its open multipart uploads; and indexes that read names in S3's key order
 * (bytes of UTF-8: "C" on PostgreSQL, SQLite's own).
 */
function s3(dialect: Dialect): Migration {
  const sortText = dialect === 'postgres' ? sql`text collate "C"` : sql`text`;
  const bytes = dialect === 'postgres' ? sql` collate "C"` : sql``;
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('access_keys').addColumn('sigv4_secret', 'text').execute();
      await db.schema.alterTable('files').addColumn('s3_etag', 'text').execute();
      await db.schema.alterTable('files').addColumn('s3_meta', 'text').execute();
      await db.schema.alterTable('parts').addColumn('md5', 'text').execute();
      await db.schema.alterTable('folders').addColumn('s3_implicit', 'integer').execute();
      await db.schema
        .createTable('s3_uploads')
        .addColumn('file_id', sortText, (c) => c.primaryKey())
        .addColumn('bucket_id', sortText, (c) => c.notNull())
        .addColumn('object_key', sortText, (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('s3_uploads_key').on('s3_uploads').columns(['bucket_id', 'object_key', 'file_id']).execute();
      await sql`create index files_s3_name on files (folder_id, status, (name${bytes}), completed_at)`.execute(db);
      await sql`create index folders_s3_name on folders (parent_id, ((name || '/')${bytes}))`.execute(db);
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('folders_s3_name').execute();
      await db.schema.dropIndex('files_s3_name').execute();
      await db.schema.dropTable('s3_uploads').execute();
      await db.schema.alterTable('folders').dropColumn('s3_implicit').execute();
      await db.schema.alterTable('parts').dropColumn('md5').execute();
      await db.schema.alterTable('files').dropColumn('s3_meta').execute();
      await db.schema.alterTable('files').dropColumn('s3_etag').execute();
      await db.schema.alterTable('access_keys').dropColumn('sigv4_secret').execute();
    },
  };
}

/**
 * Each edge's last report of itself (name, parents, cache, counts), so that any origin sharing
 * the store lists every edge beside its lease (feed/fleet.ts).
 */
const edgeReports: Migration = {
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('edge_reports')
      .addColumn('edge_id', 'text', (c) => c.primaryKey())
      .addColumn('origin_id', 'text', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .addColumn('report', 'text', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('edge_reports').execute();
  },
};

export class CofferMigrations implements MigrationProvider {
  constructor(private readonly dialect: Dialect) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    return { '0001_initial': initial(this.dialect), '0002_sort_by_updated': sortByUpdated, '0003_sessions': sessions, '0004_edge_leases': edgeLeases,
      '0006_access': access(this.dialect),
      '0007_webhooks': webhooks(this.dialect),
      '0008_usage': usage(this.dialect),
      '0009_tus': tus(this.dialect),
      '0010_s3': s3(this.dialect),
      ...reachMigrations(this.dialect),
      '0015_edge_reports': edgeReports,
    };
  }
}
