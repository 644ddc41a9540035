/**
 * Bucket operations (contract §12): a bucket is a top-level folder. CreateBucket makes one,
 * Private unless `x-amz-acl: public-read`; DeleteBucket removes one that holds no file;
 * ListBuckets lists those the key sees; HeadBucket and GetBucketLocation answer for them.
 */
import { authorize } from '../service/policy.js';
import { s3Errors } from './errors.js';
import { toS3Error } from './error-map.js';
import { checkNewBucketName, requireBucket } from './mapping.js';
import { isoTime, noBody, ownerOf, xmlAnswer, type S3Handler, type S3Request } from './context.js';
import { BUCKET_CONFIGURATION_BODY, readXmlBody } from './xml-bodies.js';

export const listBuckets: S3Handler = async (r) => {
  await noBody(r);
  const sight = await r.service.paths.sight(r.caller);
  const folders = await r.service.paths.topFolders(r.caller, sight);
  return xmlAnswer('ListAllMyBucketsResult', [
    ['Owner', ownerOf(r.caller)],
    ['Buckets', folders.map((f) => ['Bucket', [['Name', f.name], ['CreationDate', isoTime(f.created_at)]]])],
  ]);
};

const bucketName = (r: S3Request): string => r.bucket!;

export const createBucket: S3Handler = async (r) => {
  const name = bucketName(r);
  checkNewBucketName(name);
  // A CreateBucketConfiguration (LocationConstraint) may come along: any region is this one.
  const doc = await readXmlBody(r.payload(), BUCKET_CONFIGURATION_BODY);
  if (doc !== null && doc.name !== 'CreateBucketConfiguration') throw s3Errors.malformedXml();
  const acl = r.headers.get('x-amz-acl');
  const visibility = acl === 'public-read' || acl === 'public-read-write' ? 'Public' : 'Private';
  try {
    await r.service.tree.create(r.caller, { name, visibility });
  } catch (err) {
    // A key confined to a folder makes nothing at the top.
    if ((err as { status?: number }).status === 404) throw s3Errors.accessDenied();
    throw toS3Error(err, { bucket: name });
  }
  return { status: 200, headers: { location: `/${name}` } };
};

export const deleteBucket: S3Handler = async (r) => {
  await noBody(r);
  const bucket = await requireBucket(r.service, r.caller, bucketName(r));
  if (bucket.at.place !== 'inside') throw s3Errors.accessDenied();
  try {
    await r.service.paths.removeTopFolder(r.caller, bucket.at.folder.id);
  } catch (err) {
    throw toS3Error(err, { bucket: bucket.name });
  }
  return { status: 204 };
};

export const headBucket: S3Handler = async (r) => {
  // What S3 asks ListBucket for: a key that may only write does not learn which buckets exist.
  authorize(r.caller, 'folder.read');
  await requireBucket(r.service, r.caller, bucketName(r));
  return { status: 200, headers: { 'x-amz-bucket-region': r.verified.scope.split('/')[1]! } };
};

/** Every region is this one: the answer S3 gives for us-east-1. */
export const bucketLocation: S3Handler = async (r) => {
  // What S3 asks ListBucket for: a key that may only write does not learn which buckets exist.
  authorize(r.caller, 'folder.read');
  await requireBucket(r.service, r.caller, bucketName(r));
  return { status: 200, headers: { 'content-type': 'application/xml' }, body: '<?xml version="1.0" encoding="UTF-8"?>\n<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></LocationConstraint>' };
};

/** Versioning is never enabled. */
export const bucketVersioning: S3Handler = async (r) => {
  // What S3 asks ListBucket for: a key that may only write does not learn which buckets exist.
  authorize(r.caller, 'folder.read');
  await requireBucket(r.service, r.caller, bucketName(r));
  return xmlAnswer('VersioningConfiguration', []);
};
