/**
 * The tree by path, as the S3 interface needs it (contract §12): folders found by name from the
 * root, made as needed, files named in a folder (the newest of several, "S3 sees the newest"),
 * removed by name, and a folder's entries in S3 key order. A confined caller sees its own
 * subtree, and the folders on the way down to it by name only (access.ts, `Sight`).
 */
import { errors } from '../core/errors.js';
import { validateName } from '../core/names.js';
import type { MetadataTx, S3Entry, StoredFile, StoredFolder } from '../core/ports.js';
import type { Caller } from '../core/access.js';
import type { ServiceContext } from './context.js';
import { childPlace, reachOf, rootPlace, sightOf, type Place, type Sight } from './access.js';
import { authorize, requireNotOwnTop } from './policy.js';
import { removeFiles } from './trash.js';
import { addFolder } from './tree.js';
import { isEmptyKey, refuseHiddenAtTop } from './empty-name.js';

/** A folder found by path: null is the root. */
export interface Located {
  folder: StoredFolder | null;
  place: Place;
}

/** A page of a folder's entries as a caller sees them. */
export interface SightedPage {
  entries: Array<S3Entry & { place: Place }>;
  /** Whether the store has entries after `last`. */
  more: boolean;
  /** The key of the store's last entry on this page, seen or not; null on an empty page. */
  last: string | null;
}

const byNewest = (a: StoredFile, b: StoredFile): number =>
  (b.completed_at ?? 0) - (a.completed_at ?? 0) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

export class Paths {
  constructor(private readonly c: ServiceContext) {}

  /** What this caller sees; computed once per request and handed back to the calls below. */
  sight(caller: Caller): Promise<Sight> {
    return sightOf(this.c.meta.read, caller);
  }

  /** The folders the caller sees at the top: the buckets. */
  async topFolders(caller: Caller, sight: Sight): Promise<StoredFolder[]> {
    authorize(caller, 'folder.read');
    const out: StoredFolder[] = [];
    let after: string | null = null;
    for (;;) {
      const page: { entries: S3Entry[]; more: boolean } = await this.c.meta.read.s3.entries(null, after, 1000);
      for (const e of page.entries) if (e.kind === 'folder' && childPlace(sight, rootPlace(sight), e.folder.id)) out.push(e.folder);
      if (!page.more || page.entries.length === 0) return out;
      after = page.entries[page.entries.length - 1]!.key;
    }
  }

  /** Walks folder names down from the root; null when one is missing or out of the caller's sight. */
  async locate(sight: Sight, names: readonly string[], tx: MetadataTx = this.c.meta.read): Promise<Located | null> {
    let here: Located = { folder: null, place: rootPlace(sight) };
    for (const name of names) {
      const folder = await tx.findFolderByName(here.folder?.id ?? null, name);
      const place = folder ? childPlace(sight, here.place, folder.id) : null;
      if (!folder || !place) return null;
      here = { folder, place };
    }
    return here;
  }

  /** Whether the folder of this id still stands: a write into it that failed answers by this. */
  async stands(folderId: string): Promise<boolean> {
    return (await this.c.meta.read.getFolder(folderId)) !== undefined;
  }

  /** The newest ready file of this name in a folder the caller reaches, or null. */
  async newest(caller: Caller, at: Located, name: string): Promise<StoredFile | null> {
    authorize(caller, 'file.read');
    if (at.place !== 'inside') return null;
    return (await this.c.meta.read.s3.filesNamed(at.folder?.id ?? null, name))[0] ?? null;
  }

  /**
   * The folder at `names` below `from`, made where missing (marked as made for S3, so that
   * emptying it through S3 removes it again). Throws 404 when the caller may not make them.
   */
  async ensureFolders(caller: Caller, sight: Sight, from: Located, names: readonly string[]): Promise<Located> {
    authorize(caller, 'folder.write');
    const existing = await this.walk(sight, from, names, this.c.meta.read);
    if (existing.missing.length === 0) return existing.at;
    const { at, seq } = await this.c.meta.transaction(async (tx) => {
      await tx.lockFolderTree();
      const found = await this.walk(sight, from, names, tx);
      let here = found.at;
      if (found.missing.length > 0 && here.place !== 'inside') throw errors.outOfReach();
      const chain = here.folder ? await tx.folderChain(here.folder.id) : [];
      this.c.checkDepth(chain, found.missing.length - 1);
      let seq = 0;
      for (const raw of found.missing) {
        const made = await addFolder(this.c, tx, { name: validateName(raw), parentId: here.folder?.id ?? null, visibility: 'Public', s3Implicit: true });
        seq = made.seq;
        here = { folder: made.folder, place: 'inside' };
      }
      return { at: here, seq };
    });
    if (seq) await this.c.publish(seq);
    return at;
  }

