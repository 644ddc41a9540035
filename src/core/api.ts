/**
 * The shapes of the programmatic interface (contract §3–§6), as JSON schemas.
 * The origin validates requests and documents itself with them; the SDK takes its types.
 * Request schemas state types only: the rules with their own error codes are checked by
 * the service, after the lookups, in the order contract §2 sets.
 */
import type { Static, TSchema } from 'typebox';
import { Type } from './schema.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Id = (description: string) => Type.String({ description });
const strict = { additionalProperties: false } as const;

export const Visibility = Type.String({ description: '"Public" or "Private", in any letter case; answered as "Public" or "Private".' });
export const FileTypeField = Type.String({ description: 'One of image, video, document, audio, archive, other.' });

export const FileRecord = Type.Object({
  file_id: Type.String(),
  name: Type.String(),
  visibility: Type.Union([Type.Literal('Public'), Type.Literal('Private')]),
  effective_visibility: Type.Union([Type.Literal('Public'), Type.Literal('Private')], { description: 'Private when the file or any folder above it is Private.' }),
  size: Type.Integer(),
  file_type: Type.String(),
  content_type: Type.String(),
  folder_id: Nullable(Type.String()),
  status: Type.Union([Type.Literal('uploading'), Type.Literal('ready')]),
  sha256: Nullable(Type.String({ description: 'Hex SHA-256 of the bytes, once ready.' })),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  delivery_url: Nullable(Type.String({ description: 'Set once ready; answers only when signed if the file is effectively Private.' })),
});
export type FileRecord = Static<typeof FileRecord>;

export const FolderRecord = Type.Object({
  folder_id: Type.String(),
  name: Type.String(),
  visibility: Type.Union([Type.Literal('Public'), Type.Literal('Private')]),
  effective_visibility: Type.Union([Type.Literal('Public'), Type.Literal('Private')]),
  parent_id: Nullable(Type.String()),
  path: Type.String({ description: 'Names from the root, e.g. /photos/2026.' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export type FolderRecord = Static<typeof FolderRecord>;

export const ErrorBody = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    details: Type.Record(Type.String(), Type.Unknown()),
  }),
});

// Upload (contract §4)
export const InitiateUploadRequest = Type.Object({
  name: Type.String({ description: '1–255 bytes of UTF-8 after trimming; no "/", control characters, "." or "..".' }),
  visibility: Visibility,
  size: Type.Number({ description: 'Bytes; a whole number from 0 to the configured maximum.' }),
  file_type: FileTypeField,
  folder_id: Type.Optional(Nullable(Id('Folder to upload into; null or absent is the root.'))),
  content_type: Type.Optional(Type.String({ description: 'Media type; by default guessed from the name.' })),
}, strict);
export type InitiateUploadRequest = Static<typeof InitiateUploadRequest>;

export const UploadSession = Type.Intersect([FileRecord, Type.Object({
  fileId: Type.String(),
  bucket: Type.String(),
  key: Type.String(),
  uploadId: Type.String(),
  chunk_size: Type.Integer(),
  part_count: Type.Integer(),
  expires_at: Type.String({ format: 'date-time', description: 'When the open upload is aborted if not completed.' }),
})]);
export type UploadSession = Static<typeof UploadSession>;

export const UploadPartRequest = Type.Object({
  body: Type.String({ description: 'The chunk, base64 (standard or URL-safe alphabet).' }),
  bucket: Type.String(),
  key: Type.String(),
  uploadId: Type.String(),
  fileId: Type.String(),
  partNumber: Type.Number({ description: 'An integer from 1 to part_count.' }),
}, strict);
export type UploadPartRequest = Static<typeof UploadPartRequest>;

export const UploadPartResponse = Type.Object({
  file_id: Type.String(),
  partNumber: Type.Integer(),
  size: Type.Integer(),
  etag: Type.String(),
  received_parts: Type.Integer(),
  part_count: Type.Integer(),
});
export type UploadPartResponse = Static<typeof UploadPartResponse>;

export const FileIdRequest = Type.Object({ file_id: Id('The file.') }, strict);
export type FileIdRequest = Static<typeof FileIdRequest>;

