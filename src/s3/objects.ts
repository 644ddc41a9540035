/**
 * Object operations (contract §12): PutObject (streamed into the upload engine), GetObject
 * (Range, conditional), HeadObject, DeleteObject, DeleteObjects and CopyObject. A PUT or a copy
 * over a key replaces the file; a delete removes it; both are gone from every edge before the
 * answer.
 */
import { createHash } from 'node:crypto';
import type { StoredFile } from '../core/ports.js';
import type { Located } from '../service/paths.js';
import { writeCondition } from './conditional-writes.js';
import { partNumberOf, partRange, partsOf } from './object-parts.js';
import { s3Errors } from './errors.js';
import { s3OperationAborted } from './error-map.js';
import { parseKey, requireBucket, type BucketAt, type KeyPath } from './mapping.js';
import { etagOf, isoTime, noBody, quoted, xmlAnswer, type S3Answer, type S3Handler, type S3Request } from './context.js';
import { checkConditions, contentTypeOf, metaOf, storedChecksum, withChecksum, objectHeaders, rangeOf, responseOverrides, showSafely, visibilityOf } from './object-headers.js';
import { childOf, childrenOf, type XmlFields } from './xml.js';
import { DELETE_BODY, readXmlBody } from './xml-bodies.js';
import { lenientDecode } from './sigv4.js';
import { NULL_VERSION, checkVersionId } from './versions.js';

const EMPTY_MD5 = 'd41d8cd98f00b204e9800998ecf8427e';

/** The bucket, the key's path, and the folder that holds it (null when it does not exist). */
async function place(r: S3Request, bucketName: string, key: string): Promise<{ bucket: BucketAt; path: KeyPath; at: Located | null }> {
  const bucket = await requireBucket(r.service, r.caller, bucketName);
  const path = parseKey(key);
  const at = await r.service.paths.locate(bucket.sight, [bucketName, ...path.folders]);
  return { bucket, path, at };
}

/** The object a key names, or NoSuchKey. */
export async function requireObject(r: S3Request, bucketName: string, key: string): Promise<StoredFile> {
  const { path, at } = await place(r, bucketName, key);
  const file = at ? await r.service.paths.newest(r.caller, at, path.name) : null;
  if (!file) throw s3Errors.noSuchKey(key);
  return file;
}

/**
 * What a write into `at` that failed answers when that folder went meanwhile (deleted with its
 * subtree, the upload with it): NoSuchBucket when the bucket went, OperationAborted when only a
 * folder in it did; no S3 answers NoSuchKey to a write. Otherwise the error as it was.
 */
async function writeError(r: S3Request, bucket: BucketAt, at: Located, err: unknown): Promise<unknown> {
  const folderId = at.folder?.id;
  if (folderId === undefined || (await r.service.paths.stands(folderId))) return err;
  if (!(await r.service.paths.stands(bucket.at.folder.id))) return s3Errors.noSuchBucket(bucket.name);
  return s3OperationAborted('A folder of the key was deleted while the object was being written, and nothing was stored. Send it again.');
}

/** `work`, a failure of it answered as writeError says. */
export function writing<T>(r: S3Request, bucket: BucketAt, at: Located, work: Promise<T>): Promise<T> {
  return work.catch(async (err: unknown) => {
    throw await writeError(r, bucket, at, err);
  });
}

/** The folder a key's object goes in, made where missing; AccessDenied outside the caller's reach. */
export async function writePlace(r: S3Request): Promise<{ bucket: BucketAt; path: KeyPath; at: Located }> {
  const bucket = await requireBucket(r.service, r.caller, r.bucket!);
  const path = parseKey(r.key!);
  let at: Located;
  try {
    at = await r.service.paths.ensureFolders(r.caller, bucket.sight, bucket.at, path.folders);
  } catch (err) {
    if (!(await r.service.paths.stands(bucket.at.folder.id))) throw s3Errors.noSuchBucket(bucket.name);
    // A folder there that the caller does not see, or none it may make: nothing to write to.
    if ((err as { status?: number }).status === 404) throw s3Errors.accessDenied();
    throw err;
  }
  if (at.place !== 'inside') throw s3Errors.accessDenied();
  return { bucket, path, at };
}