  /** How far `names` reach below `from`: the deepest folder there, and the names still missing below it. */
  private async walk(sight: Sight, from: Located, names: readonly string[], tx: MetadataTx): Promise<{ at: Located; missing: string[] }> {
    let here = from;
    for (let i = 0; i < names.length; i++) {
      const folder = await tx.findFolderByName(here.folder?.id ?? null, names[i]!);
      if (!folder) return { at: here, missing: names.slice(i) };
      const place = childPlace(sight, here.place, folder.id);
      if (!place) throw errors.outOfReach();
      here = { folder, place };
    }
    return { at: here, missing: [] };
  }

  /**
   * Removes every ready file of these names in a folder (S3 sees one file per name, so all of
   * them go), then the folders made for S3 that this leaves empty, and answers once every edge
   * has the change. Names with no file are no error.
   */
  async removeNamed(caller: Caller, at: Located, names: readonly string[]): Promise<void> {
    authorize(caller, 'file.write');
    if (at.place !== 'inside') throw errors.outOfReach();
    const folderId = at.folder?.id ?? null;
    const seq = await this.c.meta.transaction(async (tx) => {
      let seq = 0;
      for (const name of new Set(names)) seq = Math.max(seq, await removeFiles(tx, await tx.s3.filesNamed(folderId, name, 'update'), this.c.now()));
      return Math.max(seq, await this.prune(tx, folderId, reachOf(caller)));
    });
    this.c.emptyTrash();
    if (seq) await this.c.publish(seq);
  }

  /**
   * After `file` became ready: removes the other files of its name in its folder that completed
   * before it (a later PUT of the same key wins), and answers once every edge has the change.
   */
  async replaceOlder(file: StoredFile): Promise<void> {
    const seq = await this.c.meta.transaction(async (tx) => {
      const same = await tx.s3.filesNamed(file.folder_id, file.name, 'update');
      const older = same.filter((f) => f.id !== file.id && byNewest(file, f) < 0);
      return removeFiles(tx, older, this.c.now());
    });
    this.c.emptyTrash();
    if (seq) await this.c.publish(seq);
  }

  /**
   * Removes empty folders made for S3, from `folderId` up; never a top-level folder (a bucket),
   * nor the folder a confined caller is confined to (`top`) or any above it.
   */
  private async prune(tx: MetadataTx, folderId: string | null, top: string | null): Promise<number> {
    let seq = 0;
    let id = folderId;
    while (id !== null && id !== top) {
      const folder = await tx.getFolder(id, 'update');
      if (!folder || folder.s3_implicit !== 1 || folder.parent_id === null) break;
      await tx.lockFolderTree();
      const children = await tx.countChildren(folder.id);
      if (children.files > 0 || children.folders > 0) break;
      await tx.deleteFolders([folder.id]);
      seq = await tx.appendEvent({ type: 'folder.deleted', folder_id: folder.id, data: { folder_id: folder.id } }, this.c.now());
      id = folder.parent_id;
    }
    return seq;
  }

  /**
   * A page of a folder's entries in S3 key order after `after`, as the caller sees them: on the
   * way down to a confined caller's folder, only the next folder of that way.
   */
  async entries(caller: Caller, sight: Sight, at: Located, after: string | null, limit: number): Promise<SightedPage> {
    authorize(caller, 'folder.read');
    const page = await this.c.meta.read.s3.entries(at.folder?.id ?? null, after, limit);
    const entries: Array<S3Entry & { place: Place }> = [];
    for (const e of page.entries) {
      if (e.kind === 'file') {
        // At a bucket's top a file of the empty name would be the key "": no key, so no entry.
        if (at.place === 'inside' && !isEmptyKey(e.file.name, at.folder)) entries.push({ ...e, place: 'inside' });
      } else {
        const place = childPlace(sight, at.place, e.folder.id);
        if (place) entries.push({ ...e, place });
      }
    }
    // The page may shrink here: `last` still says where the store's page ended.
    return { entries, more: page.more, last: page.entries[page.entries.length - 1]?.key ?? null };
  }

  /**
   * Deletes a top-level folder whose subtree holds no file at all (folders alone do not count:
   * S3 would call it empty); 409 folder_not_empty otherwise.
   */
  async removeTopFolder(caller: Caller, folderId: string): Promise<void> {
    authorize(caller, 'folder.write');
    const seq = await this.c.meta.transaction(async (tx) => {
      await tx.lockFolderTree();
      const folder = await this.c.requireFolderFor(tx, caller, folderId);
      requireNotOwnTop(caller, folder.id);
      const ids = [folder.id, ...(await tx.descendantFolderIds(folder.id))];
      await tx.lockFolders(ids);
      // The folders below first: files at the top alone may be ones S3 lists under no key, and the answer then says so.
      for (const id of [...ids.slice(1), folder.id]) {
        const { files } = await tx.countChildren(id);
        if (files === 0) continue;
        if (id === folder.id) await refuseHiddenAtTop(tx, folder, files);
        throw errors.folderNotEmpty(folder.id, files, 0);
      }
      await tx.deleteFolders(ids);
      let seq = 0;
      for (const id of [...ids].reverse()) seq = await tx.appendEvent({ type: 'folder.deleted', folder_id: id, data: { folder_id: id } }, this.c.now());
      return seq;
    });
    await this.c.publish(seq);
  }
}
