/**
 * S3's conditional writes on PutObject and CompleteMultipartUpload (contract §12, docs/s3.md):
 * `If-None-Match: *` writes only where the key has no object, `If-Match: ETag` only over the
 * object of that ETag. The service (service/uploads/s3-conditions.ts) asks before the bytes
 * are joined, where a failed condition is 412 PreconditionFailed (404 NoSuchKey for If-Match
 * on no object), and again in the commit, where a write without condition that came in
 * between makes it 409 ConditionalRequestConflict, as S3 answers a conflict during the write.
 */
import type { StoredFile } from '../core/ports.js';
import type { WriteCondition } from '../service/uploads/s3-conditions.js';
import { etagOf, type S3Request } from './context.js';
import { s3Errors } from './errors.js';

const unquoted = (tag: string) => tag.trim().replace(/^W\//, '').replace(/^"|"$/g, '');

/** The condition of a write request, or null; refuses the forms S3 does not implement. */
export function writeCondition(r: S3Request): WriteCondition | null {
  const ifNoneMatch = r.headers.get('if-none-match');
  const ifMatch = r.headers.get('if-match');
  if (ifNoneMatch === undefined && ifMatch === undefined) return null;
  if (ifNoneMatch !== undefined && ifMatch !== undefined) throw s3Errors.notImplemented('If-Match and If-None-Match together on a write');
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() !== '*') throw s3Errors.notImplemented('If-None-Match with a value other than * on a write');
    return {
      judge(current, phase) {
        if (current === null) return;
        throw phase === 'check' ? s3Errors.preconditionFailed('If-None-Match') : s3Errors.conditionalRequestConflict();
      },
    };
  }
  const tags = ifMatch!.split(',').map(unquoted);
  const key = r.key!;
  const holds = (current: StoredFile) => tags.includes('*') || tags.includes(etagOf(current));
  return {
    judge(current, phase) {
      if (current !== null && holds(current)) return;
      if (phase === 'commit') throw s3Errors.conditionalRequestConflict();
      throw current === null ? s3Errors.noSuchKey(key) : s3Errors.preconditionFailed('If-Match');
    },
  };
}
