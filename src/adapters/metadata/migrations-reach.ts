/**
 * Migrations of the one-lock round: who made a key, which subtree a webhook belongs to, which
 * key a session was signed in with. Same conventions as migrations.ts.
 */
import type { Kysely, Migration } from 'kysely';

type Dialect = 'sqlite' | 'postgres';

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
    '0012_webhook_reach': webhookReach,
    '0014_tus_maker': tusMaker,
  };
}
