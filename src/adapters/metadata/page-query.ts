/** One page of a folder's files or subfolders (contract §5's listing) over Kysely: keyset pagination on (sort column, id). */
import type { Kysely } from 'kysely';
import { sql } from './kysely.js';
import type { PageQuery, SortField } from '../../core/ports.js';
import type { Database } from './schema.js';

type SortColumn = 'name_key' | 'created_at' | 'updated_at' | 'size';

/** The column a sort reads; folders have no size and sort by name then. */
function sortColumn(table: 'files' | 'folders', sort: SortField): SortColumn {
  if (sort === 'name' || (table === 'folders' && sort === 'size')) return 'name_key';
  return sort;
}

/** The query of one page: ready files only, names matched literally (no LIKE wildcards from the caller). */
export function pageQuery<T extends 'files' | 'folders'>(db: Kysely<Database>, table: T, q: PageQuery) {
  const column = sortColumn(table, q.sort);
  const parentCol = table === 'files' ? 'folder_id' : 'parent_id';
  let query = db.selectFrom(table as 'files').selectAll();
  query = q.parentId === null ? query.where(parentCol as 'folder_id', 'is', null) : query.where(parentCol as 'folder_id', '=', q.parentId);
  if (table === 'files') query = query.where('status', '=', 'ready');
  if (q.nameContains !== undefined && q.nameContains !== '') {
    const pattern = `%${q.nameContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query = query.where(sql<boolean>`name_key like ${pattern} escape '\\'`);
  }
  const col = column as 'name_key';
  if (q.after) {
    const op = q.order === 'asc' ? '>' : '<';
    query = query.where((eb) => eb(eb.refTuple(col, 'id'), op, eb.tuple(q.after!.value as string, q.after!.id)));
  }
  return query.orderBy(col, q.order).orderBy('id', q.order).limit(q.limit);
}
