/**
 * S3's errors (contract §12): a code S3 clients know, the status S3 answers it with, and the
 * extra elements S3 puts in its XML body (Key, BucketName, UploadId…). Made by named factories,
 * like the service's own errors; xml.ts renders them, error-map.ts maps the service's onto them.
 */
export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Extra elements of the error body, in order. */
    readonly fields: Record<string, string | number> = {},
    /** Headers to send with it (Retry-After, for one). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'S3Error';
  }
}

export const isS3Error = (e: unknown): e is S3Error => e instanceof S3Error;

export const s3Errors = {
  accessDenied: (message = 'Access Denied.') => new S3Error(403, 'AccessDenied', message),
  signatureDoesNotMatch: (message = 'The request signature we calculated does not match the signature you provided. Check your key and signing method.', fields: Record<string, string> = {}) =>
    new S3Error(403, 'SignatureDoesNotMatch', message, fields),
  invalidAccessKeyId: (message = 'The AWS access key Id you provided does not exist in our records.', keyId?: string) =>
    new S3Error(403, 'InvalidAccessKeyId', message, keyId ? { AWSAccessKeyId: keyId } : {}),
  requestTimeTooSkewed: (requestTime: string, serverTime: string) =>
    new S3Error(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.', {
      RequestTime: requestTime, ServerTime: serverTime, MaxAllowedSkewMilliseconds: 900_000,
    }),
  expired: () => new S3Error(403, 'AccessDenied', 'Request has expired'),
  authorizationHeaderMalformed: (message: string) => new S3Error(400, 'AuthorizationHeaderMalformed', message),
  authorizationQueryParametersError: (message: string) => new S3Error(400, 'AuthorizationQueryParametersError', message),
  /** A presigned URL's X-Amz-Expires out of S3's range: S3 answers these 403. */
  presignedExpiresInvalid: (message: string) => new S3Error(403, 'AuthorizationQueryParametersError', message),
  headersNotSigned: (names: string[]) =>
    new S3Error(403, 'AccessDenied', 'There were headers present in the request which were not signed.', { HeadersNotSigned: names.join(', ') }),
  invalidArgument: (message: string, name?: string, value?: string) =>
    new S3Error(400, 'InvalidArgument', message, name ? { ArgumentName: name, ...(value !== undefined ? { ArgumentValue: value } : {}) } : {}),
  invalidRequest: (message: string) => new S3Error(400, 'InvalidRequest', message),
  /** A path whose percent-encoded bytes are not UTF-8. */
  invalidUri: () => new S3Error(400, 'InvalidURI', "Couldn't parse the specified URI."),
  contentSha256Mismatch: (given: string, computed: string) =>
    new S3Error(400, 'XAmzContentSHA256Mismatch', 'The provided \'x-amz-content-sha256\' header does not match what was computed.', {
      ClientComputedContentSHA256: given, S3ComputedContentSHA256: computed,
    }),
  badDigest: (message = 'The Content-MD5 or checksum value you specified did not match what we received.') => new S3Error(400, 'BadDigest', message),
  invalidDigest: (message = 'The Content-MD5 or checksum value you specified is not valid.') => new S3Error(400, 'InvalidDigest', message),
  incompleteBody: () => new S3Error(400, 'IncompleteBody', 'You did not provide the number of bytes specified by the Content-Length HTTP header.'),
  missingContentLength: () => new S3Error(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.'),
  malformedXml: (message = 'The XML you provided was not well-formed or did not validate against our published schema.') => new S3Error(400, 'MalformedXML', message),
  noSuchBucket: (bucket: string) => new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist.', { BucketName: bucket }),
  noSuchKey: (key: string) => new S3Error(404, 'NoSuchKey', 'The specified key does not exist.', { Key: key }),
  noSuchUpload: (uploadId: string) =>
    new S3Error(404, 'NoSuchUpload', 'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.', { UploadId: uploadId }),
  bucketNotEmpty: (bucket: string) => new S3Error(409, 'BucketNotEmpty', 'The bucket you tried to delete is not empty.', { BucketName: bucket }),
  bucketAlreadyOwnedByYou: (bucket: string) =>
    new S3Error(409, 'BucketAlreadyOwnedByYou', 'The bucket you tried to create already exists, and you own it.', { BucketName: bucket }),
  invalidBucketName: (bucket: string) => new S3Error(400, 'InvalidBucketName', 'The specified bucket is not valid.', { BucketName: bucket }),
  invalidKey: (key: string, why: string) => new S3Error(400, 'InvalidArgument', `Coffer cannot store this key: ${why}.`, { Key: key }),
  keyTooLong: () => new S3Error(400, 'KeyTooLongError', 'Your key is too long.'),
  invalidPart: (partNumber: number) =>
    new S3Error(400, 'InvalidPart', 'One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part\'s entity tag.', { PartNumber: partNumber }),
  invalidPartOrder: () => new S3Error(400, 'InvalidPartOrder', 'The list of parts was not in ascending order. Parts must be ordered by part number.'),
  entityTooSmall: (partNumber: number) =>
    new S3Error(400, 'EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size: every part but the last must be at least 5 MiB.', { PartNumber: partNumber, MinSizeAllowed: 5 * 1024 * 1024 }),
  entityTooLarge: (max: number) => new S3Error(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed object size.', { MaxSizeAllowed: max }),
  invalidRange: (size: number) => new S3Error(416, 'InvalidRange', 'The requested range is not satisfiable.', { ActualObjectSize: size }),
  invalidPartNumber: () => new S3Error(416, 'InvalidPartNumber', 'The requested partnumber is not satisfiable'),
  preconditionFailed: (condition: string) => new S3Error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold.', { Condition: condition }),
  conditionalRequestConflict: () =>
    new S3Error(409, 'ConditionalRequestConflict', 'A conflicting operation occurred. If using PutObject you can retry the request. If using multipart upload you should initiate another CreateMultipartUpload request and re-upload each part.'),
  methodNotAllowed: (method: string) => new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.', { Method: method }),
  notImplemented: (what: string) => new S3Error(501, 'NotImplemented', `A header or query you provided implies functionality that is not implemented: ${what}.`),
  slowDown: (retryAfter: number) => new S3Error(503, 'SlowDown', 'Please reduce your request rate.', {}, { 'Retry-After': String(retryAfter) }),
  serviceUnavailable: (message: string) => new S3Error(503, 'ServiceUnavailable', message),
  internal: () => new S3Error(500, 'InternalError', 'We encountered an internal error. Please try again.'),
};
