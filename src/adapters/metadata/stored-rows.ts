/** Rows as the records want them, and batches of bound values, for the Kysely stores. */
import type { StoredFile, StoredFolder, StoredPart, StoredSession } from '../../core/ports.js';

const NUMERIC_FILE_FIELDS = ['size', 'created_at', 'updated_at', 'completed_at', 'upload_expires_at', 'links_revoked_at'] as const;

/** PostgreSQL answers bigint as text; the records want numbers. */
export function fileRow(row: StoredFile): StoredFile {
  for (const f of NUMERIC_FILE_FIELDS) if (row[f] !== null && typeof row[f] !== 'number') (row as any)[f] = Number(row[f]);
  return row;
}
export function folderRow(row: StoredFolder): StoredFolder {
  row.created_at = Number(row.created_at);
  row.updated_at = Number(row.updated_at);
  return row;
}
export function sessionRow(row: StoredSession): StoredSession {
  row.created_at = Number(row.created_at);
  row.expires_at = Number(row.expires_at);
  return row;
}
export function partRow(row: StoredPart): StoredPart {
  row.size = Number(row.size);
  row.updated_at = Number(row.updated_at);
  return row;
}

// Kysely takes at most this many bound values comfortably on both engines.
const IN_BATCH = 500;
export function batches<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += IN_BATCH) out.push(items.slice(i, i + IN_BATCH));
  return out;
}
