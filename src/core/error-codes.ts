/**
 * Every error code Coffer answers (contract §2), with its HTTP status and the message sent
 * when the place that fails has nothing more precise to say. The origin's factories, the
 * edges, S3's mapping and the SDK take codes from here; docs/api.md § Errors lists each one
 * (test/unit/error-codes.test.ts keeps the two the same). Browser-safe: no Node imports.
 */
interface CodeEntry {
  readonly status: number;
  readonly message: string;
}

export const ERROR_CODES = {
  // 400: the body, the query or a header is wrong (`details.field` names it where one does).
  invalid_request: { status: 400, message: 'The request is malformed.' },
  invalid_name: { status: 400, message: 'The name is not valid.' },
  invalid_visibility: { status: 400, message: 'The visibility must be "Public" or "Private".' },
  invalid_file_type: { status: 400, message: 'The file type is not one of the known types.' },
  invalid_size: { status: 400, message: 'The size is not valid.' },
  invalid_content_type: { status: 400, message: 'The content type is not a valid media type.' },
  invalid_limit: { status: 400, message: 'The limit is out of range.' },
  invalid_cursor: { status: 400, message: 'The cursor is not valid.' },
  invalid_query: { status: 400, message: 'The query is not valid.' },
  invalid_expiry: { status: 400, message: 'The expiry is out of range.' },
  invalid_part_number: { status: 400, message: 'The part number is out of range.' },
  part_size_mismatch: { status: 400, message: 'The part is not the size it must be.' },
  file_type_mismatch: { status: 400, message: "The file type is not the file's." },
  invalid_days: { status: 400, message: 'The number of days is out of range.' },
  invalid_events: { status: 400, message: 'The events are not known event names.' },
  invalid_url: { status: 400, message: 'The URL is not one a webhook may call.' },
  invalid_secret: { status: 400, message: 'The secret is not valid.' },
  invalid_scopes: { status: 400, message: 'The scopes are not valid.' },
  invalid_max_size: { status: 400, message: 'The maximum size is out of range.' },
  invalid_max_files: { status: 400, message: 'The number of files is out of range.' },
  invalid_base64: { status: 400, message: 'The body is not valid base64.' },
  invalid_header: { status: 400, message: 'A header is not valid.' },
  invalid_metadata: { status: 400, message: 'Upload-Metadata is not valid.' },
  missing_filename: { status: 400, message: 'Upload-Metadata must name the file ("filename").' },
  unsupported_checksum_algorithm: { status: 400, message: 'The checksum algorithm is not supported.' },
  malformed_parts: { status: 400, message: 'The list of parts is not valid.' },
  invalid_part_order: { status: 400, message: 'The parts must be listed in ascending order of part number.' },
  invalid_part: { status: 400, message: 'A listed part was not uploaded, or its ETag does not match.' },
  entity_too_small: { status: 400, message: 'Every part but the last must be at least 5 MiB.' },
  invalid_path: { status: 400, message: 'The path is not a delivery path.' },
  invalid_variant: { status: 400, message: 'The variant parameters are not valid.' },
  not_an_image: { status: 400, message: 'Variants are made of images only.' },
  variant_not_allowed: { status: 400, message: 'This edge makes only some variants without a signed link.' },
  // 401, 403: who is calling, and what it may do.
  unauthorized: { status: 401, message: 'Send the access key as "Authorization: Bearer <ACCESS_KEY>".' },
  forbidden: { status: 403, message: 'This caller may not do this.' },
  csrf_failed: { status: 403, message: 'The CSRF token is missing or wrong.' },
  invalid_signature: { status: 403, message: 'The link is not valid: its signature does not match.' },
  link_expired: { status: 403, message: 'The link has expired; ask for a new one.' },
  signature_required: { status: 403, message: 'This file is private: it needs a signed link.' },
  link_revoked: { status: 403, message: 'This link was revoked; ask for a new one.' },
  // 404: no such thing, or out of the caller's reach.
  not_found: { status: 404, message: 'No such resource.' },
  file_not_found: { status: 404, message: 'No file has this id.' },
  folder_not_found: { status: 404, message: 'No folder has this id.' },
  upload_not_found: { status: 404, message: 'These upload values match no open upload: start a new upload with /collections/upload/file.' },
  key_not_found: { status: 404, message: 'No key has this id.' },
  webhook_not_found: { status: 404, message: 'No webhook has this id.' },
  delivery_not_found: { status: 404, message: 'No delivery has this id.' },
  method_not_allowed: { status: 405, message: 'Only GET and HEAD are answered here.' },
  request_timeout: { status: 408, message: 'The request did not arrive in time.' },
  // 409: the request conflicts with the current state.
  missing_parts: { status: 409, message: 'The upload is missing parts; send them, then complete again.' },
  upload_completed: { status: 409, message: 'This upload is already complete; its parts can no longer change.' },
  upload_not_complete: { status: 409, message: 'The file is still uploading; complete the upload first.' },
  s3_upload: { status: 409, message: 'This upload was started through the S3 interface: complete it there (CompleteMultipartUpload).' },
  folder_not_empty: { status: 409, message: 'The folder is not empty; delete its contents first or pass "recursive": true.' },
  folder_exists: { status: 409, message: 'A folder of this name already exists here.' },
  cycle: { status: 409, message: 'A folder cannot be moved into itself or into one of its own sub-folders.' },
  folder_too_deep: { status: 409, message: 'Folders are nested too deep.' },
  offset_mismatch: { status: 409, message: 'The upload is at another offset (ask with HEAD).' },
  edge_version_mismatch: { status: 409, message: 'This edge knows another version of the file.' },
  edge_feed_elsewhere: { status: 409, message: "This origin has no feed stream of this edge: acknowledge with POST /_edge/ack, or open the feed here first." },
  upload_busy: { status: 409, message: 'Another request is writing this upload; wait for it to end, then ask for the offset again with HEAD.' },
  upload_expired: { status: 410, message: 'This upload expired (see Upload-Expires) and is being removed; start a new upload.' },
  unsupported_tus_version: { status: 412, message: 'This server speaks another version of tus.' },
  // 413 to 431: sizes, types, ranges, and limits of this service.
  payload_too_large: { status: 413, message: 'The request body is over the limit.' },
  file_too_large: { status: 413, message: 'The declared size is over the limit.' },
  upload_length_exceeded: { status: 413, message: "The bytes sent go past the upload's length." },
  unsupported_media_type: { status: 415, message: 'Send the body as JSON with "Content-Type: application/json".' },
  range_not_satisfiable: { status: 416, message: 'The requested range lies outside the file.' },
  image_too_large: { status: 422, message: 'The image is too large for this edge to make variants of.' },
  invalid_image: { status: 422, message: 'The image could not be decoded.' },
  rate_limited: { status: 429, message: 'Too many requests; try again later.' },
  variant_limit: { status: 429, message: 'Too many new variants of this image were asked for without a signed link.' },
  headers_too_large: { status: 431, message: 'The request headers are too large.' },
  checksum_mismatch: { status: 460, message: 'The body does not match Upload-Checksum; none of it was kept. Send it again from the same offset.' },
  // 5xx: the service's side.
  internal_error: { status: 500, message: 'The service failed to handle this request; it was logged. Try again.' },
  bad_gateway: { status: 502, message: 'The origin could not send the file; try again.' },
  unavailable: { status: 503, message: 'The service is not available right now; try again.' },
  edge_unavailable: { status: 503, message: 'This edge cannot answer right now; try again.' },
  variant_busy: { status: 503, message: 'This edge has too many variants to make; try again later.' },
  edge_loop: { status: 508, message: 'This fill request has passed through this edge already, or through too many edges.' },
} as const satisfies Record<string, CodeEntry>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes answered with 400: the ones a field rule may fail with. */
export type FieldErrorCode = { [K in ErrorCode]: (typeof ERROR_CODES)[K]['status'] extends 400 ? K : never }[ErrorCode];

export const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ERROR_CODES, code);

/** The HTTP status a code is answered with. */
export const statusOf = (code: ErrorCode): number => ERROR_CODES[code].status;

/**
 * Codes that no server answers: the SDK and the CLI make them for failures on the client's
 * side (docs/sdk.md, docs/cli.md); their status is 0, or the answer's when one came.
 */
export const CLIENT_ERROR_CODES = ['network_error', 'http_error', 'invalid_argument', 'invalid_webhook', 'not_an_origin'] as const;

export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];
