/**
 * Blobs in S3-compatible object storage (AWS S3, MinIO, Cloudflare R2, Ceph RGW), through
 * @aws-sdk/client-s3. An upload is an S3 multipart upload: each chunk is streamed into its
 * UploadPart request as it is decoded (no temporary file, never held whole), complete is
 * CompleteMultipartUpload, abort is AbortMultipartUpload, reads are ranged GetObject.
 *
 * Configuration: `COFFER_BLOB_STORE=s3://BUCKET?endpoint=URL&region=REGION&force_path_style=true`;
 * credentials come from the SDK's default chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN, AWS_PROFILE and the shared files, web identity, instance roles).
 */
import { createHash, type Hash } from 'node:crypto';
import { PartHash, type RelayPoint } from './part-hash.js';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, DeleteObjectCommand, GetObjectCommand,
  HeadBucketCommand, HeadObjectCommand, ListPartsCommand, PutObjectCommand, S3Client,
} from '@aws-sdk/client-s3';
import { BlobNotFoundError, UploadGoneError, type BlobStore, type ByteRange, type CommittedPart, type PartWriter } from '../../core/ports.js';
import { isNoSuchUpload, isNotFound, s3Code, unquote } from './s3-errors.js';
import { S3PartWriter } from './s3-part.js';
import { parseS3Url, type S3Settings } from './s3-url.js';

/** The `length` bytes of `source` after the first `skip`. */
async function* trim(source: Readable, skip: number, length: number): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of source) {
      let c = chunk as Buffer;
      if (skip > 0) {
        const n = Math.min(skip, c.length);
        c = c.subarray(n);
        skip -= n;
      }
      if (c.length > length) c = c.subarray(0, length);
      length -= c.length;
      if (c.length > 0) yield c;
      if (length === 0) return;
    }
  } finally {
    source.destroy();
  }
}

/**
 * The SHA-256 of an upload's first parts, hashed while they streamed through this process
 * in order. Complete starts from it and reads back only the rest of the object. It vouches
 * for a part only by the part's S3 ETag and only while no other version of that part number
 * passed through here; parts that went to another origin or arrived out of order end it.
 */
class RunningHash {
  /** states[k]: the hash of parts 1..k. */
  readonly states: Hash[] = [createHash('sha256')];
  /** points[k]: the body relay's point states[k] equals, if known (part-hash.ts). */
  readonly points: Array<RelayPoint | null> = [{ relay: null, offset: 0 }];
  readonly etags: string[] = [];
  readonly sizes: number[] = [];
  /** The part being hashed as it streams (0: none), and which writer does it. */
  claimed = 0;
  claimant: S3PartWriter | null = null;
  /** Every part number opened here: a number seen twice is never vouched for. */
  readonly touched = new Set<number>();

  /** Forgets every part from `partNumber` on. */
  truncate(partNumber: number): void {
    const keep = Math.min(this.etags.length, partNumber - 1);
    this.states.length = keep + 1;
    this.points.length = keep + 1;
    this.etags.length = keep;
    this.sizes.length = keep;
  }
}

const MAX_RUNNING_HASHES = 1024;
export class S3BlobStore implements BlobStore {
  readonly bucket: string;
  readonly client: S3Client;
  private readonly running = new Map<string, RunningHash>();

  constructor(settings: S3Settings, client?: S3Client) {
    this.bucket = settings.bucket;
    this.client = client ?? new S3Client({
      ...(settings.region ? { region: settings.region } : {}),
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      forcePathStyle: settings.forcePathStyle,
      // Checksums only where S3 requires them: CRC headers and aws-chunked bodies are what
      // MinIO, R2, Ceph and older servers disagree on; the SHA-256 is computed here anyway.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // Each part in flight holds a connection while its client sends it.
      requestHandler: {
        httpAgent: new HttpAgent({ keepAlive: true, maxSockets: 256 }),
        httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 256 }),
        connectionTimeout: 10_000,
      },
      // Failures reach the caller as errors; the SDK's own warnings would only repeat them.
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
  }

  /** Opens the store and checks that the bucket answers with these credentials. */
  static async open(url: string): Promise<S3BlobStore> {
    const store = new S3BlobStore(parseS3Url(url));
    try {
      await store.client.send(new HeadBucketCommand({ Bucket: store.bucket }));
    } catch (err) {
      store.client.destroy();
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const why = status === 404 ? 'it does not exist'
        : status === 403 || status === 401 ? 'access was refused: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY'
          : `${(err as Error).name}: ${(err as Error).message}`;
      throw new Error(`COFFER_BLOB_STORE: the bucket "${store.bucket}" cannot be used: ${why}.`);
    }
    return store;
  }

