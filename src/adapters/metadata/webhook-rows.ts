/** Webhooks and their deliveries (contract §11) over Kysely: the same queries on SQLite and PostgreSQL. */
import type { Kysely, Transaction } from 'kysely';
import { sql } from './kysely.js';
import { ROOT_MAKER, type StoredDelivery, type StoredWebhook } from '../../core/webhooks.js';
import type { FolderMove, WebhookRows } from '../../core/ports.js';
import type { Database } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function webhookRow(row: StoredWebhook): StoredWebhook {
  return { ...row, created_at: Number(row.created_at), cursor_seq: Number(row.cursor_seq), folder_id: row.folder_id ?? null, made_by: row.made_by ?? ROOT_MAKER };
}

function deliveryRow(row: StoredDelivery): StoredDelivery {
  return {
    ...row, event_seq: Number(row.event_seq), attempts: Number(row.attempts), next_attempt_at: Number(row.next_attempt_at),
    locked_until: Number(row.locked_until), last_status: numOrNull(row.last_status), created_at: Number(row.created_at),
    delivered_at: numOrNull(row.delivered_at),
  };
}

export class KyselyWebhookRows implements WebhookRows {
  constructor(private readonly db: Db, private readonly dialect: 'sqlite' | 'postgres') {}

  async insert(webhook: StoredWebhook): Promise<void> {
    await this.db.insertInto('webhooks').values(webhook).execute();
  }

  async get(id: string, lock = false): Promise<StoredWebhook | undefined> {
    let q = this.db.selectFrom('webhooks').selectAll().where('id', '=', id);
    // Held to the end of the transaction: one origin at a time turns a webhook's events into deliveries.
    if (lock && this.dialect === 'postgres') q = q.forUpdate().skipLocked();
    const row = await q.executeTakeFirst();
    return row && webhookRow(row);
  }

  async list(): Promise<StoredWebhook[]> {
    return (await this.db.selectFrom('webhooks').selectAll().orderBy('created_at').orderBy('id').execute()).map(webhookRow);
  }

  async delete(id: string): Promise<boolean> {
    await this.db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
    const r = await this.db.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async advance(id: string, cursorSeq: number): Promise<void> {
    await this.db.updateTable('webhooks').set({ cursor_seq: cursorSeq }).where('id', '=', id).execute();
  }

  async insertDeliveries(rows: StoredDelivery[]): Promise<void> {
    for (let i = 0; i < rows.length; i += 200) await this.db.insertInto('webhook_deliveries').values(rows.slice(i, i + 200)).execute();
  }

  async getDelivery(id: string): Promise<StoredDelivery | undefined> {
    const row = await this.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
    return row && deliveryRow(row);
  }

  async listDeliveries(webhookId: string, before: { seq: number; id: string } | null, limit: number): Promise<StoredDelivery[]> {
    let q = this.db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId);
    if (before) q = q.where((eb) => eb.or([eb('event_seq', '<', before.seq), eb.and([eb('event_seq', '=', before.seq), eb('id', '<', before.id)])]));
    const rows = await q.orderBy('event_seq', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(deliveryRow);
  }

  async claimDue(now: number, limit: number, holdUntil: number): Promise<StoredDelivery[]> {
    // Due, not held by another sender, and first in line for its key: a later event for the
    // same file waits while an earlier one is still being retried.
    let q = this.db.selectFrom('webhook_deliveries as d').selectAll('d')
      .where('d.status', '=', 'pending')
      .where('d.next_attempt_at', '<=', now)
      .where('d.locked_until', '<=', now)
      .where(({ not, exists, selectFrom }) => not(exists(
        selectFrom('webhook_deliveries as e').select(sql`1`.as('one'))
          .whereRef('e.webhook_id', '=', 'd.webhook_id')
          .whereRef('e.order_key', '=', 'd.order_key')
          .where('e.status', '=', 'pending')
          .whereRef('e.event_seq', '<', 'd.event_seq'),
      )))
      .orderBy('d.next_attempt_at')
      .limit(limit);
    if (this.dialect === 'postgres') q = q.forUpdate().skipLocked();
    const rows = (await q.execute()).map(deliveryRow);
    if (rows.length > 0) {
      await this.db.updateTable('webhook_deliveries').set({ locked_until: holdUntil }).where('id', 'in', rows.map((r) => r.id)).execute();
    }
    return rows.map((r) => ({ ...r, locked_until: holdUntil }));
  }

  async updateDelivery(id: string, patch: Partial<Omit<StoredDelivery, 'id'>>): Promise<void> {
    await this.db.updateTable('webhook_deliveries').set(patch).where('id', '=', id).execute();
  }

  async folderParents(folderId: string): Promise<FolderMove[]> {
    const rows = await this.db.selectFrom('events').select(['seq', 'data']).where('folder_id', '=', folderId)
      .where('type', 'in', ['folder.created', 'folder.updated']).orderBy('seq').execute();
    return rows.map((r) => ({ seq: Number(r.seq), parent_id: (JSON.parse(r.data) as { parent_id?: string | null }).parent_id ?? null }));
  }
}
