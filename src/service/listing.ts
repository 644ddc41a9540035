/** Listing and search (contract §5): folders first, then files, in keyset pages. */
import { errors } from '../core/errors.js';
import { nameKey } from '../core/names.js';
import type { PageQuery, SortField, SortOrder, StoredFile, StoredFolder } from '../core/ports.js';
import type { FolderRecord, ListRequest, ListResponse, SearchRequest, SearchResponse } from '../core/api.js';
import { ROOT_CONTEXT, chainIsComplete, childContext, contextOfChain, fileRecord, folderRecord, type FolderContext } from './records.js';
import { cursorScope, decodeCursor, encodeCursor } from './cursor.js';
import type { ServiceContext } from './context.js';
import type { Caller } from '../core/access.js';
import { reachOf } from './access.js';
import { authorize, authorizeFolder } from './policy.js';

function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw errors.invalidField('invalid_limit', 'limit', '"limit" must be an integer from 1 to 1000.');
  return limit;
}

export class Listing {
  constructor(private readonly c: ServiceContext) {}

  private async page(parentId: string | null, sort: SortField, order: SortOrder, limit: number, cursor: string | null | undefined, query: string | undefined) {
    const scope = cursorScope(parentId, sort, order, query);
    const state = cursor ? decodeCursor(cursor, scope) : { scope, phase: 'folders' as const, after: null };
    const base: Omit<PageQuery, 'after' | 'limit'> = { parentId, sort, order, ...(query !== undefined ? { nameContains: query } : {}) };
    const folderValue = (f: StoredFolder) => (sort === 'created_at' ? f.created_at : sort === 'updated_at' ? f.updated_at : f.name_key);
    const fileValue = (f: StoredFile) => (sort === 'name' ? f.name_key : f[sort]);

    let folders: StoredFolder[] = [];
    let files: StoredFile[] = [];
    let next: string | null = null;
    if (state.phase === 'folders') {
      folders = await this.c.meta.listFolders({ ...base, after: state.after, limit: limit + 1 });
      if (folders.length > limit) {
        folders = folders.slice(0, limit);
        const last = folders[folders.length - 1]!;
        next = encodeCursor({ scope, phase: 'folders', after: { value: folderValue(last), id: last.id } });
        return { folders, files, next };
      }
    }
    const room = limit - folders.length;
    const after = state.phase === 'files' ? state.after : null;
    files = await this.c.meta.listFiles({ ...base, after, limit: room + 1 });
    if (files.length > room) {
      files = files.slice(0, room);
      const last = files[files.length - 1];
      next = encodeCursor({ scope, phase: 'files', after: last ? { value: fileValue(last), id: last.id } : after });
    }
    return { folders, files, next };
  }

  async list(caller: Caller, req: ListRequest): Promise<ListResponse> {
    authorize(caller, 'folder.read');
    const folderId = req.folder_id ?? null;
    const chain = folderId === null ? [] : await this.c.meta.read.folderChain(folderId);
    if (folderId !== null && chain.length === 0) throw errors.folderNotFound(folderId);
    await authorizeFolder(this.c.meta.read, caller, 'folder.read', folderId);
    const limit = checkLimit(req.limit);
    const sort = req.sort ?? 'name';
    const order = req.order ?? 'asc';
    const page = await this.page(folderId, sort, order, limit, req.cursor, undefined);
    const context = contextOfChain(chain);
    // Breadcrumbs from the top folder down to this one.
    const breadcrumbs: FolderRecord[] = [];
    // Above a chain cut short lies something unseen: fail closed.
    let parent: FolderContext = chainIsComplete(chain) ? ROOT_CONTEXT : { path: '/…', visibility: 'Private' };
    const top = reachOf(caller);
    let shown = top === null;
    for (const f of [...chain].reverse()) {
      // A confined caller's trail starts at its own folder: what lies above is not its to see.
      if (f.id === top) shown = true;
      if (shown) breadcrumbs.push(folderRecord(f, parent));
      parent = childContext(f, parent);
    }
    return {
      folder: breadcrumbs[breadcrumbs.length - 1] ?? null,
      breadcrumbs,
      folders: page.folders.map((f) => folderRecord(f, context)),
      files: page.files.map((f) => fileRecord(f, context, this.c.cdnUrl)),
      next_cursor: page.next,
    };
  }

  async search(caller: Caller, req: SearchRequest): Promise<SearchResponse> {
    authorize(caller, 'folder.read');
    const folderId = req.folder_id ?? null;
    const chain = folderId === null ? [] : await this.c.meta.read.folderChain(folderId);
    if (folderId !== null && chain.length === 0) throw errors.folderNotFound(folderId);
    await authorizeFolder(this.c.meta.read, caller, 'folder.read', folderId);
    const text = req.query.trim();
    if (text.length === 0 || text.length > 255) throw errors.invalidField('invalid_query', 'query', '"query" must hold 1 to 255 characters besides white space.');
    const limit = checkLimit(req.limit);
    const page = await this.page(folderId, 'name', 'asc', limit, req.cursor, nameKey(text));
    const context = contextOfChain(chain);
    return {
      folders: page.folders.map((f) => folderRecord(f, context)),
      files: page.files.map((f) => fileRecord(f, context, this.c.cdnUrl)),
      next_cursor: page.next,
    };
  }
}
