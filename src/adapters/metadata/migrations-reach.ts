/**
 * Migrations of the one-lock round: who made a key, which subtree a webhook belongs to, which
 * key a session was signed in with. Same conventions as migrations.ts.
 */
import type { Kysely, Migration } from 'kysely';

type Dialect = 'sqlite' | 'postgres';

/** Who made each key (its maker's id, or "root"); keys made before lineage was kept count as made by the root key. */
const keyLineage: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('access_keys').addColumn('created_by', 'text', (c) => c.notNull().defaultTo('root')).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('access_keys').dropColumn('created_by').execute();
  },
};

/**
 * The fingerprint of the root key a session was signed in with, and a root-made grant made
 * with; rows older than it have none and are refused (fail closed: sign in again).
 */
const sessionKey: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('sessions').addColumn('root_fingerprint', 'text').execute();
    await db.schema.alterTable('upload_grants').addColumn('root_fingerprint', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('upload_grants').dropColumn('root_fingerprint').execute();
    await db.schema.alterTable('sessions').dropColumn('root_fingerprint').execute();
  },
};

/**
 * The subtree a webhook belongs to (its maker's folder; null: the whole tree) and its maker (a
 * key id, or "root"); webhooks made before belong to the root key. The index finds a folder's
 * parents in the log, where a webhook's sender places events about folders since deleted.
 */
const webhookReach: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('webhooks').addColumn('folder_id', 'text').execute();
    await db.schema.alterTable('webhooks').addColumn('made_by', 'text', (c) => c.notNull().defaultTo('root')).execute();
    await db.schema.createIndex('events_folder').on('events').columns(['folder_id', 'seq']).execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('events_folder').execute();
    await db.schema.alterTable('webhooks').dropColumn('made_by').execute();
    await db.schema.alterTable('webhooks').dropColumn('folder_id').execute();
  },
};

/**
 * Who made a tus upload ("root", "key:{id}" or "grant:{id}"): a final upload takes only partial
 * uploads its own caller made. Uploads made before have none and count as made by the root key
 * (a grant's, by its grant).
 */
const tusMaker: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('tus_uploads').addColumn('made_by', 'text').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.alterTable('tus_uploads').dropColumn('made_by').execute();
  },
};

/** Each entry is added to CofferMigrations in order of its name. */
export function reachMigrations(_dialect: Dialect): Record<string, Migration> {
  return {
    '0011_key_lineage': keyLineage,
    '0012_webhook_reach': webhookReach,
    '0013_session_key': sessionKey,
    '0014_tus_maker': tusMaker,
  };
}
