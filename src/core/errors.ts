import { ERROR_CODES, type ClientErrorCode, type ErrorCode, type FieldErrorCode } from './error-codes.js';

/** The one error type of the service: every failure a client sees is one of these. */
export type ErrorDetails = Record<string, unknown>;

/** `C` narrows the code: the service's factories make only codes of the table (error-codes.ts). */
export class CofferError<C extends string = string> extends Error {
  readonly status: number;
  readonly code: C;
  readonly details: ErrorDetails;

  constructor(status: number, code: C, message: string, details: ErrorDetails = {}) {
    super(message);
    this.name = 'CofferError';
    this.status = status;
    this.code = code;
    this.details = details;
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export interface ErrorBody {
  error: { code: string; message: string; details: ErrorDetails };
}

export const isCofferError = (e: unknown): e is CofferError => e instanceof CofferError;

/** An error of the table: its status from there, and its default message unless one is given. */
export const fail = <C extends ErrorCode>(code: C, message: string = ERROR_CODES[code].message, details: ErrorDetails = {}): CofferError<C> =>
  new CofferError(ERROR_CODES[code].status, code, message, details);

/** A failure on the client's side (the SDK, the CLI): status 0, or the answer's when one came. */
export const clientError = <C extends ClientErrorCode>(code: C, message: string, status = 0): CofferError<C> =>
  new CofferError(status, code, message, {});

/** Named factories, so every place that fails the same way says it the same way. */
export const errors = {
  invalidRequest: (message: string, field?: string, extra: ErrorDetails = {}) =>
    fail('invalid_request', message, field ? { field, ...extra } : extra),
  invalidField: (code: FieldErrorCode, field: string, message: string, extra: ErrorDetails = {}) =>
    fail(code, message, { field, ...extra }),
  unauthorized: (message = 'Send the access key as "Authorization: Bearer <ACCESS_KEY>".') =>
    fail('unauthorized', message),
  forbidden: (message: string, extra: ErrorDetails = {}) => fail('forbidden', message, extra),
  /** Outside a confined caller's folder: answered as if it did not exist. */
  outOfReach: (message = 'Nothing is there for this key.') => fail('not_found', message),
  webhookNotFound: (id: string) => fail('webhook_not_found', `No webhook has the id "${id}".`, { webhook_id: id }),
  deliveryNotFound: (id: string) => fail('delivery_not_found', `No delivery has the id "${id}".`, { delivery_id: id }),
  keyNotFound: (keyId: string) => fail('key_not_found', `No key has the id "${keyId}".`, { key_id: keyId }),
  csrfFailed: (message: string) => fail('csrf_failed', message),
  fileNotFound: (fileId: string) =>
    fail('file_not_found', `No file has the id "${fileId}".`, { file_id: fileId }),
  folderNotFound: (folderId: string, field = 'folder_id') =>
    fail('folder_not_found', `No folder has the id "${folderId}".`, { field, folder_id: folderId }),
  uploadNotFound: (message = 'These upload values match no open upload: start a new upload with /collections/upload/file.') =>
    fail('upload_not_found', message),
  notFound: (message = 'No such resource.') => fail('not_found', message),
  /** No route answers this method and path (the query left out of the message). */
  noRoute: (method: string, url: string) => fail('not_found', `Nothing is at ${method} ${url.split('?')[0]}.`),
  missingParts: (missing: number[]) =>
    fail('missing_parts', `The upload is missing ${missing.length} part(s); send them, then complete again.`, { missing }),
  uploadCompleted: () =>
    fail('upload_completed', 'This upload is already complete; its parts can no longer change.'),
  uploadNotComplete: (fileId: string) =>
    fail('upload_not_complete', 'The file is still uploading; complete the upload first.', { file_id: fileId }),
  s3Upload: () => fail('s3_upload', 'This upload was started through the S3 interface: complete it there (CompleteMultipartUpload).'),
  folderNotEmpty: (folderId: string, files: number, folders: number) =>
    fail('folder_not_empty', 'The folder is not empty; delete its contents first or pass "recursive": true.', { folder_id: folderId, files, folders }),
  /** The existing folder's id only when the caller reaches it; otherwise the name it gave is all it learns. */
  folderExists: (name: string, existingId: string | null) =>
    fail('folder_exists', `A folder named "${name}" already exists here.`, existingId === null ? { name } : { name, folder_id: existingId }),
  cycle: () => fail('cycle', 'A folder cannot be moved into itself or into one of its own sub-folders.', { field: 'parent_id' }),
  folderTooDeep: (maxDepth: number) =>
    fail('folder_too_deep', `Folders may be nested at most ${maxDepth} levels deep.`, { field: 'parent_id', max_depth: maxDepth }),
  payloadTooLarge: (limit: number) =>
    fail('payload_too_large', `The request body is over the limit of ${limit} bytes.`, { limit }),
  fileTooLarge: (limit: number) =>
    fail('file_too_large', `The declared size is over the limit of ${limit} bytes.`, { field: 'size', limit }),
  unsupportedMediaType: () =>
    fail('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".'),
  rateLimited: (retryAfter: number) =>
    fail('rate_limited', `Too many requests; try again in ${retryAfter} second(s).`, { retry_after: retryAfter }),
  unavailable: (message: string) => fail('unavailable', message),
  // Image variants at an edge (contract §13): admission to its transforms.
  variantBusy: (retryAfter: number) =>
    fail('variant_busy', `This edge has too many variants to make for this client or in all; try again in ${retryAfter} second(s).`, { retry_after: retryAfter }),
  variantLimit: (retryAfter: number) =>
    fail('variant_limit', `Too many new variants of this image were asked for without a signed link; try again in ${retryAfter} second(s), or use a signed link.`, { retry_after: retryAfter }),
  variantNotAllowed: (field: string, allowed: number[]) =>
    fail('variant_not_allowed', `This edge makes "${field}" only as one of ${allowed.join(', ')} without a signed link.`, { field, allowed }),
  // tus 1.0 (contract §9): the statuses its specification gives these cases.
  tusVersion: (supported: string) =>
    fail('unsupported_tus_version', `This server speaks tus ${supported}: send "Tus-Resumable: ${supported}".`, { field: 'Tus-Resumable', supported: [supported] }),
  offsetMismatch: (offset: number) =>
    fail('offset_mismatch', `The upload is at offset ${offset}: send Upload-Offset: ${offset} (ask with HEAD).`, { field: 'Upload-Offset', offset }),
  uploadBusy: () =>
    fail('upload_busy', 'Another request is writing this upload; wait for it to end, then ask for the offset again with HEAD.'),
  uploadExpired: () =>
    fail('upload_expired', 'This upload expired (see Upload-Expires) and is being removed; start a new upload.'),
  uploadLengthExceeded: (length: number) =>
    fail('upload_length_exceeded', `The bytes sent go past the upload's length of ${length} bytes.`, { field: 'Upload-Length', length }),
  checksumMismatch: () =>
    fail('checksum_mismatch', 'The body does not match Upload-Checksum; none of it was kept. Send it again from the same offset.', { field: 'Upload-Checksum' }),
  wrongBodyType: (expected: string) =>
    fail('unsupported_media_type', `Send the bytes with "Content-Type: ${expected}".`, { expected }),
  internal: () => fail('internal_error', 'The service failed to handle this request; it was logged. Try again.'),
};
