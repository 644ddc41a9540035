/**
 * Every operation of the S3 router (src/s3/router.ts S3_OPERATIONS), taken with the AWS SDK
 * signed by the caller's key. Callers without a SigV4 form (the root key, sessions, grants)
 * send the same request with their own headers, which S3 does not take.
 */
import {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CopyObjectCommand, CreateBucketCommand, CreateMultipartUploadCommand,
  DeleteBucketCommand, DeleteObjectCommand, DeleteObjectsCommand, GetBucketLocationCommand, GetBucketVersioningCommand, GetObjectAttributesCommand, GetObjectCommand,
  HeadBucketCommand, HeadObjectCommand, ListBucketsCommand, ListMultipartUploadsCommand, ListObjectsCommand, ListObjectsV2Command, ListObjectVersionsCommand,
  ListPartsCommand, PutObjectCommand, S3Client, UploadPartCommand, UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import type { MatrixCaller, Place } from './callers.js';
import { BYTES, unique, type Ctx } from './context.js';
import type { NeedName, Target } from './expected.js';
import type { Operation } from './http-operations.js';

/** What S3 needs to know of the world: bucket names of the places, and a key that starts multipart uploads. */
export interface S3World {
  bucket: Record<Place, string>;
  maker: { keyId: string; secret: string };
}

interface Step {
  /** The command to send, made once the targets exist. */
  command: (w: S3World, place: Place) => Promise<{ input: object; send: (client: S3Client) => Promise<unknown> }>;
  /** The same request as a plain HTTP method and path, for callers without SigV4. */
  plain: (w: S3World, place: Place) => { method: string; path: string };
}

const clients = new Map<string, S3Client>();
function clientOf(ctx: Ctx, key: { keyId: string; secret: string }): S3Client {
  let c = clients.get(key.keyId);
  if (!c) {
    c = new S3Client({ endpoint: ctx.s3Url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: key.keyId, secretAccessKey: key.secret }, maxAttempts: 1 });
    clients.set(key.keyId, c);
  }
  return c;
}

export function closeS3Clients(): void {
  for (const c of clients.values()) c.destroy();
  clients.clear();
}

async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    const out = (await call) as { $metadata?: { httpStatusCode?: number }; Errors?: Array<{ Code?: string }> };
    // DeleteObjects answers 200 with an error per key it could not delete.
    if (out.Errors && out.Errors.length > 0) return out.Errors[0]!.Code === 'AccessDenied' ? 403 : 404;
    return out.$metadata?.httpStatusCode ?? 200;
  } catch (err) {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === undefined) throw err;
    return status;
  }
}

function s3Op(name: string, need: NeedName, target: Target, w: () => S3World, make: (ctx: Ctx, w: S3World, place: Place) => Promise<{ send: (c: S3Client) => Promise<unknown>; plain: { method: string; path: string } }>): Operation {
  return {
    dialect: 's3', name: `S3 ${name}`, route: name, need, target,
    run: async (ctx: Ctx, caller: MatrixCaller, place: Place) => {
      const step = await make(ctx, w(), place);
      if (caller.s3) return statusOf(step.send(clientOf(ctx, caller.s3)));
      const res = await fetch(`${ctx.s3Url}${step.plain.path}`, { method: step.plain.method, headers: caller.headers });
      await res.arrayBuffer();
      return res.status;
    },
  };
}

type Send = (c: S3Client) => Promise<unknown>;
const plain = (method: string, path: string) => ({ method, path });

/** A fresh file in the place, as S3 names it. */
async function object(ctx: Ctx, w: S3World, place: Place): Promise<{ Bucket: string; Key: string }> {
  return { Bucket: w.bucket[place], Key: (await ctx.freshFile(place)).name };
}

/** A multipart upload in the place started by the world's maker key; with `part`, its part 1 sent. */
async function multipart(ctx: Ctx, w: S3World, place: Place, part: boolean) {
  const c = clientOf(ctx, w.maker);
  const at = { Bucket: w.bucket[place], Key: unique('mp') + '.bin' };
  const { UploadId } = await c.send(new CreateMultipartUploadCommand(at));
  const ETag = part ? (await c.send(new UploadPartCommand({ ...at, UploadId, PartNumber: 1, Body: BYTES }))).ETag : undefined;
  return { ...at, UploadId: UploadId!, ETag };
}

