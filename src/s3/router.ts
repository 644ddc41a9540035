/**
 * Which S3 operation a request is (contract §12), from its method, whether it names a bucket and
 * a key, and its sub-resource query parameters. Anything else S3 has answers NotImplemented.
 */
import { s3Errors } from './errors.js';
import type { S3Handler, S3Request } from './context.js';
import { bucketLocation, bucketVersioning, createBucket, deleteBucket, headBucket, listBuckets } from './buckets.js';
import { copyObject, deleteObject, deleteObjects, getObject, headObject, putObject } from './objects.js';
import { listObjectsV1, listObjectsV2 } from './list.js';
import { listObjectVersions } from './versions.js';
import { getObjectAttributes } from './object-attributes.js';
import { abortMultipart, completeMultipart, createMultipart, listMultipartUploads, listParts, uploadPart, uploadPartCopy } from './multipart.js';

/** Sub-resources of S3 this service does not have (ACLs, tags, policies…). */
const UNSUPPORTED = [
  'accelerate', 'acl', 'analytics', 'cors', 'encryption', 'intelligent-tiering', 'inventory', 'legal-hold', 'lifecycle', 'logging',
  'metrics', 'notification', 'object-lock', 'ownershipControls', 'policy', 'policyStatus', 'publicAccessBlock', 'replication', 'requestPayment',
  'restore', 'retention', 'select', 'tagging', 'torrent', 'website',
];

/** Every operation the router can choose, by name: the authorization matrix test holds each to a row. */
export const S3_OPERATIONS: Readonly<Record<string, S3Handler>> = {
  listBuckets, createBucket, deleteBucket, headBucket, bucketLocation, bucketVersioning, listMultipartUploads, listObjectsV1, listObjectsV2,
  deleteObjects, putObject, copyObject, uploadPart, uploadPartCopy, getObject, listParts, headObject, deleteObject, abortMultipart,
  createMultipart, completeMultipart, listObjectVersions, getObjectAttributes,
};

export function operationOf(r: S3Request): S3Handler {
  const q = r.query;
  const unsupported = UNSUPPORTED.find((name) => q.has(name)) ?? (q.has('attributes') && (r.key === null || r.method !== 'GET') ? 'attributes' : undefined);
  if (unsupported) throw s3Errors.notImplemented(`the "${unsupported}" sub-resource`);
  const m = r.method;
  if (r.bucket === null) {
    if (m === 'GET' || m === 'HEAD') return listBuckets;
    throw s3Errors.methodNotAllowed(m);
  }
  if (r.key === null) {
    switch (m) {
      case 'PUT':
        if (q.has('versioning')) throw s3Errors.notImplemented('versioning');
        return createBucket;
      case 'DELETE':
        return deleteBucket;
      case 'HEAD':
        return headBucket;
      case 'GET':
        if (q.has('location')) return bucketLocation;
        if (q.has('versioning')) return bucketVersioning;
        if (q.has('uploads')) return listMultipartUploads;
        if (q.has('versions')) return listObjectVersions;
        return q.get('list-type') === '2' ? listObjectsV2 : listObjectsV1;
      case 'POST':
        if (q.has('delete')) return deleteObjects;
        break;
    }
    throw s3Errors.methodNotAllowed(m);
  }
  const copy = r.headers.has('x-amz-copy-source');
  switch (m) {
    case 'PUT':
      if (q.has('uploadId') || q.has('partNumber')) return copy ? uploadPartCopy : uploadPart;
      return copy ? copyObject : putObject;
    case 'GET':
      if (q.has('attributes')) return getObjectAttributes;
      return q.has('uploadId') ? listParts : getObject;
    case 'HEAD':
      return headObject;
    case 'DELETE':
      return q.has('uploadId') ? abortMultipart : deleteObject;
    case 'POST':
      if (q.has('uploads')) return createMultipart;
      if (q.has('uploadId')) return completeMultipart;
      break;
  }
  throw s3Errors.methodNotAllowed(m);
}
