/** What S3 answered, read from the SDK's errors and values. */

/** What an S3 error is, by its code or, for bodiless answers (HEAD), its status. */
export function s3Code(err: unknown): string | undefined {
  const e = err as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } } | null;
  return e?.Code ?? e?.name;
}
export const isNoSuchUpload = (err: unknown): boolean => s3Code(err) === 'NoSuchUpload';
export const isNotFound = (err: unknown): boolean => {
  const code = s3Code(err);
  return code === 'NotFound' || code === 'NoSuchKey' || (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode === 404;
};

/** An ETag without the quotes S3 sends it in. */
export const unquote = (etag: string): string => etag.replace(/^"|"$/g, '');