export const putObject: S3Handler = async (r) => {
  const { bucket, path, at } = await writePlace(r);
  const condition = writeCondition(r);
  const payload = r.payload();
  if (path.folderKey && payload.length === 0 && !condition && !(await r.service.paths.newest(r.caller, at, path.name))) {
    // A directory marker: the folder is the object. Over an object `a/` with bytes, it is an
    // empty object instead, as S3 replaces it.
    await noBody(r);
    return { headers: { etag: quoted(EMPTY_MD5) } };
  }
  const meta = metaOf(r.headers);
  await writing(r, bucket, at, r.service.objects.put(r.caller, {
    at, name: path.name, contentType: contentTypeOf(r.headers, path.name), visibility: visibilityOf(r.headers), meta,
    size: payload.length, body: payload, etag: () => payload.md5Hex, finalMeta: () => withChecksum(meta, payload.verifiedChecksum), ...(condition ? { condition } : {}),
  }));
  const headers: Record<string, string> = { etag: quoted(payload.md5Hex) };
  const checksum = payload.verifiedChecksum;
  if (checksum) headers[checksum.header] = checksum.value;
  return { headers };
};

async function answerObject(r: S3Request, withBody: boolean): Promise<S3Answer> {
  if (withBody) await noBody(r);
  const versioned = checkVersionId(r);
  const partNumber = partNumberOf(r);
  const file = await requireObject(r, r.bucket!, r.key!);
  const headers = objectHeaders(file);
  if (versioned) headers['x-amz-version-id'] = NULL_VERSION;
  if (checkConditions(r.headers, file) === 304) {
    return { status: 304, headers: { etag: headers.etag!, 'last-modified': headers['last-modified']!, 'x-content-type-options': 'nosniff' } };
  }
  Object.assign(headers, responseOverrides(r));
  showSafely(headers, file.name);
  let range = rangeOf(r.headers.get('range'), file.size);
  if (partNumber !== null) {
    const part = partRange(await partsOf(r, file), partNumber, file.size);
    range = part.range;
    if (part.count !== null) headers['x-amz-mp-parts-count'] = String(part.count);
  }
  const length = range ? range.end - range.start + 1 : file.size;
  headers['content-length'] = String(length);
  if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${file.size}`;
  // With checksum mode, the whole object's checksum, where one was kept (S3 sends none for a part or a range).
  const checksum = r.headers.get('x-amz-checksum-mode')?.toUpperCase() === 'ENABLED' && !range ? storedChecksum(file) : null;
  if (checksum) headers[checksum.header] = checksum.value;
  const status = range ? 206 : 200;
  if (!withBody || length === 0) return { status, headers };
  return { status, headers, body: await r.service.objects.read(r.caller, file, range ?? undefined) };
}

export const getObject: S3Handler = (r) => answerObject(r, true);
export const headObject: S3Handler = (r) => answerObject(r, false);

export const deleteObject: S3Handler = async (r) => {
  await noBody(r);
  checkVersionId(r);
  const { path, at } = await place(r, r.bucket!, r.key!);
  // Where the caller sees no files (above its folder) there is nothing to delete, as where there is no file.
  if (at && at.place === 'inside') await r.service.paths.removeNamed(r.caller, at, [path.name]);
  return { status: 204 };
};

export const deleteObjects: S3Handler = async (r) => {
  const bucket = await requireBucket(r.service, r.caller, r.bucket!);
  const doc = await readXmlBody(r.payload(), DELETE_BODY);
  if (doc?.name !== 'Delete') throw s3Errors.malformedXml();
  const quiet = childOf(doc, 'Quiet')?.text.trim() === 'true';
  const objects = childrenOf(doc, 'Object').map((o) => ({ key: childOf(o, 'Key')?.text, version: childOf(o, 'VersionId')?.text.trim() }));
  if (objects.length === 0 || objects.length > DELETE_BODY.items || objects.some((o) => o.key === undefined || o.key === '')) throw s3Errors.malformedXml();
  const versionOf = new Map<string, string>();
  // Keys of one folder go in one change.
  const byFolder = new Map<string, { folders: string[]; names: string[]; keys: string[] }>();
  const results: XmlFields = [];
  for (const { key: given, version } of objects) {
    const key = given!;
    // Each object's one version is "null"; any other id names nothing, as S3 answers an unversioned bucket.
    if (version !== undefined && version !== NULL_VERSION) {
      results.push(['Error', [['Key', key], ['VersionId', version], ['Code', 'InvalidArgument'], ['Message', 'Invalid version id specified']]]);
      continue;
    }
    if (version !== undefined) versionOf.set(key, version);
    let path: KeyPath;
    try {
      path = parseKey(key);
    } catch (err) {
      results.push(['Error', [['Key', key], ['Code', 'InvalidArgument'], ['Message', (err as Error).message]]]);
      continue;
    }
    const id = JSON.stringify(path.folders);
    const group = byFolder.get(id) ?? { folders: path.folders, names: [], keys: [] };
    group.names.push(path.name);
    group.keys.push(key);
    byFolder.set(id, group);
  }
  for (const group of byFolder.values()) {
    try {
      const at = await r.service.paths.locate(bucket.sight, [bucket.name, ...group.folders]);
      if (at && at.place === 'inside') await r.service.paths.removeNamed(r.caller, at, group.names);
      if (!quiet) for (const key of group.keys) results.push(['Deleted', [['Key', key], ['VersionId', versionOf.get(key)]]]);
    } catch (err) {
      const denied = (err as { status?: number }).status === 403 || (err as { status?: number }).status === 404;
      for (const key of group.keys) results.push(['Error', [['Key', key], ['Code', denied ? 'AccessDenied' : 'InternalError'], ['Message', denied ? 'Access Denied.' : 'We encountered an internal error.']]]);
    }
  }
  return xmlAnswer('DeleteResult', results);
};

/** The bucket and key of x-amz-copy-source ("/bucket/key" or "bucket/key", URL-encoded). */
export function copySource(r: S3Request): { bucket: string; key: string } {
  const raw = r.headers.get('x-amz-copy-source') ?? '';
  const [path, query] = raw.split('?');
  const version = new URLSearchParams(query ?? '').get('versionId');
  if (version !== null && version !== NULL_VERSION) throw s3Errors.invalidArgument('Invalid version id specified', 'x-amz-copy-source', raw);
  const decoded = lenientDecode(path!.replace(/^\//, ''));
  const slash = decoded.indexOf('/');
  if (slash <= 0 || slash === decoded.length - 1) throw s3Errors.invalidArgument('Copy Source must mention the source bucket and key: sourcebucket/sourcekey.', 'x-amz-copy-source', raw);
  return { bucket: decoded.slice(0, slash), key: decoded.slice(slash + 1) };
}

/** The source object of a copy, its x-amz-copy-source-if-* conditions checked. */
export async function requireCopySource(r: S3Request): Promise<StoredFile> {
  const source = copySource(r);
  const file = await requireObject(r, source.bucket, source.key);
  if (checkConditions(r.headers, file, 'x-amz-copy-source-') === 304) throw s3Errors.preconditionFailed('x-amz-copy-source-If-None-Match');
  return file;
}

/** A stream of a file's bytes that computes their MD5 on the way. */
export function withMd5(stream: AsyncIterable<Buffer> | NodeJS.ReadableStream): { body: AsyncIterable<Buffer>; md5: () => string } {
  const hash = createHash('md5');
  let digest: string | null = null;
  async function* body() {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      hash.update(chunk);
      yield chunk;
    }
    digest = hash.digest('hex');
  }
  return {
    body: body(),
    md5: () => {
      if (digest === null) throw new Error('the copy was not read to its end');
      return digest;
    },
  };
}

/** S3's words for a copy that would change nothing. */
const SELF_COPY = 'This copy request is illegal because it is trying to copy an object to itself without changing the object\'s metadata, storage class, website redirect location or encryption attributes.';

export const copyObject: S3Handler = async (r) => {
  await noBody(r);
  const source = await requireCopySource(r);
  const { bucket, path, at } = await writePlace(r);
  const replace = r.headers.get('x-amz-metadata-directive') === 'REPLACE';
  const named = copySource(r);
  if (!replace && named.bucket === r.bucket && named.key === r.key) throw s3Errors.invalidRequest(SELF_COPY);
  const condition = writeCondition(r);
  const stream = await r.service.objects.read(r.caller, source);
  const copied = withMd5(stream);
  const acl = r.headers.get('x-amz-acl');
  const file = await r.service.objects.put(r.caller, {
    at, name: path.name,
    contentType: replace ? contentTypeOf(r.headers, path.name) : source.content_type,
    visibility: acl !== undefined ? visibilityOf(r.headers) : 'Public',
    meta: replace ? metaOf(r.headers) : (source.s3_meta ?? null),
    size: source.size, body: copied.body, etag: copied.md5, ...(condition ? { condition } : {}),
  }).catch(async (err: unknown) => {
    // Refused before it was read to its end (a write condition, for one): let go of the source.
    (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
    throw await writeError(r, bucket, at, err);
  });
  return xmlAnswer('CopyObjectResult', [['LastModified', isoTime(file.completed_at ?? file.updated_at)], ['ETag', quoted(etagOf(file))]]);
};
