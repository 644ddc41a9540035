/**
 * Multipart uploads (contract §12) on Coffer's upload engine (service/uploads/s3.ts):
 * CreateMultipartUpload, UploadPart (streamed, its MD5 the part's ETag), UploadPartCopy,
 * CompleteMultipartUpload (S3's part rules; the ETag in S3's multipart form),
 * AbortMultipartUpload, ListParts and ListMultipartUploads.
 */
import type { UploadKey } from '../service/uploads/s3.js';
import { writeCondition } from './conditional-writes.js';
import { s3Errors } from './errors.js';
import { requireBucket, type BucketAt } from './mapping.js';
import { etagOf, intParam, isoTime, noBody, ownerOf, quoted, xmlAnswer, type S3Handler, type S3Request } from './context.js';
import { contentTypeOf, metaOf, visibilityOf } from './object-headers.js';
import { requireCopySource, withMd5, writePlace, writing } from './objects.js';
import { encoder } from './list.js';
import { childOf, childrenOf, type XmlFields } from './xml.js';
import { COMPLETE_BODY, readXmlBody } from './xml-bodies.js';

async function uploadKey(r: S3Request): Promise<{ bucket: BucketAt; u: UploadKey }> {
  const bucket = await requireBucket(r.service, r.caller, r.bucket!);
  const uploadId = r.query.get('uploadId') ?? '';
  return { bucket, u: { uploadId, bucketId: bucket.at.folder.id, key: r.key! } };
}

/**
 * A part or a completion that failed because the bucket went meanwhile (deleted with its
 * subtree, its uploads with it) is NoSuchBucket; an upload gone with a folder in it stays
 * NoSuchUpload, as S3 answers for an aborted upload.
 */
const inBucket = <T>(r: S3Request, bucket: BucketAt, work: Promise<T>): Promise<T> => writing(r, bucket, bucket.at, work);

function partNumberOf(r: S3Request): number {
  const raw = r.query.get('partNumber') ?? '';
  if (!/^\d{1,5}$/.test(raw) || Number(raw) < 1 || Number(raw) > 10_000) {
    throw s3Errors.invalidArgument('Part number must be an integer between 1 and 10000, inclusive.', 'partNumber', raw);
  }
  return Number(raw);
}

export const createMultipart: S3Handler = async (r) => {
  await noBody(r);
  const { bucket, path, at } = await writePlace(r);
  const file = await writing(r, bucket, at, r.service.multipart.create(r.caller, {
    at, bucketId: bucket.at.folder.id, key: r.key!, name: path.name, contentType: contentTypeOf(r.headers, path.name),
    visibility: visibilityOf(r.headers), meta: metaOf(r.headers),
  }));
  const answer = xmlAnswer('InitiateMultipartUploadResult', [['Bucket', bucket.name], ['Key', r.key!], ['UploadId', file.id]]);
  const algorithm = r.headers.get('x-amz-checksum-algorithm');
  if (algorithm) answer.headers!['x-amz-checksum-algorithm'] = algorithm;
  return answer;
};

export const uploadPart: S3Handler = async (r) => {
  const partNumber = partNumberOf(r);
  const { bucket, u } = await uploadKey(r);
  const payload = r.payload();
  const etag = await inBucket(r, bucket, r.service.multipart.writePart(r.caller, u, partNumber, payload.length, payload, () => payload.md5Hex));
  const headers: Record<string, string> = { etag: quoted(etag) };
  const checksum = payload.verifiedChecksum;
  if (checksum) headers[checksum.header] = checksum.value;
  return { headers };
};

export const uploadPartCopy: S3Handler = async (r) => {
  await noBody(r);
  const partNumber = partNumberOf(r);
  const { bucket, u } = await uploadKey(r);
  const source = await requireCopySource(r);
  const rangeHeader = r.headers.get('x-amz-copy-source-range');
  let range: { start: number; end: number } | undefined;
  if (rangeHeader !== undefined) {
    const m = /^bytes=(\d+)-(\d+)$/.exec(rangeHeader.trim());
    if (!m) throw s3Errors.invalidArgument('The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy.', 'x-amz-copy-source-range', rangeHeader);
    range = { start: Number(m[1]), end: Number(m[2]) };
    if (range.end < range.start || range.end >= source.size) throw s3Errors.invalidRange(source.size);
  }
  const size = range ? range.end - range.start + 1 : source.size;
  const copied = withMd5(size === 0 ? nothing() : await r.service.objects.read(r.caller, source, range));
  const etag = await inBucket(r, bucket, r.service.multipart.writePart(r.caller, u, partNumber, size, copied.body, copied.md5));
  return xmlAnswer('CopyPartResult', [['LastModified', isoTime(Date.now())], ['ETag', quoted(etag)]]);
};

async function* nothing(): AsyncGenerator<Buffer> {}