export const UploadStatusResponse = Type.Object({
  file_id: Type.String(),
  status: Type.Union([Type.Literal('uploading'), Type.Literal('ready')]),
  part_count: Type.Integer(),
  received: Type.Array(Type.Integer()),
  missing: Type.Array(Type.Integer()),
  expires_at: Nullable(Type.String({ format: 'date-time' })),
});
export type UploadStatusResponse = Static<typeof UploadStatusResponse>;

export const AbortUploadResponse = Type.Object({ file_id: Type.String(), aborted: Type.Literal(true) });

// Folders and files (contract §5)
export const CreateFolderRequest = Type.Object({
  name: Type.String(),
  visibility: Visibility,
  parent_id: Type.Optional(Nullable(Type.String())),
}, strict);
export type CreateFolderRequest = Static<typeof CreateFolderRequest>;

export const FolderIdRequest = Type.Object({ folder_id: Type.String() }, strict);
export type FolderIdRequest = Static<typeof FolderIdRequest>;

export const UpdateFolderRequest = Type.Object({
  folder_id: Type.String(),
  name: Type.Optional(Type.String()),
  visibility: Type.Optional(Visibility),
  parent_id: Type.Optional(Nullable(Type.String({ description: 'Move under this folder; null moves to the root.' }))),
}, strict);
export type UpdateFolderRequest = Static<typeof UpdateFolderRequest>;

// A write answers its record only to a caller that may read it (docs/security.md, "Confinement at the edges of operations").
const withoutRead = 'Answered instead of the record to a caller without the "read" scope.';
export const FolderCreated = Type.Object({ folder_id: Type.String(), created: Type.Literal(true) }, { description: withoutRead });
export const CreateFolderResponse = Type.Union([FolderRecord, FolderCreated]);
export type CreateFolderResponse = Static<typeof CreateFolderResponse>;
export const FolderUpdated = Type.Object({ folder_id: Type.String(), updated: Type.Literal(true) }, { description: withoutRead });
export const UpdateFolderResponse = Type.Union([FolderRecord, FolderUpdated]);
export type UpdateFolderResponse = Static<typeof UpdateFolderResponse>;

export const DeleteFolderRequest = Type.Object({
  folder_id: Type.String(),
  recursive: Type.Optional(Type.Boolean({ description: 'Delete everything inside too (default false).' })),
}, strict);
export type DeleteFolderRequest = Static<typeof DeleteFolderRequest>;

export const DeleteFolderResponse = Type.Object({ folder_id: Type.String(), deleted_files: Type.Integer(), deleted_folders: Type.Integer() });
export type DeleteFolderResponse = Static<typeof DeleteFolderResponse>;

const SortField = Type.Union([Type.Literal('name'), Type.Literal('created_at'), Type.Literal('updated_at'), Type.Literal('size')], {
  description: 'name (default), created_at, updated_at (last modified) or size. Folders sort by name when the sort is size.',
});
const SortOrder = Type.Union([Type.Literal('asc'), Type.Literal('desc')]);

export const ListRequest = Type.Object({
  folder_id: Type.Optional(Nullable(Type.String())),
  limit: Type.Optional(Type.Number({ description: '1–1000, default 100; counts folders and files together.' })),
  cursor: Type.Optional(Nullable(Type.String())),
  sort: Type.Optional(SortField),
  order: Type.Optional(SortOrder),
}, strict);
export type ListRequest = Static<typeof ListRequest>;

export const ListResponse = Type.Object({
  folder: Nullable(FolderRecord),
  breadcrumbs: Type.Array(FolderRecord),
  folders: Type.Array(FolderRecord),
  files: Type.Array(FileRecord),
  next_cursor: Nullable(Type.String()),
});
export type ListResponse = Static<typeof ListResponse>;

export const SearchRequest = Type.Object({
  folder_id: Type.Optional(Nullable(Type.String())),
  query: Type.String({ description: 'Text the name contains, compared without regard to case.' }),
  limit: Type.Optional(Type.Number()),
  cursor: Type.Optional(Nullable(Type.String())),
}, strict);
export type SearchRequest = Static<typeof SearchRequest>;

