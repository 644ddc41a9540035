/**
 * The S3 error for each of the service's (contract §12): every code of the table in
 * core/error-codes.ts maps to one S3 error on purpose, so a new code cannot fall through
 * unnoticed (the type below wants them all).
 */
import { ERROR_CODES, isErrorCode, type ErrorCode } from '../core/error-codes.js';
import { isBlobNotFound } from '../core/ports.js';
import { S3Error, isS3Error, s3Errors } from './errors.js';

/** Where an error happened, for the elements S3 names in it. */
export interface ErrorSubject {
  bucket?: string | null;
  key?: string | null;
  uploadId?: string | null;
}

type Mapper = (message: string, details: Record<string, unknown>, at: ErrorSubject) => S3Error;

const partOf = (details: Record<string, unknown>) => Number(details.part_number ?? 0);
const invalidRequest: Mapper = (message) => s3Errors.invalidRequest(message);
const invalidArgument: Mapper = (message) => s3Errors.invalidArgument(message);
const invalidPart: Mapper = (_, details) => s3Errors.invalidPart(partOf(details));
const invalidPartOrder: Mapper = () => s3Errors.invalidPartOrder();
const entityTooSmall: Mapper = (_, details) => s3Errors.entityTooSmall(partOf(details));
const malformedXml: Mapper = (message) => s3Errors.malformedXml(message);
const accessDenied: Mapper = (message) => s3Errors.accessDenied(message || undefined);
/** A 404 names the most precise thing S3 has a code for. */
const notFound: Mapper = (_, __, at) =>
  at.uploadId ? s3Errors.noSuchUpload(at.uploadId) : at.key ? s3Errors.noSuchKey(at.key) : at.bucket ? s3Errors.noSuchBucket(at.bucket) : s3Errors.accessDenied();
const bucketExists: Mapper = (_, __, at) => s3Errors.bucketAlreadyOwnedByYou(at.bucket ?? '');
/** A bucket that lists empty yet holds files no key names (service/empty-name.ts) says so. */
const bucketNotEmpty: Mapper = (message, details, at) =>
  details.hidden === true ? new S3Error(409, 'BucketNotEmpty', message, { BucketName: at.bucket ?? '' }) : s3Errors.bucketNotEmpty(at.bucket ?? '');
const uploadGone: Mapper = (_, __, at) => s3Errors.noSuchUpload(at.uploadId ?? '');
const operationAborted: Mapper = (message) =>
  new S3Error(409, 'OperationAborted', message || 'A conflicting conditional operation is currently in progress against this resource. Try again.');
/** OperationAborted (409) with this message: a write whose folder went while it was stored. */
export const s3OperationAborted = (message: string): S3Error => operationAborted(message, {}, {});
const entityTooLarge: Mapper = (_, details) => s3Errors.entityTooLarge(Number(details.limit ?? 0));
const slowDown: Mapper = (_, details) => s3Errors.slowDown(Number(details.retry_after ?? 1));
const serviceUnavailable: Mapper = (message) => s3Errors.serviceUnavailable(message);
/** Codes only the edges, tus or the HTTP parser answer, and internal_error: never a client's fault S3 can name. */
const internal: Mapper = () => s3Errors.internal();

