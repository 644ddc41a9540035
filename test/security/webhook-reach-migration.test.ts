/**
 * Webhooks made before they belonged to a subtree belong to the root (issue 23, finding 2):
 * the migration gives them the whole tree and the root as maker; and the log places folders,
 * deleted ones included, for the sender.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import BetterSqlite3 from '../../src/adapters/metadata/better-sqlite3.js';
import { Kysely, Migrator, SqliteDialect } from '../../src/adapters/metadata/kysely.js';
import { CofferMigrations } from '../../src/adapters/metadata/migrations.js';
import { openSqliteStore } from '../../src/adapters/metadata/sqlite.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coffer-webhook-migration-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('0012_webhook_reach', () => {
  test('a webhook made before it belongs to the root, over the whole tree', async () => {
    const path = join(dir, 'meta.db');
    const db = new Kysely<any>({ dialect: new SqliteDialect({ database: new BetterSqlite3(path) }) });
    const migrator = new Migrator({ db, provider: new CofferMigrations('sqlite'), migrationTableName: 'coffer_migrations', migrationLockTableName: 'coffer_migrations_lock' });
    const { error } = await migrator.migrateTo('0010_s3');
    expect(error).toBeUndefined();
    await db.insertInto('webhooks').values({ id: 'old', url: 'https://example.com/h', events: '["*"]', secret: 'whsec_x', created_at: 1, cursor_seq: 0 }).execute();
    await db.insertInto('events').values([
      { type: 'folder.created', file_id: null, folder_id: 'f1', data: JSON.stringify({ folder_id: 'f1', parent_id: null }), created_at: 1 },
      { type: 'folder.updated', file_id: null, folder_id: 'f1', data: JSON.stringify({ folder_id: 'f1', parent_id: 'f0' }), created_at: 2 },
      { type: 'folder.deleted', file_id: null, folder_id: 'f1', data: JSON.stringify({ folder_id: 'f1' }), created_at: 3 },
    ]).execute();
    await db.destroy();

    const store = await openSqliteStore(path);
    try {
      expect(await store.read.webhooks.get('old')).toMatchObject({ folder_id: null, made_by: 'root' });
      expect(await store.read.webhooks.folderParents('f1')).toEqual([{ seq: 1, parent_id: null }, { seq: 2, parent_id: 'f0' }]);
    } finally {
      await store.close();
    }
  });
});
