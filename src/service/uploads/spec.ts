/**
 * An upload as contract §4's initiate asks for it (and tus's Upload-Metadata, made into the
 * same request), checked and made an engine's UploadSpec: who may upload where, the name,
 * the size against the limits, the content type, and a grant's limits and file count.
 */
import mime from 'mime';
import { errors } from '../../core/errors.js';
import { validateFileName } from '../../core/names.js';
import { parseFileType, parseVisibility } from '../../core/records.js';
import { isSendableContentType } from '../../core/file-types.js';
import { checkDeclaredSize } from '../../core/upload.js';
import type { InitiateUploadRequest } from '../../core/api.js';
import type { Caller } from '../../core/access.js';
import type { ServiceContext } from '../context.js';
import { checkGrantLimits, defaultUploadFolder, takeGrantFile } from '../access.js';
import { authorize, authorizeFolder } from '../policy.js';
import type { UploadSpec } from './engine.js';

function contentTypeOf(req: InitiateUploadRequest, name: string): string {
  if (req.content_type === undefined) return mime.getType(name) ?? 'application/octet-stream';
  // Stored as given and sent back as a header at every delivery: it must be one that can be.
  if (!isSendableContentType(req.content_type)) {
    throw errors.invalidField('invalid_content_type', 'content_type', '"content_type" must be a media type such as "image/png" or "text/plain; charset=utf-8": ASCII token characters, no control characters.');
  }
  return req.content_type;
}

/** `s3Key`: the S3 interface names it, so the name of a key ending in "/" (FOLDER_KEY_NAME) is one. */
export async function initiateSpec(c: ServiceContext, caller: Caller, req: InitiateUploadRequest, s3Key = false): Promise<UploadSpec> {
  authorize(caller, 'upload');
  const folderId = req.folder_id ?? defaultUploadFolder(caller);
  if (folderId !== null) await c.requireFolder(c.meta.read, folderId);
  await authorizeFolder(c.meta.read, caller, 'upload', folderId);
  const name = validateFileName(req.name, s3Key);
  const visibility = parseVisibility(req.visibility);
  checkDeclaredSize(req.size, c.opts.maxFileSize);
  const fileType = parseFileType(req.file_type);
  const contentType = contentTypeOf(req, name);
  checkGrantLimits(caller, { folderId, visibility, size: req.size, contentType }, c.now());
  return {
    name, visibility, size: req.size, fileType, contentType, folderId,
    grantId: caller.kind === 'grant' ? caller.grant.id : null,
    prepare: (tx) => takeGrantFile(tx, caller),
  };
}