export const S3_ERROR_FOR: Record<ErrorCode, Mapper> = {
  invalid_request: invalidRequest,
  invalid_name: invalidArgument,
  invalid_visibility: invalidRequest,
  invalid_file_type: invalidRequest,
  invalid_size: invalidRequest,
  invalid_content_type: invalidRequest,
  invalid_limit: invalidRequest,
  invalid_cursor: invalidRequest,
  invalid_query: invalidRequest,
  invalid_expiry: invalidRequest,
  invalid_part_number: invalidArgument,
  part_size_mismatch: invalidRequest,
  file_type_mismatch: invalidRequest,
  invalid_days: invalidRequest,
  invalid_events: invalidRequest,
  invalid_url: invalidRequest,
  invalid_secret: invalidRequest,
  invalid_scopes: invalidRequest,
  invalid_max_size: invalidRequest,
  invalid_max_files: invalidRequest,
  invalid_base64: invalidRequest,
  invalid_header: invalidRequest,
  invalid_metadata: invalidRequest,
  missing_filename: invalidRequest,
  unsupported_checksum_algorithm: invalidRequest,
  malformed_parts: malformedXml,
  invalid_part_order: invalidPartOrder,
  invalid_part: invalidPart,
  entity_too_small: entityTooSmall,
  invalid_path: invalidRequest,
  invalid_variant: invalidRequest,
  not_an_image: invalidRequest,
  variant_not_allowed: invalidRequest,
  unauthorized: accessDenied,
  forbidden: accessDenied,
  csrf_failed: accessDenied,
  invalid_signature: accessDenied,
  link_expired: accessDenied,
  signature_required: accessDenied,
  link_revoked: accessDenied,
  not_found: notFound,
  file_not_found: notFound,
  folder_not_found: notFound,
  upload_not_found: notFound,
  key_not_found: notFound,
  webhook_not_found: notFound,
  delivery_not_found: notFound,
  method_not_allowed: internal,
  request_timeout: internal,
  missing_parts: operationAborted,
  upload_completed: uploadGone,
  upload_not_complete: operationAborted,
  s3_upload: operationAborted,
  folder_not_empty: bucketNotEmpty,
  folder_exists: bucketExists,
  cycle: operationAborted,
  folder_too_deep: invalidArgument,
  offset_mismatch: operationAborted,
  upload_busy: operationAborted,
  edge_version_mismatch: internal,
  edge_feed_elsewhere: internal,
  upload_expired: internal,
  unsupported_tus_version: internal,
  payload_too_large: entityTooLarge,
  file_too_large: entityTooLarge,
  upload_length_exceeded: entityTooLarge,
  unsupported_media_type: internal,
  range_not_satisfiable: internal,
  image_too_large: internal,
  invalid_image: internal,
  rate_limited: slowDown,
  variant_limit: slowDown,
  headers_too_large: internal,
  checksum_mismatch: internal,
  internal_error: internal,
  bad_gateway: internal,
  unavailable: serviceUnavailable,
  edge_unavailable: serviceUnavailable,
  variant_busy: serviceUnavailable,
  edge_loop: internal,
};

/** What S3 answers for a status outside the table's codes (an error some library threw). */
const BY_STATUS: Record<number, Mapper> = {
  400: invalidRequest, 401: accessDenied, 403: accessDenied, 404: notFound, 409: operationAborted,
  413: entityTooLarge, 429: slowDown, 503: serviceUnavailable,
};

/**
 * The S3 error for one the service threw (CofferError, by its code), or InternalError for
 * anything else.
 */
export function toS3Error(err: unknown, at: ErrorSubject = {}): S3Error {
  if (isS3Error(err)) return err;
  // The object's bytes went while the request was served (deleted by another request).
  if (isBlobNotFound(err)) return at.key ? s3Errors.noSuchKey(at.key) : s3Errors.internal();
  const e = err as { status?: unknown; statusCode?: unknown; code?: unknown; message?: unknown; details?: Record<string, unknown> } | null;
  // The framework refuses a request it cannot read (a Content-Type that is no media type): the client's fault, not a retry.
  if (e && typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500 && typeof e.code === 'string' && e.code.startsWith('FST_')) {
    return e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? s3Errors.invalidArgument('The Content-Type header is not a valid media type.') : s3Errors.invalidRequest(String(e.message ?? ''));
  }
  if (!e || typeof e.status !== 'number' || typeof e.code !== 'string') return s3Errors.internal();
  const message = typeof e.message === 'string' ? e.message : '';
  const details = e.details ?? {};
  // A code of the table at its own status maps by code; anything else by status alone.
  const mapper = isErrorCode(e.code) && ERROR_CODES[e.code].status === e.status ? S3_ERROR_FOR[e.code] : (BY_STATUS[e.status] ?? internal);
  return mapper(message, details, at);
}
