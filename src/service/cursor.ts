/** Opaque keyset cursors: where the next page starts, bound to the query that made them. */
import { errors } from '../core/errors.js';
import type { Keyset, SortField, SortOrder } from '../core/ports.js';

export interface CursorState {
  /** The query it belongs to: folder, sort, order and search text. */
  scope: string;
  /** Folders are listed first, then files. */
  phase: 'folders' | 'files';
  after: Keyset | null;
}

export const cursorScope = (folderId: string | null, sort: SortField, order: SortOrder, query = ''): string =>
  JSON.stringify([folderId, sort, order, query]);

export function encodeCursor(state: CursorState): string {
  return Buffer.from(JSON.stringify([1, state.scope, state.phase === 'folders' ? 0 : 1, state.after?.value ?? null, state.after?.id ?? null])).toString('base64url');
}

export function decodeCursor(cursor: string, scope: string): CursorState {
  const fail = () => errors.invalidField('invalid_cursor', 'cursor', 'The cursor is not one this query returned; start again without it.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw fail();
  }
  if (!Array.isArray(parsed) || parsed.length !== 5 || parsed[0] !== 1 || parsed[1] !== scope) throw fail();
  const [, , phase, value, id] = parsed as [number, string, number, unknown, unknown];
  if (phase !== 0 && phase !== 1) throw fail();
  let after: Keyset | null = null;
  if (id !== null) {
    if (typeof id !== 'string' || (typeof value !== 'string' && typeof value !== 'number')) throw fail();
    after = { value, id };
  }
  return { scope, phase: phase === 0 ? 'folders' : 'files', after };
}
