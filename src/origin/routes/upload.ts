import * as api from '../../core/api.js';
import { endpoint } from './endpoint.js';

export const initiateUpload = endpoint({
  path: '/collections/upload/file',
  tag: 'Upload',
  access: 'upload',
  summary: 'Initiate an upload',
  description: 'Creates the file record (status "uploading") and the upload session whose values every chunk carries. Chunks are 5 MiB; part_count is max(1, ceil(size / chunk_size)).',
  body: api.InitiateUploadRequest,
  response: api.UploadSession,
  handle: (s, body, caller) => s.uploads.initiate(caller, body),
});

export const completeUpload = endpoint({
  path: '/collections/upload/complete-upload',
  tag: 'Upload',
  access: 'upload',
  summary: 'Complete an upload',
  description: 'Joins the parts into one file, computes its SHA-256 and makes it ready. Calling it again on a ready file returns the same record. 409 missing_parts lists the missing part numbers in details.missing.',
  body: api.FileIdRequest,
  response: api.FileRecord,
  handle: (s, body, caller) => s.uploads.complete(caller, body.file_id),
});

export const uploadStatus = endpoint({
  path: '/collections/upload/status',
  tag: 'Upload',
  access: 'upload',
  summary: 'Status of an upload',
  description: 'The parts received and missing, so a client can resume after a failure.',
  body: api.FileIdRequest,
  response: api.UploadStatusResponse,
  handle: (s, body, caller) => s.uploads.status(caller, body.file_id),
});

export const abortUpload = endpoint({
  path: '/collections/upload/abort',
  tag: 'Upload',
  access: 'upload',
  summary: 'Abort an upload',
  description: 'Discards an open upload and its parts.',
  body: api.FileIdRequest,
  response: api.AbortUploadResponse,
  handle: (s, body, caller) => s.uploads.abort(caller, body.file_id),
});
