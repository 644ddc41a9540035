/** How search results are ordered in the page when the service cannot (any order but name). */
import type { Entry } from './entries.js';
import type { Sort } from './state/prefs.js';

/** Files of every name compared like the service does (case-insensitively). */
export function compareEntries(sort: Sort): (a: Entry, b: Entry) => number {
  const dir = sort.order === 'asc' ? 1 : -1;
  const value = (e: Entry): string | number => {
    if (e.kind === 'folder') return sort.field === 'updated_at' ? e.folder.updated_at : sort.field === 'created_at' ? e.folder.created_at : e.name.toLowerCase();
    if (e.kind === 'file') return sort.field === 'size' ? e.file.size : sort.field === 'updated_at' ? e.file.updated_at : sort.field === 'created_at' ? e.file.created_at : e.name.toLowerCase();
    return e.name.toLowerCase();
  };
  return (a, b) => {
    const x = value(a);
    const y = value(b);
    return (x < y ? -1 : x > y ? 1 : 0) * dir;
  };
}