  async createMultipart(key: string): Promise<{ uploadId: string }> {
    const out = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: 'application/octet-stream' }));
    if (!out.UploadId) throw new Error('CreateMultipartUpload answered no UploadId');
    return { uploadId: out.UploadId };
  }

  private runFor(uploadId: string): RunningHash {
    let run = this.running.get(uploadId);
    if (!run) {
      if (this.running.size >= MAX_RUNNING_HASHES) this.running.delete(this.running.keys().next().value!);
      run = new RunningHash();
      this.running.set(uploadId, run);
    }
    return run;
  }

  async openPart(key: string, uploadId: string, partNumber: number, expectedSize: number): Promise<PartWriter> {
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > 10_000) throw new Error(`part number ${partNumber} is outside 1–10000`);
    if (!Number.isSafeInteger(expectedSize) || expectedSize < 0) throw new Error(`part size ${expectedSize} is not a size`);
    const run = this.runFor(uploadId);
    let hash: PartHash | null = null;
    if (run.touched.has(partNumber)) {
      // Another version of a part: the one hashed may not be the one S3 keeps.
      run.truncate(partNumber);
      if (run.claimed === partNumber) {
        run.claimed = 0;
        run.claimant = null;
      }
    } else if (run.claimed === 0 && run.etags.length === partNumber - 1) {
      run.claimed = partNumber;
      hash = new PartHash(run.states[run.states.length - 1]!.copy(), run.points[run.points.length - 1]!);
    }
    run.touched.add(partNumber);
    const writer = new S3PartWriter(this, key, uploadId, partNumber, expectedSize, hash);
    if (hash) run.claimant = writer;
    return writer;
  }

  /** A writer is done without a part: the running hash stops waiting for it. */
  released(writer: S3PartWriter): void {
    const run = this.running.get(writer.uploadId);
    if (run && run.claimant === writer) {
      run.claimed = 0;
      run.claimant = null;
    }
  }

  async commitPart(key: string, uploadId: string, partNumber: number, writer: PartWriter): Promise<CommittedPart> {
    if (!(writer instanceof S3PartWriter)) throw new Error('part writer of another store');
    if (writer.key !== key || writer.uploadId !== uploadId || writer.partNumber !== partNumber) {
      await writer.discard();
      throw new Error(`part writer opened for part ${writer.partNumber} of ${writer.uploadId}, committed as part ${partNumber} of ${uploadId}`);
    }
    let etag: string;
    try {
      etag = await writer.commit();
    } catch (err) {
      await writer.discard();
      throw err;
    }
    const run = this.running.get(uploadId);
    const hash = writer.takeHash()?.finish() ?? null;
    if (run && run.claimant === writer) {
      run.claimed = 0;
      run.claimant = null;
      if (hash && run.etags.length === partNumber - 1) {
        run.states.push(hash.hash);
        run.points.push(hash.point);
        run.etags.push(etag);
        run.sizes.push(writer.bytesWritten);
      }
    }
    // S3 has stored the part once UploadPart answered.
    return { etag, size: writer.bytesWritten, durable: Promise.resolve() };
  }

  /** S3 replaces a part sent again under the same number: there is no old version to drop. */
  async dropPart(): Promise<void> {}

  async completeMultipart(key: string, uploadId: string, parts: Array<{ partNumber: number; etag: string }>): Promise<{ size: number; sha256: string }> {
    let ordered = [...parts].sort((a, b) => a.partNumber - b.partNumber);
    const complete = () => this.client.send(new CompleteMultipartUploadCommand({
      Bucket: this.bucket, Key: key, UploadId: uploadId,
      MultipartUpload: { Parts: ordered.map((p) => ({ PartNumber: p.partNumber, ETag: `"${p.etag}"` })) },
    }));
    try {
      try {
        await complete();
      } catch (err) {
        if (s3Code(err) !== 'InvalidPart') throw err;
        // A part was replaced after the version recorded (two sends of one part raced, perhaps
        // through two origins, or an origin stopped between S3's answer and the record). What
        // S3 holds under that number is a version the client sent and the service accepted in
        // full (a refused one never lands): complete with the versions S3 has.
        const held = await this.listParts(key, uploadId);
        if (!ordered.every((p) => held.has(p.partNumber))) throw err;
        ordered = ordered.map((p) => ({ partNumber: p.partNumber, etag: held.get(p.partNumber)! }));
        await complete();
      }
    } catch (err) {
      if (!isNoSuchUpload(err)) throw err;
      this.running.delete(uploadId);
      // Completed already (by another origin, or by an attempt whose answer was lost): the
      // object at this upload's own key is its result. Otherwise the upload was aborted.
      if ((await this.size(key)) === null) throw new UploadGoneError(key, uploadId);
      return this.digest(key, createHash('sha256'), 0);
    }
    // The object is exactly the listed part versions: start from the parts hashed as they came.
    const run = this.running.get(uploadId);
    this.running.delete(uploadId);
    let vouched = 0;
    if (run) {
      while (vouched < run.etags.length && vouched < ordered.length && ordered[vouched]!.partNumber === vouched + 1 && run.etags[vouched] === ordered[vouched]!.etag) vouched++;
    }
    if (!run || vouched === 0) return this.digest(key, createHash('sha256'), 0);
    return this.digest(key, run.states[vouched]!.copy(), run.sizes.slice(0, vouched).reduce((a, b) => a + b, 0));
  }

  /** The ETag of every part S3 holds for the upload, by part number. */
  private async listParts(key: string, uploadId: string): Promise<Map<number, string>> {
    const held = new Map<number, string>();
    let marker: string | undefined;
    for (;;) {
      const out = await this.client.send(new ListPartsCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, ...(marker ? { PartNumberMarker: marker } : {}) }));
      for (const p of out.Parts ?? []) if (p.PartNumber !== undefined && p.ETag) held.set(p.PartNumber, unquote(p.ETag));
      if (!out.IsTruncated || !out.NextPartNumberMarker) return held;
      marker = out.NextPartNumberMarker;
    }
  }

  /** Finishes `hash`, which holds the object's first `offset` bytes, by reading the rest. */
  private async digest(key: string, hash: Hash, offset: number): Promise<{ size: number; sha256: string }> {
    const size = await this.size(key);
    if (size === null) throw new BlobNotFoundError(key);
    if (size < offset) return this.digest(key, createHash('sha256'), 0);
    let read = 0;
    if (size > offset) {
      for await (const chunk of await this.read(key, { start: offset, end: size - 1 })) {
        hash.update(chunk as Buffer);
        read += (chunk as Buffer).length;
      }
    }
    if (offset + read !== size) throw new Error(`read ${offset + read} bytes of ${key}, which holds ${size}`);
    return { size, sha256: hash.digest('hex') };
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    this.running.delete(uploadId);
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }));
    } catch (err) {
      if (!isNoSuchUpload(err)) throw err;
    }
  }

  /** PutObject: S3 has stored the object once it answers. */
  async putObject(key: string, chunks: readonly Buffer[]): Promise<void> {
    const size = chunks.reduce((n, c) => n + c.length, 0);
    await this.client.send(new PutObjectCommand({
      Bucket: this.bucket, Key: key, ContentType: 'application/octet-stream', ContentLength: size,
      Body: size === 0 ? Buffer.alloc(0) : Readable.from(chunks, { objectMode: false }),
    }));
  }

  async read(key: string, range?: ByteRange): Promise<NodeJS.ReadableStream> {
    try {
      const out = await this.client.send(new GetObjectCommand({
        Bucket: this.bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
      }));
      const body = out.Body as Readable;
      if (!range) return body;
      // Some servers answer a range with more than was asked (s3rver: all of it for bytes=0-0).
      const from = /^bytes (\d+)-(\d+)\//.exec(out.ContentRange ?? '');
      const start = from ? Number(from[1]) : 0;
      const end = from ? Number(from[2]) : (out.ContentLength ?? 0) - 1;
      if (start === range.start && end === range.end) return body;
      if (start > range.start || end < range.end) {
        body.destroy();
        throw new Error(`asked for bytes ${range.start}-${range.end} of ${key}, got ${start}-${end}`);
      }
      return Readable.from(trim(body, range.start - start, range.end - range.start + 1));
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(key);
      throw err;
    }
  }

  async size(key: string): Promise<number | null> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return out.ContentLength ?? 0;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async close(): Promise<void> {
    this.running.clear();
    this.client.destroy();
  }
}
