/**
 * A real S3-protocol server for tests: s3rver (npm), on a free loopback port over a temporary
 * directory, reached through @aws-sdk/client-s3 exactly as the origin reaches AWS S3 or MinIO.
 *
 * s3rver 3.7 implements CreateMultipartUpload, UploadPart, CompleteMultipartUpload, ranged
 * GetObject, HeadObject, DeleteObject, signature checks and path-style addressing, but not
 * everything of S3's multipart uploads that the adapter relies on. A small layer below fills
 * in exactly that, over s3rver's own upload directories, and nothing else:
 * - AbortMultipartUpload, ListMultipartUploads and ListParts, which s3rver does not implement;
 * - NoSuchUpload from UploadPart and CompleteMultipartUpload for an upload that is gone
 *   (s3rver would recreate it, or fail with 500), and InvalidPart from
 *   CompleteMultipartUpload for an ETag that is not the part's (s3rver joins whatever it has);
 * - UploadPart replaces a part only once the new body arrived whole, as S3 does (s3rver
 *   truncates the stored part as soon as a new request for its number starts, and keeps a
 *   cut-off body).
 * Docs: docs/operations.md, "S3-compatible storage".
 */
import { createRequire } from 'node:module';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { CreateBucketCommand, ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';

const require = createRequire(import.meta.url);

/** The parts of s3rver this helper uses (it ships no types). */
interface S3rverContext {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  status: number;
  body: unknown;
}
type Middleware = (ctx: S3rverContext, next: () => Promise<void>) => Promise<void>;
interface S3rverInstance {
  middleware: Middleware[];
  store: {
    getResourcePath(bucket: string, key: string | undefined, resource: string): string;
    putPart(bucket: string, uploadId: string, partNumber: string, content: IncomingMessage): Promise<{ size: number; md5: string }>;
    putObjectMultipart(bucket: string, uploadId: string, parts: Array<{ number: number; etag: string }>): Promise<unknown>;
  };
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
const S3rver = require('s3rver') as new (options: Record<string, unknown>) => S3rverInstance;
const S3Error = require('s3rver/lib/models/error') as new (code: string, message: string, detail?: Record<string, unknown>) => Error;

/** The credentials s3rver accepts; the SDK reads them from the standard AWS variables. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
export const S3_REGION = 'us-east-1';

export interface TestS3 {
  /** http://127.0.0.1:PORT */
  endpoint: string;
  /** Where s3rver keeps its buckets. */
  directory: string;
  /** A client with the settings the adapter uses. */
  client: S3Client;
  /** Creates an empty bucket with a fresh name and returns the name. */
  createBucket(prefix?: string): Promise<string>;
  /** The COFFER_BLOB_STORE value for a bucket of this server. */
  blobStoreUrl(bucket: string): string;
  /** The multipart uploads still open in a bucket (ListMultipartUploads). */
  openUploads(bucket: string): Promise<Array<{ key: string; uploadId: string }>>;
  stop(): Promise<void>;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false);
}

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * CompleteMultipartUploads under way, by upload directory. An abort, and another complete, wait
 * for the one of its upload: on S3 a complete that has begun finishes, and s3rver, whose join
 * reads the part files with no error handler, would take the whole test process down if they
 * went from under it.
 */
const joining = new Map<string, Promise<unknown>>();

/** The operations s3rver 3.7 lacks, over its own layout: BUCKET/._S3rver_uploads/UPLOAD_ID/{key,1,2,…}. */
function compatLayer(server: S3rverInstance): Middleware {
  const uploadsDir = (bucket: string) => server.store.getResourcePath(bucket, undefined, 'uploads');
  return async (ctx, next) => {
    const [, bucket, ...rest] = ctx.path.split('/');
    const hasKey = rest.length > 0 && rest.join('/') !== '';
    const uploadId = one(ctx.query.uploadId);
    if (bucket && hasKey && uploadId !== undefined) {
      const dir = join(uploadsDir(bucket), uploadId);
      const known = /^[A-Za-z0-9]+$/.test(uploadId) && (await exists(join(dir, 'key')));
      if (ctx.method === 'DELETE') {
        // AbortMultipartUpload
        if (!known) throw new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: uploadId });
        await joining.get(dir)?.catch(() => {});
        await rm(dir, { recursive: true, force: true });
        ctx.status = 204;
        ctx.body = '';
        return;
      }
      // UploadPart, CompleteMultipartUpload and ListParts of an upload that is gone.
      if (!known) throw new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: uploadId });
      if (ctx.method === 'GET') {
        // ListParts (one page: tests keep few parts).
        const numbers = (await readdir(dir)).filter((f) => /^\d+$/.test(f)).map(Number).sort((a, b) => a - b);
        const parts = [];
        for (const n of numbers) {
          const etag = await readFile(join(dir, `${n}.md5`), 'utf8').catch(() => null);
          if (etag !== null) parts.push({ PartNumber: n, ETag: JSON.stringify(etag), Size: (await stat(join(dir, String(n)))).size });
        }
        ctx.body = { ListPartsResult: { Bucket: bucket, Key: rest.join('/'), UploadId: uploadId, MaxParts: 1000, IsTruncated: false, Part: parts } };
        return;
      }
    }
    if (bucket && !hasKey && ctx.method === 'GET' && 'uploads' in ctx.query) {
      // ListMultipartUploads (one page: tests keep few uploads open).
      const root = uploadsDir(bucket);
      const ids = (await exists(root)) ? await readdir(root) : [];
      const uploads: Array<{ Key: string; UploadId: string }> = [];
      for (const id of ids.sort()) {
        const key = await readFile(join(root, id, 'key'), 'utf8').catch(() => null);
        if (key !== null) uploads.push({ Key: key, UploadId: id });
      }
      ctx.body = { ListMultipartUploadsResult: { Bucket: bucket, MaxUploads: 1000, IsTruncated: false, Upload: uploads } };
      return;
    }
    await next();
  };
}