export function s3Operations(world: () => S3World): Operation[] {
  const op = (name: string, need: NeedName, target: Target, make: (ctx: Ctx, w: S3World, place: Place) => Promise<{ send: Send; plain: { method: string; path: string } }>) =>
    s3Op(name, need, target, world, make);
  return [
    op('listBuckets', 'read folders', 'none', async () => ({ send: (c) => c.send(new ListBucketsCommand({})), plain: plain('GET', '/') })),
    op('createBucket', 'change folders', 'root', async () => {
      const Bucket = unique('made');
      return { send: (c) => c.send(new CreateBucketCommand({ Bucket })), plain: plain('PUT', `/${Bucket}`) };
    }),
    op('deleteBucket', 'change folders', 'root', async (ctx) => {
      const { name } = await ctx.freshTop();
      return { send: (c) => c.send(new DeleteBucketCommand({ Bucket: name })), plain: plain('DELETE', `/${name}`) };
    }),
    op('headBucket', 'read folders', 'place', async (_ctx, w, p) => ({ send: (c) => c.send(new HeadBucketCommand({ Bucket: w.bucket[p] })), plain: plain('HEAD', `/${w.bucket[p]}`) })),
    op('bucketLocation', 'read folders', 'place', async (_ctx, w, p) => ({ send: (c) => c.send(new GetBucketLocationCommand({ Bucket: w.bucket[p] })), plain: plain('GET', `/${w.bucket[p]}?location`) })),
    op('bucketVersioning', 'read folders', 'place', async (_ctx, w, p) => ({ send: (c) => c.send(new GetBucketVersioningCommand({ Bucket: w.bucket[p] })), plain: plain('GET', `/${w.bucket[p]}?versioning`) })),
    op('listMultipartUploads', 'list uploads', 'place', async (_ctx, w, p) => ({ send: (c) => c.send(new ListMultipartUploadsCommand({ Bucket: w.bucket[p] })), plain: plain('GET', `/${w.bucket[p]}?uploads`) })),
    op('listObjectsV1', 'read folders', 'place', async (_ctx, w, p) => ({ send: (c) => c.send(new ListObjectsCommand({ Bucket: w.bucket[p] })), plain: plain('GET', `/${w.bucket[p]}`) })),
    op('listObjectVersions', 'read folders', 'place', async (_ctx, w, p) => ({ send: (c) => c.send(new ListObjectVersionsCommand({ Bucket: w.bucket[p] })), plain: plain('GET', `/${w.bucket[p]}?versions`) })),
    op('listObjectsV2', 'read folders', 'place', async (_ctx, w, p) => ({ send: (c) => c.send(new ListObjectsV2Command({ Bucket: w.bucket[p] })), plain: plain('GET', `/${w.bucket[p]}?list-type=2`) })),
    op('deleteObjects', 'change files', 'place', async (ctx, w, p) => {
      const o = await object(ctx, w, p);
      return { send: (c) => c.send(new DeleteObjectsCommand({ Bucket: o.Bucket, Delete: { Objects: [{ Key: o.Key }] } })), plain: plain('POST', `/${o.Bucket}?delete`) };
    }),
    op('putObject', 'upload', 'place', async (_ctx, w, p) => {
      const at = { Bucket: w.bucket[p], Key: unique('put') + '.txt' };
      return { send: (c) => c.send(new PutObjectCommand({ ...at, Body: BYTES })), plain: plain('PUT', `/${at.Bucket}/${at.Key}`) };
    }),
    op('copyObject', 'copy files', 'place', async (ctx, w, p) => {
      const src = await object(ctx, w, p);
      const Key = unique('copy') + '.txt';
      return { send: (c) => c.send(new CopyObjectCommand({ Bucket: src.Bucket, Key, CopySource: `${src.Bucket}/${src.Key}` })), plain: plain('PUT', `/${src.Bucket}/${Key}`) };
    }),
    op('getObject', 'read files', 'place', async (ctx, w, p) => {
      const o = await object(ctx, w, p);
      return { send: async (c) => { const r = await c.send(new GetObjectCommand(o)); await r.Body?.transformToByteArray(); return r; }, plain: plain('GET', `/${o.Bucket}/${o.Key}`) };
    }),
    op('headObject', 'read files', 'place', async (ctx, w, p) => {
      const o = await object(ctx, w, p);
      return { send: (c) => c.send(new HeadObjectCommand(o)), plain: plain('HEAD', `/${o.Bucket}/${o.Key}`) };
    }),
    op('getObjectAttributes', 'read files', 'place', async (ctx, w, p) => {
      const o = await object(ctx, w, p);
      return { send: (c) => c.send(new GetObjectAttributesCommand({ ...o, ObjectAttributes: ['ETag', 'ObjectSize'] })), plain: plain('GET', `/${o.Bucket}/${o.Key}?attributes`) };
    }),
    op('deleteObject', 'change files', 'place', async (ctx, w, p) => {
      const o = await object(ctx, w, p);
      return { send: (c) => c.send(new DeleteObjectCommand(o)), plain: plain('DELETE', `/${o.Bucket}/${o.Key}`) };
    }),
    op('createMultipart', 'upload', 'place', async (_ctx, w, p) => {
      const at = { Bucket: w.bucket[p], Key: unique('mp') + '.bin' };
      return { send: (c) => c.send(new CreateMultipartUploadCommand(at)), plain: plain('POST', `/${at.Bucket}/${at.Key}?uploads`) };
    }),
    op('uploadPart', 'upload', 'place', async (ctx, w, p) => {
      const u = await multipart(ctx, w, p, false);
      return { send: (c) => c.send(new UploadPartCommand({ Bucket: u.Bucket, Key: u.Key, UploadId: u.UploadId, PartNumber: 1, Body: BYTES })), plain: plain('PUT', `/${u.Bucket}/${u.Key}?partNumber=1&uploadId=${u.UploadId}`) };
    }),
    op('uploadPartCopy', 'copy files', 'place', async (ctx, w, p) => {
      const u = await multipart(ctx, w, p, false);
      const src = await object(ctx, w, p);
      return {
        send: (c) => c.send(new UploadPartCopyCommand({ Bucket: u.Bucket, Key: u.Key, UploadId: u.UploadId, PartNumber: 1, CopySource: `${src.Bucket}/${src.Key}` })),
        plain: plain('PUT', `/${u.Bucket}/${u.Key}?partNumber=1&uploadId=${u.UploadId}`),
      };
    }),
    op('listParts', 'list uploads', 'place', async (ctx, w, p) => {
      const u = await multipart(ctx, w, p, true);
      return { send: (c) => c.send(new ListPartsCommand({ Bucket: u.Bucket, Key: u.Key, UploadId: u.UploadId })), plain: plain('GET', `/${u.Bucket}/${u.Key}?uploadId=${u.UploadId}`) };
    }),
    op('abortMultipart', 'upload', 'place', async (ctx, w, p) => {
      const u = await multipart(ctx, w, p, false);
      return { send: (c) => c.send(new AbortMultipartUploadCommand({ Bucket: u.Bucket, Key: u.Key, UploadId: u.UploadId })), plain: plain('DELETE', `/${u.Bucket}/${u.Key}?uploadId=${u.UploadId}`) };
    }),
    op('completeMultipart', 'upload', 'place', async (ctx, w, p) => {
      const u = await multipart(ctx, w, p, true);
      return {
        send: (c) => c.send(new CompleteMultipartUploadCommand({ Bucket: u.Bucket, Key: u.Key, UploadId: u.UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: u.ETag }] } })),
        plain: plain('POST', `/${u.Bucket}/${u.Key}?uploadId=${u.UploadId}`),
      };
    }),
  ];
}