export const SearchResponse = Type.Object({
  folders: Type.Array(FolderRecord),
  files: Type.Array(FileRecord),
  next_cursor: Nullable(Type.String()),
});
export type SearchResponse = Static<typeof SearchResponse>;

export const UpdateFileRequest = Type.Object({
  file_id: Type.String(),
  name: Type.Optional(Type.String()),
  visibility: Type.Optional(Visibility),
  folder_id: Type.Optional(Nullable(Type.String({ description: 'Move into this folder; null moves to the root.' }))),
}, strict);
export type UpdateFileRequest = Static<typeof UpdateFileRequest>;

export const FileUpdated = Type.Object({ file_id: Type.String(), updated: Type.Literal(true) }, { description: withoutRead });
export const UpdateFileResponse = Type.Union([FileRecord, FileUpdated]);
export type UpdateFileResponse = Static<typeof UpdateFileResponse>;

export const DeleteFileResponse = Type.Object({ file_id: Type.String(), deleted: Type.Literal(true) });

export const DownloadRequest = Type.Object({
  file_id: Type.String(),
  expiry: Type.Optional(Type.Number({ description: 'Seconds the link stays valid when the file is Private: 1–86400, default 3600.' })),
}, strict);
export type DownloadRequest = Static<typeof DownloadRequest>;

export const DownloadResponse = Type.Object({
  file_id: Type.String(),
  download_url: Type.String(),
  expires_at: Nullable(Type.String({ format: 'date-time' })),
});
export type DownloadResponse = Static<typeof DownloadResponse>;

// Signed links (contract §6)
export const LinkVariant = Type.Object({
  w: Type.Optional(Type.Integer({ description: 'Width in pixels, 1–4096.' })),
  h: Type.Optional(Type.Integer({ description: 'Height in pixels, 1–4096.' })),
  fit: Type.Optional(Type.String({ description: 'cover, contain or inside (default inside).' })),
  format: Type.Optional(Type.String({ description: 'webp, avif, jpeg, png, or auto (the best the browser accepts).' })),
  q: Type.Optional(Type.Integer({ description: 'Quality, 1–100.' })),
}, { ...strict, description: 'An image variant (contract §13): its parameters are signed with the link, so the link serves that variant only.' });
export type LinkVariant = Static<typeof LinkVariant>;

export const CreateLinkRequest = Type.Object({
  file_id: Type.String(),
  file_type: FileTypeField,
  expiry: Type.Optional(Type.Number({ description: 'Seconds: 1–86400, default 3600.' })),
  variant: Type.Optional(LinkVariant),
  preview: Type.Optional(Type.Boolean({
    description: 'A link for your own preview or thumbnail of the file (the Playground asks for these): signed along as preview=1, served like any other, and not counted as a download in usage.',
  })),
}, strict);
export type CreateLinkRequest = Static<typeof CreateLinkRequest>;

export const CreateLinkResponse = Type.Object({
  file_id: Type.String(),
  file_type: Type.String(),
  expiry: Type.Integer(),
  presigned_url: Type.String(),
  expires_at: Type.String({ format: 'date-time' }),
});
export type CreateLinkResponse = Static<typeof CreateLinkResponse>;

// Playground sessions (docs/api.md)
export const SessionRequest = Type.Object({
  access_key: Type.String({ description: 'The access key; exchanged for the session cookie and never stored by the page.' }),
}, strict);
export type SessionRequest = Static<typeof SessionRequest>;

export const SessionResponse = Type.Object({
  csrf_token: Type.String({ description: 'Send it as the X-CSRF-Token header with every call the cookie authenticates.' }),
  expires_at: Type.String({ format: 'date-time', description: 'When the session ends unless signed out before.' }),
});
export type SessionResponse = Static<typeof SessionResponse>;

export const EndSessionRequest = Nullable(Type.Object({}, { ...strict, description: 'No fields: an empty object, or no body.' }));
export const EndSessionResponse = Type.Object({ ended: Type.Literal(true) });