export const completeMultipart: S3Handler = async (r) => {
  const { bucket, u } = await uploadKey(r);
  const condition = writeCondition(r);
  const doc = await readXmlBody(r.payload(), COMPLETE_BODY);
  if (doc?.name !== 'CompleteMultipartUpload') throw s3Errors.malformedXml();
  const parts = childrenOf(doc, 'Part').map((p) => {
    const number = childOf(p, 'PartNumber')?.text.trim() ?? '';
    const etag = childOf(p, 'ETag')?.text.trim();
    if (!/^\d{1,5}$/.test(number) || !etag) throw s3Errors.malformedXml();
    return { partNumber: Number(number), etag };
  });
  if (parts.length > COMPLETE_BODY.items) throw s3Errors.malformedXml();
  const file = await inBucket(r, bucket, r.service.multipart.complete(r.caller, u, parts, condition ?? undefined));
  return xmlAnswer('CompleteMultipartUploadResult', [
    ['Location', `/${encodeURIComponent(bucket.name)}/${r.key!.split('/').map(encodeURIComponent).join('/')}`], ['Bucket', bucket.name], ['Key', r.key!], ['ETag', quoted(etagOf(file))],
  ]);
};

export const abortMultipart: S3Handler = async (r) => {
  await noBody(r);
  const { u } = await uploadKey(r);
  await r.service.multipart.abort(r.caller, u);
  return { status: 204 };
};

export const listParts: S3Handler = async (r) => {
  await noBody(r);
  const { bucket, u } = await uploadKey(r);
  const max = intParam(r, 'max-parts', 1000, 0, 1000);
  const marker = intParam(r, 'part-number-marker', 0, 0, 10_000);
  const { parts, upload } = await r.service.multipart.parts(r.caller, u);
  const after = parts.filter((p) => p.part_number > marker);
  const page = after.slice(0, max);
  const truncated = after.length > max;
  return xmlAnswer('ListPartsResult', [
    ['Bucket', bucket.name], ['Key', upload.object_key], ['UploadId', u.uploadId], ['Initiator', ownerOf(r.caller)], ['Owner', ownerOf(r.caller)], ['StorageClass', 'STANDARD'],
    ['PartNumberMarker', marker], ['NextPartNumberMarker', page.length > 0 ? page[page.length - 1]!.part_number : marker], ['MaxParts', max], ['IsTruncated', truncated],
    ...page.map((p): [string, XmlFields] => ['Part', [['PartNumber', p.part_number], ['LastModified', isoTime(p.updated_at)], ['ETag', quoted(p.md5 ?? '')], ['Size', p.size]]]),
  ]);
};

export const listMultipartUploads: S3Handler = async (r) => {
  await noBody(r);
  const encode = encoder(r);
  const bucket = await requireBucket(r.service, r.caller, r.bucket!);
  const prefix = r.query.get('prefix') ?? '';
  const delimiter = r.query.get('delimiter') ?? '';
  const max = intParam(r, 'max-uploads', 1000, 0, 1000);
  const keyMarker = r.query.get('key-marker') ?? '';
  const idMarker = r.query.get('upload-id-marker') ?? '';
  // Without an upload id marker, every upload of the marker's key is before the page.
  const after = keyMarker === '' ? null : { key: keyMarker, fileId: idMarker === '' ? '\u{10ffff}' : idMarker };
  const { uploads, more } = await r.service.multipart.list(r.caller, bucket.at.folder.id, prefix, after, max);
  const fields: XmlFields = [];
  const prefixes: string[] = [];
  for (const up of uploads) {
    const cut = delimiter === '' ? -1 : up.object_key.indexOf(delimiter, prefix.length);
    if (cut >= 0) {
      const common = up.object_key.slice(0, cut + delimiter.length);
      if (prefixes[prefixes.length - 1] !== common) prefixes.push(common);
      continue;
    }
    fields.push(['Upload', [['Key', encode(up.object_key)], ['UploadId', up.file_id], ['Initiator', ownerOf(r.caller)], ['Owner', ownerOf(r.caller)], ['StorageClass', 'STANDARD'], ['Initiated', isoTime(up.created_at)]]]);
  }
  const last = uploads[uploads.length - 1];
  // encoding-type=url: S3 encodes the keys, prefixes, delimiter and key markers here too.
  return xmlAnswer('ListMultipartUploadsResult', [
    ['Bucket', bucket.name], ['KeyMarker', encode(keyMarker)], ['UploadIdMarker', idMarker], ['NextKeyMarker', more && last ? encode(last.object_key) : null],
    ['NextUploadIdMarker', more && last ? last.file_id : null], ['Delimiter', delimiter === '' ? null : encode(delimiter)], ['Prefix', encode(prefix)],
    ['MaxUploads', max], ['EncodingType', r.query.get('encoding-type')], ['IsTruncated', more],
    ...fields, ...prefixes.map((p): [string, XmlFields] => ['CommonPrefixes', [['Prefix', encode(p)]]]),
  ]);
};
