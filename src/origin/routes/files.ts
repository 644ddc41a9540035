import * as api from '../../core/api.js';
import { FileWithUsage, UsageRequest, UsageResponse } from '../../core/api-usage.js';
import { endpoint } from './endpoint.js';

export const getFile = endpoint({
  path: '/collections/file/get',
  tag: 'Files',
  summary: 'Read a file record',
  description: 'With downloads and bytes_served as edges have reported them (eventually consistent).',
  body: api.FileIdRequest,
  response: FileWithUsage,
  handle: (s, body, caller) => s.files.get(caller, body.file_id),
});

export const updateFile = endpoint({
  path: '/collections/file/update',
  tag: 'Files',
  summary: 'Rename, move or switch the visibility of a file',
  description: 'Takes effect at every edge before it answers; the delivery URL and issued links keep working. A key without "read" is answered {file_id, updated: true}, not the record.',
  body: api.UpdateFileRequest,
  response: api.UpdateFileResponse,
  handle: (s, body, caller) => s.files.update(caller, body),
});

export const deleteFile = endpoint({
  path: '/collections/file/delete',
  tag: 'Files',
  summary: 'Delete a file',
  description: 'Removes the file from storage and from every edge before it answers.',
  body: api.FileIdRequest,
  response: api.DeleteFileResponse,
  handle: (s, body, caller) => s.files.delete(caller, body.file_id),
});

export const downloadFile = endpoint({
  path: '/collections/file/download',
  tag: 'Files',
  summary: 'Get a download link',
  description: 'A link that makes a browser save the file under its name; signed (expires_at set) when the file is effectively Private.',
  body: api.DownloadRequest,
  response: api.DownloadResponse,
  handle: (s, body, caller) => s.links.download(caller, body),
});

export const createLink = endpoint({
  path: '/collections/create-link',
  tag: 'Links',
  summary: 'Create a signed link',
  description: 'A time-limited link under the delivery address, signed with X-Expires and X-Sig (contract §6). file_type must be the file\'s own.',
  body: api.CreateLinkRequest,
  response: api.CreateLinkResponse,
  handle: (s, body, caller) => s.links.create(caller, body),
});

export const usage = endpoint({
  path: '/collections/usage',
  tag: 'Files',
  summary: 'Bytes served per day',
  description: 'Downloads and bytes that edges reported, per UTC day, every file together, for the last `days` days (30 by default). Needs "read" and a key not confined to a folder.',
  body: UsageRequest,
  response: UsageResponse,
  handle: (s, body, caller) => s.usage.byDay(caller, body ?? {}),
});
