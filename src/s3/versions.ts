/**
 * The versions API on buckets that are never versioned (contract §12; docs/s3.md): every object
 * is its only version, "null", and the latest. ListObjectVersions lists them as S3 lists an
 * unversioned bucket, so "empty this bucket" tools (aws, Terraform, rclone --s3-versions) work;
 * a request naming a version takes "null" as no version at all and refuses any other id as S3
 * does for a bucket without versioning.
 */
import { s3Errors } from './errors.js';
import { encoder, list } from './list.js';
import { etagOf, intParam, isoTime, noBody, ownerOf, quoted, xmlAnswer, type S3Handler, type S3Request } from './context.js';
import type { XmlFields } from './xml.js';

/** The one version id an object of an unversioned bucket has. */
export const NULL_VERSION = 'null';

export const invalidVersionId = (value: string) => s3Errors.invalidArgument('Invalid version id specified', 'versionId', value);

/** A request's versionId: absent or "null" names the object itself; any other id is refused. */
export function checkVersionId(r: S3Request): boolean {
  const id = r.query.get('versionId');
  if (id === undefined) return false;
  if (id !== NULL_VERSION) throw invalidVersionId(id);
  return true;
}

export const listObjectVersions: S3Handler = async (r) => {
  await noBody(r);
  const encode = encoder(r);
  const prefix = r.query.get('prefix') ?? '';
  const delimiter = r.query.get('delimiter') ?? '';
  const max = intParam(r, 'max-keys', 1000, 0, 1000);
  const keyMarker = r.query.get('key-marker') ?? '';
  const idMarker = r.query.get('version-id-marker') ?? '';
  if (idMarker !== '' && keyMarker === '') throw s3Errors.invalidArgument('A version-id marker cannot be specified without a key marker.', 'version-id-marker', idMarker);
  if (idMarker !== '' && idMarker !== NULL_VERSION) throw s3Errors.invalidArgument('Invalid version id specified', 'version-id-marker', idMarker);
  // Each key has one version: after (key, "null") is after the key, as after the key alone.
  const markerIsPrefix = delimiter !== '' && keyMarker.endsWith(delimiter);
  const listing = await list(r, prefix, delimiter, keyMarker === '' ? null : keyMarker, markerIsPrefix, max);
  const owner = ownerOf(r.caller);
  const versions: XmlFields = [];
  const prefixes: XmlFields = [];
  for (const item of listing.items) {
    if (item.kind === 'prefix') {
      prefixes.push(['CommonPrefixes', [['Prefix', encode(item.key)]]]);
      continue;
    }
    versions.push(['Version', [
      ['Key', encode(item.key)], ['VersionId', NULL_VERSION], ['IsLatest', true], ['LastModified', isoTime(item.file.completed_at ?? item.file.updated_at)],
      ['ETag', quoted(etagOf(item.file))], ['Size', item.file.size], ['Owner', owner], ['StorageClass', 'STANDARD'],
    ]]);
  }
  const last = listing.items[listing.items.length - 1];
  const next = listing.truncated && last ? last : null;
  return xmlAnswer('ListVersionsResult', [
    ['Name', listing.bucket], ['Prefix', encode(prefix)], ['KeyMarker', encode(keyMarker)], ['VersionIdMarker', idMarker],
    ['NextKeyMarker', next ? encode(next.key) : null], ['NextVersionIdMarker', next?.kind === 'object' ? NULL_VERSION : null],
    ['MaxKeys', max], ['Delimiter', delimiter === '' ? null : encode(delimiter)], ['EncodingType', r.query.get('encoding-type')],
    ['IsTruncated', listing.truncated], ...versions, ...prefixes,
  ]);
};
