/**
 * What tus (contract §9) says about an upload beside the engine's file record: the values a
 * client sends and is answered, the row kept for it (core/tus.ts), who made it, and how
 * Upload-Metadata becomes the upload initiate would start.
 */
import { errors } from '../../core/errors.js';
import { validateName } from '../../core/names.js';
import { fileTypeFor, isSendableContentType } from '../../core/file-types.js';
import type { Caller } from '../../core/access.js';
import type { InitiateUploadRequest } from '../../core/api.js';
import type { StoredFile } from '../../core/ports.js';
import type { StoredTusUpload, TusKind } from '../../core/tus.js';
import { reachOf } from '../policy.js';

/** Upload-Metadata, decoded: each key with its value, or null for a key given without one. */
export type TusMetadata = ReadonlyMap<string, string | null>;

export interface TusCreate {
  /** Upload-Length; null only for a final upload, whose length is its partial uploads'. */
  length: number | null;
  metadata: TusMetadata;
  /** Upload-Metadata as sent, answered back on HEAD. */
  rawMetadata: string | null;
  /** Upload-Concat: a partial upload, or a final one made of these uploads (file ids), in order. */
  concat: { kind: 'partial' } | { kind: 'final'; fileIds: string[] } | null;
}

/** What HEAD answers, and what every other call answers with. */
export interface TusState {
  fileId: string;
  kind: TusKind;
  length: number;
  offset: number;
  /** When an unfinished upload is removed (Unix ms); null once finished. */
  expiresAt: number | null;
  metadata: string | null;
  /** A final upload's partial uploads (file ids), in order. */
  concat: string[] | null;
  /** The ready file, once the upload is one. */
  readyFileId: string | null;
}

/** A tus upload as found for a caller. */
export interface Found {
  file: StoredFile;
  tus: StoredTusUpload;
}

export const noUpload = () => errors.uploadNotFound('No tus upload is at this address: it never was, was terminated, or expired and was removed.');

/** Partial uploads have no name of their own; this one shows in an upload.expired event. */
export const PARTIAL_NAME = 'tus partial upload';

export const newTusRow = (fileId: string, kind: TusKind, metadata: string | null, concat: string | null, now: number, madeBy: string): StoredTusUpload => ({
  file_id: fileId, kind, metadata, concat, tail_key: null, tail_size: 0, next_tail_key: null, version: 0, joined: 0, created_at: now, made_by: madeBy,
});

/** The caller as a tus row records its maker. */
export function makerOf(caller: Caller): string {
  switch (caller.kind) {
    case 'key':
      return `key:${caller.keyId}`;
    case 'grant':
      return `grant:${caller.grant.id}`;
    default:
      return 'root';
  }
}

/** Whether the caller made this upload; the root key counts as the maker of every one. */
export function madeBy(caller: Caller, { file, tus }: Found): boolean {
  if (caller.kind === 'root') return true;
  const maker = tus.made_by ?? (file.grant_id !== null ? `grant:${file.grant_id}` : 'root');
  return maker === makerOf(caller);
}

/**
 * The upload as initiate would start it, from Upload-Metadata (contract §9's keys). Without
 * `folder_id` it goes to the top of the caller's reach: a confined key's folder, a grant's.
 */
export function askOf(caller: Caller, metadata: TusMetadata, length: number): InitiateUploadRequest {
  const value = (key: string): string | undefined => {
    const v = metadata.get(key);
    if (v === null) throw errors.invalidField('invalid_metadata', key, `Upload-Metadata gives "${key}" without a value.`);
    return v;
  };
  const filename = value('filename');
  if (filename === undefined) throw errors.invalidField('missing_filename', 'filename', 'Upload-Metadata must give "filename": the file\'s name.');
  const name = validateName(filename, 'filename');
  const contentType = value('filetype');
  if (contentType !== undefined && !isSendableContentType(contentType)) {
    throw errors.invalidField('invalid_content_type', 'filetype', '"filetype" must be a media type such as "image/png" or "text/plain; charset=utf-8".');
  }
  const folderId = value('folder_id') || (reachOf(caller) ?? undefined);
  return {
    name, size: length, visibility: value('visibility') ?? 'Private',
    file_type: value('file_type') ?? fileTypeFor(name, contentType),
    ...(contentType !== undefined ? { content_type: contentType } : {}),
    ...(folderId !== undefined ? { folder_id: folderId } : {}),
  };
}
