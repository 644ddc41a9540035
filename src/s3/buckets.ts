/**
 * Bucket operations (contract §12): a bucket is a top-level folder. CreateBucket makes one,
 * Private unless `x-amz-acl: public-read`; DeleteBucket removes one that holds no file;
 * ListBuckets lists those the key sees; HeadBucket and GetBucketLocation answer for them.
 */
import { compareKeys } from '../core/names.js';
import { authorize } from '../service/policy.js';
import { s3Errors } from './errors.js';
import { toS3Error } from './error-map.js';
import { checkNewBucketName, requireBucket } from './mapping.js';
import { intParam, isoTime, noBody, ownerOf, xmlAnswer, type S3Handler, type S3Request } from './context.js';
import { BUCKET_CONFIGURATION_BODY, readXmlBody } from './xml-bodies.js';

/** The bucket a ListBuckets page ends with, as its continuation token. */
const tokenOf = (name: string): string => Buffer.from(name, 'utf8').toString('base64url');

function afterToken(token: string | undefined): string | null {
  if (token === undefined) return null;
  const name = Buffer.from(token, 'base64url').toString('utf8');
  if (token === '' || tokenOf(name) !== token) throw s3Errors.invalidArgument('The continuation token provided is incorrect.', 'continuation-token', token);
  return name;
}

/** ListBuckets, whole or in pages (max-buckets, continuation-token, prefix), in S3's order of names. */
export const listBuckets: S3Handler = async (r) => {
  await noBody(r);
  const prefix = r.query.get('prefix') ?? '';
  const paged = r.query.has('max-buckets') || r.query.has('continuation-token');
  const max = intParam(r, 'max-buckets', 10_000, 1, 10_000);
  const after = afterToken(r.query.get('continuation-token'));
  const sight = await r.service.paths.sight(r.caller);
  // By name in S3's byte order (folders come ordered as "name/", where "a.b/" is before "a/").
  const folders = (await r.service.paths.topFolders(r.caller, sight))
    .filter((f) => f.name.startsWith(prefix) && (after === null || compareKeys(f.name, after) > 0))
    .sort((a, b) => compareKeys(a.name, b.name));
  const page = paged ? folders.slice(0, max) : folders;
  const more = page.length < folders.length;
  return xmlAnswer('ListAllMyBucketsResult', [
    ['Owner', ownerOf(r.caller)],
    ['Buckets', page.map((f) => ['Bucket', [['Name', f.name], ['CreationDate', isoTime(f.created_at)]]])],
    ['ContinuationToken', more ? tokenOf(page[page.length - 1]!.name) : null],
    ['Prefix', r.query.has('prefix') ? prefix : null],
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
  const remove = () => r.service.paths.removeTopFolder(r.caller, bucket.at.folder.id);
  try {
    try {
      await remove();
    } catch (err) {
      // S3 deletes a bucket whose only content is open multipart uploads, aborting them.
      if ((err as { code?: string }).code !== 'folder_not_empty' || !(await r.service.multipart.abortForBucketDelete(r.caller, bucket.at.folder.id))) throw err;
      await remove();
    }
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
