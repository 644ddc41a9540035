/**
 * One S3 part being written: its bytes stream into an UploadPart request as they arrive, and
 * its last byte is held back until commit, so a part refused midway never exists in S3.
 */
import { PassThrough, type Readable } from 'node:stream';
import { UploadPartCommand, type S3Client } from '@aws-sdk/client-s3';
import { UploadGoneError, type PartWriter } from '../../core/ports.js';
import type { PartHash } from './part-hash.js';
import { isNoSuchUpload, unquote } from './s3-errors.js';

/** What a part needs of its store. */
export interface PartOwner {
  readonly client: S3Client;
  readonly bucket: string;
  /** Told when a part is discarded, so the store can forget it. */
  released(writer: S3PartWriter): void;
}

/** How much of a part may wait between this process and the socket. */
const PART_BUFFER = 256 * 1024;

export class S3PartWriter implements PartWriter {
  bytesWritten = 0;
  private readonly body = new PassThrough({ highWaterMark: PART_BUFFER });
  private readonly abort = new AbortController();
  private request: Promise<string> | null = null;
  private failure: unknown = null;
  private settled = false;
  private discarded = false;
  private committing = false;
  /**
   * The part's last byte, held back until commit: with it S3 would have the whole part and
   * store it, even if the request then turned out invalid and the part was discarded.
   */
  private tail: Buffer | null = null;

  constructor(
    private readonly store: PartOwner,
    readonly key: string,
    readonly uploadId: string,
    readonly partNumber: number,
    readonly expectedSize: number,
    /** The running hash to extend, when this part is the next one in order. */
    private hash: PartHash | null,
  ) {
    // A 0-byte part has nothing to hold back: it is sent only at commit.
    if (expectedSize > 0) this.start(this.body);
  }

  private start(body: Readable | Buffer): void {
    this.request = this.store.client
      .send(new UploadPartCommand({
        Bucket: this.store.bucket, Key: this.key, UploadId: this.uploadId, PartNumber: this.partNumber, ContentLength: this.expectedSize, Body: body,
      }), { abortSignal: this.abort.signal })
      .then((out) => {
        if (!out.ETag) throw new Error(`UploadPart of part ${this.partNumber} answered no ETag`);
        return unquote(out.ETag);
      });
    this.request.then(
      () => {
        this.settled = true;
      },
      (err) => {
        this.settled = true;
        this.failure = err;
        // Wakes a write waiting for room; later bytes are only counted.
        this.body.destroy();
      },
    );
  }

  async write(chunk: Buffer): Promise<void> {
    this.bytesWritten += chunk.length;
    if (this.discarded || this.failure || this.committing) return;
    if (this.bytesWritten > this.expectedSize) {
      // Too long: it can never be committed, and S3 must not see a part of this length.
      this.cancel();
      return;
    }
    if (chunk.length === 0) return;
    // A state that can no longer be known ends the running hash here (completion reads the rest back).
    if (this.hash && !this.hash.update(chunk)) {
      this.hash = null;
      this.store.released(this);
    }
    let data = chunk;
    if (this.bytesWritten === this.expectedSize) {
      this.tail = Buffer.from(chunk.subarray(chunk.length - 1));
      data = chunk.subarray(0, chunk.length - 1);
    }
    if (data.length === 0) return;
    // A copy: the caller reuses `chunk` once this resolves, while the socket may still hold it.
    if (!this.body.write(Buffer.from(data))) await this.room();
  }

  private room(): Promise<void> {
    if (this.body.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.body.off('drain', done);
        this.body.off('close', done);
        resolve();
      };
      this.body.on('drain', done);
      this.body.on('close', done);
    });
  }

  private cancel(): void {
    this.hash = null;
    if (!this.settled) this.abort.abort();
    this.body.destroy();
  }

  /** Sends the held-back byte and waits for S3's answer: the part's ETag. */
  async commit(): Promise<string> {
    if (this.discarded) throw new Error(`part ${this.partNumber} was discarded`);
    if (this.bytesWritten !== this.expectedSize) {
      await this.discard();
      throw new Error(`part ${this.partNumber} holds ${this.bytesWritten} bytes, not the ${this.expectedSize} it was opened for`);
    }
    this.committing = true;
    if (this.expectedSize === 0) this.start(Buffer.alloc(0));
    else if (!this.failure) this.body.end(this.tail ?? undefined);
    try {
      return await this.request!;
    } catch (err) {
      if (isNoSuchUpload(err)) throw new UploadGoneError(this.key, this.uploadId);
      throw err;
    }
  }

  /** The hash of the running hash's parts plus this one, once committed; null when it was not kept. */
  takeHash(): PartHash | null {
    const hash = this.hash;
    this.hash = null;
    return hash;
  }

  async discard(): Promise<void> {
    if (this.discarded) return;
    this.discarded = true;
    this.hash = null;
    // Before the last byte, S3 throws the request away: nothing of the part is kept.
    if (!this.committing) this.cancel();
    await this.request?.catch(() => {});
    this.store.released(this);
  }
}