/** UploadPart as S3 does it: the body goes to a file of its own, which replaces the part only once whole. */
function atomicPutPart(server: S3rverInstance): S3rverInstance['store']['putPart'] {
  return async (bucket, uploadId, partNumber, content) => {
    const final = join(server.store.getResourcePath(bucket, undefined, 'uploads'), uploadId, String(Number(partNumber)));
    const partial = `${final}.${randomBytes(6).toString('hex')}.partial`;
    const md5 = createHash('md5');
    let size = 0;
    try {
      await pipeline(content, new Transform({
        transform(chunk: Buffer, _enc, cb) {
          md5.update(chunk);
          size += chunk.length;
          cb(null, chunk);
        },
      }), createWriteStream(partial));
      const announced = Number(content.headers['content-length']);
      if (Number.isFinite(announced) && size !== announced) {
        throw new S3Error('IncompleteBody', 'You did not provide the number of bytes specified by the Content-Length HTTP header.');
      }
    } catch (err) {
      await rm(partial, { force: true });
      throw err;
    }
    const digest = md5.digest('hex');
    await rename(partial, final);
    await writeFile(`${final}.md5`, digest);
    return { size, md5: digest };
  };
}

/** CompleteMultipartUpload checks each ETag against the part it names, as S3 does. */
function checkedComplete(server: S3rverInstance): S3rverInstance['store']['putObjectMultipart'] {
  const join_ = server.store.putObjectMultipart.bind(server.store);
  const complete = async (dir: string, bucket: string, uploadId: string, parts: Array<{ number: number; etag: string }>, before?: Promise<unknown>) => {
    // One join of an upload at a time: s3rver removes the upload once joined, under a second one.
    await before?.catch(() => {});
    if (!(await exists(join(dir, 'key')))) throw new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: uploadId });
    for (const part of parts) {
      const held = await readFile(join(dir, `${part.number}.md5`), 'utf8').catch(() => null);
      if (held !== part.etag) {
        throw new S3Error('InvalidPart', 'One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part\'s entity tag.', {
          UploadId: uploadId, PartNumber: part.number, ETag: part.etag,
        });
      }
    }
    return join_(bucket, uploadId, parts);
  };
  return (bucket, uploadId, parts) => {
    const dir = join(server.store.getResourcePath(bucket, undefined, 'uploads'), uploadId);
    const joined = complete(dir, bucket, uploadId, parts, joining.get(dir));
    joining.set(dir, joined);
    const done = () => {
      if (joining.get(dir) === joined) joining.delete(dir);
    };
    joined.then(done, done);
    return joined;
  };
}

/** The client settings of src/adapters/blobs/s3.ts, for tests that look at the bucket themselves. */
export function testS3Client(endpoint: string): S3Client {
  return new S3Client({
    endpoint, region: S3_REGION, forcePathStyle: true, credentials: S3RVER_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

let buckets = 0;

export async function startS3(): Promise<TestS3> {
  // The adapter takes credentials from the standard variables, like in production.
  process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
  delete process.env.AWS_SESSION_TOKEN;
  delete process.env.AWS_PROFILE;
  // Node 20 is still supported by this SDK; its notice about Node 22 is not a test's business.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

  const directory = await mkdtemp(join(tmpdir(), 'coffer-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true });
  // Before s3rver's router (the last middleware), after its XML encoding and error handling.
  server.middleware.splice(server.middleware.length - 1, 0, compatLayer(server));
  server.store.putPart = atomicPutPart(server);
  server.store.putObjectMultipart = checkedComplete(server);
  const address = await server.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = testS3Client(endpoint);
  return {
    endpoint,
    directory,
    client,
    async createBucket(prefix = 'coffer') {
      const name = `${prefix}-${process.pid}-${++buckets}-${Math.random().toString(36).slice(2, 8)}`.toLowerCase();
      await client.send(new CreateBucketCommand({ Bucket: name }));
      return name;
    },
    blobStoreUrl(bucket) {
      return `s3://${bucket}?endpoint=${encodeURIComponent(endpoint)}&region=${S3_REGION}&force_path_style=true`;
    },
    async openUploads(bucket) {
      const out = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
      return (out.Uploads ?? []).map((u) => ({ key: u.Key!, uploadId: u.UploadId! }));
    },
    async stop() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
