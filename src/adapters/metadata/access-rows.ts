/** Keys and upload grants (contract §10) over Kysely: the same queries on SQLite and PostgreSQL. */
import type { Kysely, Transaction } from 'kysely';
import type { StoredGrant, StoredKey } from '../../core/access.js';
import type { GrantRows, KeyRows } from '../../core/ports.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function keyRow(row: StoredKey): StoredKey {
  return { ...row, created_at: Number(row.created_at), expires_at: num(row.expires_at), revoked_at: num(row.revoked_at), last_used_at: num(row.last_used_at) };
}

function grantRow(row: StoredGrant): StoredGrant {
  return {
    ...row, max_size: Number(row.max_size), max_files: Number(row.max_files), used_files: Number(row.used_files),
    created_at: Number(row.created_at), expires_at: Number(row.expires_at),
  };
}

export class KyselyKeyRows implements KeyRows {
  constructor(private readonly db: Db) {}

  async insert(key: StoredKey): Promise<void> {
    await this.db.insertInto('access_keys').values(key).execute();
  }

  async get(id: string): Promise<StoredKey | undefined> {
    const row = await this.db.selectFrom('access_keys').selectAll().where('id', '=', id).executeTakeFirst();
    return row && keyRow(row);
  }

  async list(): Promise<StoredKey[]> {
    const rows = await this.db.selectFrom('access_keys').selectAll().orderBy('created_at').orderBy('id').execute();
    return rows.map(keyRow);
  }

  async revoke(id: string, at: number): Promise<void> {
    await this.db.updateTable('access_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  }

  async touch(id: string, at: number): Promise<void> {
    await this.db.updateTable('access_keys').set({ last_used_at: at }).where('id', '=', id).execute();
  }
}

export class KyselyGrantRows implements GrantRows {
  constructor(private readonly db: Db) {}

  async insert(grant: StoredGrant): Promise<void> {
    await this.db.insertInto('upload_grants').values(grant).execute();
  }

  async get(id: string): Promise<StoredGrant | undefined> {
    const row = await this.db.selectFrom('upload_grants').selectAll().where('id', '=', id).executeTakeFirst();
    return row && grantRow(row);
  }

  async use(id: string): Promise<boolean> {
    // One statement: two origins starting uploads under one grant cannot both take its last file.
    const result = await this.db.updateTable('upload_grants')
      .set((eb) => ({ used_files: eb('used_files', '+', 1) }))
      .where('id', '=', id)
      .whereRef('used_files', '<', 'max_files')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }
}
