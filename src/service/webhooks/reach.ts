/**
 * What a webhook may still be told (docs/events.md "Whose events"): events inside the subtree
 * of the folder its maker was confined to, and nothing once its maker key is revoked or has
 * expired.
 *
 * An event is inside when the folder it leaves its file or folder in lies in the subtree, as
 * the log stood at that event: a file's folder, or the folder itself (after a move, its new
 * place; a file or folder moved out is not reported, so that no receiver learns where it went).
 * Folders are placed by their own events in the log (`folder.created` and `folder.updated`
 * carry the parent), so an event about a folder deleted or moved since is placed where it
 * happened, and placing an event never depends on when the sender reads it.
 */
import { MAX_FOLDER_DEPTH } from '../../core/upload.js';
import { ROOT_MAKER, type StoredWebhook } from '../../core/webhooks.js';
import { keyStanding } from '../lineage.js';
import type { FolderMove, KeyRows, StoredEvent, WebhookRows } from '../../core/ports.js';

/**
 * Places events for one batch read from the log. Every event of the batch had committed
 * before it was read, and so had every earlier one: the folders' histories loaded afterwards
 * are complete up to the batch's last event. A new batch needs a new instance.
 */
export class EventPlaces {
  private readonly moves = new Map<string, Promise<FolderMove[]>>();

  constructor(private readonly rows: Pick<WebhookRows, 'folderParents'>) {}

  /** Whether the event happened inside the subtree of `top` (the folder itself included). */
  async inside(top: string, e: StoredEvent): Promise<boolean> {
    let id: string | null = e.folder_id;
    for (let depth = 0; id !== null && depth <= MAX_FOLDER_DEPTH; depth++) {
      if (id === top) return true;
      id = await this.parentAt(id, e.seq);
    }
    return false;
  }

  /** The folder's parent as of event `seq`; a folder the log has no place for counts as at the root (outside). */
  private async parentAt(folderId: string, seq: number): Promise<string | null> {
    let list = this.moves.get(folderId);
    if (!list) {
      list = this.rows.folderParents(folderId);
      this.moves.set(folderId, list);
    }
    let parent: string | null = null;
    for (const m of await list) {
      if (m.seq > seq) break;
      parent = m.parent_id;
    }
    return parent;
  }
}

/** Whether the webhook's maker still stands: the root, or a key neither revoked nor expired (a key gone counts as revoked). */
export async function makerStands(keys: Pick<KeyRows, 'get'>, w: StoredWebhook, now: number): Promise<boolean> {
  if (w.made_by === ROOT_MAKER) return true;
  const key = await keys.get(w.made_by);
  // The whole chain of makers counts, as for the key's own requests.
  return key !== undefined && (await keyStanding(keys, key, now)).ok;
}
