import { errors } from './errors.js';

export type Visibility = 'Public' | 'Private';
export const FILE_TYPES = ['image', 'video', 'document', 'audio', 'archive', 'other'] as const;
export type FileType = (typeof FILE_TYPES)[number];
export type FileStatus = 'uploading' | 'ready';

export interface FileRecord {
  file_id: string;
  name: string;
  visibility: Visibility;
  effective_visibility: Visibility;
  size: number;
  file_type: FileType;
  content_type: string;
  folder_id: string | null;
  status: FileStatus;
  sha256: string | null;
  created_at: string;
  updated_at: string;
  delivery_url: string | null;
}

export interface FolderRecord {
  folder_id: string;
  name: string;
  visibility: Visibility;
  effective_visibility: Visibility;
  parent_id: string | null;
  path: string;
  created_at: string;
  updated_at: string;
}

/** Visibility is accepted in any letter case and answered in its canonical form. */
export function parseVisibility(value: string, field = 'visibility'): Visibility {
  const lower = value.trim().toLowerCase();
  if (lower === 'public') return 'Public';
  if (lower === 'private') return 'Private';
  throw errors.invalidField('invalid_visibility', field, `"${field}" must be "Public" or "Private".`);
}

export function parseFileType(value: string, field = 'file_type'): FileType {
  const lower = value.trim().toLowerCase();
  if ((FILE_TYPES as readonly string[]).includes(lower)) return lower as FileType;
  throw errors.invalidField('invalid_file_type', field, `"${field}" must be one of ${FILE_TYPES.join(', ')}.`);
}

/** Private when the item or any folder above it is Private (contract §3). */
export function effectiveVisibility(own: Visibility, ancestors: Iterable<Visibility>): Visibility {
  if (own === 'Private') return 'Private';
  for (const v of ancestors) if (v === 'Private') return 'Private';
  return 'Public';
}

/** Timestamps travel as ISO 8601 UTC with milliseconds. */
export const isoTime = (ms: number): string => new Date(ms).toISOString();
