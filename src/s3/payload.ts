/**
 * A request body as SigV4 signed it (contract §12), read as a stream and checked on the way:
 * the SHA-256 the headers promised; aws-chunked bodies (STREAMING-AWS4-HMAC-SHA256-PAYLOAD,
 * its -TRAILER form and STREAMING-UNSIGNED-PAYLOAD-TRAILER), each chunk's signature checked
 * when the chunk ends and the trailer's once it is read; x-amz-checksum-* (header or trailer)
 * and Content-MD5. The MD5 is computed too: it is the object's ETag.
 *
 * Bytes are handed on before the checks that cover them end; a failure is thrown before the
 * stream ends, so whoever consumes it commits nothing unless it reads to the end.
 */
import { createHash, createHmac, type Hash } from 'node:crypto';
import { s3Errors } from './errors.js';
import { EMPTY_SHA256, signaturesEqual, type Verified } from './sigv4.js';
import { checksumAlgorithmOf, createChecksum, type Checksum, type ChecksumAlgorithm } from './checksums.js';
import { Sha256Relay } from '../core/sha256-relay.js';
import { POOL_BUFFER_BYTES, giveBack, takeBuffer } from '../core/buffer-pool.js';

const EMPTY = Buffer.alloc(0);
const CRLF = Buffer.from('\r\n');
const MAX_LINE = 4096;

/**
 * Cuts a stream of pieces into runs of exactly 1 MiB (the last one shorter). A piece that holds
 * a whole run is handed on as it is; others are copied into a pooled buffer, lent to the
 * consumer until it asks for the next run (a consumer writes a run before it asks again).
 */
class Runs {
  private filling: Buffer | null = null;
  private used = 0;
  private lent: Buffer | null = null;

  *add(piece: Buffer): Generator<Buffer> {
    let pos = 0;
    while (pos < piece.length) {
      if (this.used === 0 && piece.length - pos >= POOL_BUFFER_BYTES) {
        yield piece.subarray(pos, pos + POOL_BUFFER_BYTES);
        pos += POOL_BUFFER_BYTES;
        continue;
      }
      this.filling ??= takeBuffer();
      const n = piece.copy(this.filling, this.used, pos);
      this.used += n;
      pos += n;
      if (this.used === POOL_BUFFER_BYTES) yield this.lend(POOL_BUFFER_BYTES);
    }
  }

  private lend(length: number): Buffer {
    const run = this.filling!;
    this.filling = null;
    this.used = 0;
    this.lent = run;
    return length === run.length ? run : run.subarray(0, length);
  }

  /** The bytes left over as the last run; null when none are. */
  rest(): Buffer | null {
    return this.used === 0 ? null : this.lend(this.used);
  }

  /** The consumer is done with the run lent last. */
  reclaim(): void {
    if (this.lent) giveBack(this.lent);
    this.lent = null;
  }

  release(): void {
    this.reclaim();
    if (this.filling) giveBack(this.filling);
    this.filling = null;
  }
}

/**
 * Reads lines and runs of bytes from a stream of buffers. A piece is never copied: a line cut
 * between two pieces is joined from its two ends alone (at most MAX_LINE bytes).
 */
class ByteReader {
  private pending: Buffer = EMPTY;
  private readonly it: AsyncIterator<Buffer>;
  private ended = false;

  constructor(source: AsyncIterable<Buffer>) {
    this.it = source[Symbol.asyncIterator]();
  }

  /** The next piece into `pending`, which must be empty; false at the end. */
  private async fill(): Promise<boolean> {
    if (this.ended) return false;
    const next = await this.it.next();
    if (next.done) {
      this.ended = true;
      return false;
    }
    this.pending = next.value;
    return true;
  }

  /** The next line without its CRLF. */
  async line(): Promise<string> {
    // The line's bytes from earlier pieces: never more than MAX_LINE.
    let head: Buffer = EMPTY;
    for (;;) {
      const joined = head.length === 0 ? this.pending : Buffer.concat([head, this.pending.subarray(0, MAX_LINE + 2)]);
      const end = joined.indexOf(CRLF);
      if (end >= 0) {
        this.pending = this.pending.subarray(end + 2 - head.length);
        return joined.toString('latin1', 0, end);
      }
      if (joined.length > MAX_LINE) throw s3Errors.invalidRequest('A chunk header of the aws-chunked body is too long.');
      head = joined;
      this.pending = EMPTY;
      if (!(await this.fill())) throw s3Errors.incompleteBody();
    }
  }

  /** The next of the `n` bytes a caller takes: as many as one piece holds, at most `n`. */
  async some(n: number): Promise<Buffer> {
    if (this.pending.length === 0 && !(await this.fill())) throw s3Errors.incompleteBody();
    const piece = this.pending.length <= n ? this.pending : this.pending.subarray(0, n);
    this.pending = this.pending.length <= n ? EMPTY : this.pending.subarray(n);
    return piece;
  }

  /** Whatever is left, which must be nothing but line ends. */
  async rest(): Promise<void> {
    for (;;) {
      if (this.pending.toString('latin1').trim() !== '') throw s3Errors.invalidRequest('The aws-chunked body goes on after its last chunk.');
      this.pending = EMPTY;
      if (!(await this.fill())) return;
    }
  }
}

function parseLength(value: string | undefined): number | null {
  if (value === undefined) return null;
  if (!/^\d{1,16}$/.test(value.trim())) throw s3Errors.invalidArgument('The content length must be a whole number of bytes.', 'Content-Length', value);
  return Number(value.trim());
}

export class Payload implements AsyncIterable<Buffer> {
  /** The bytes the body holds once decoded. */
  readonly length: number;
  private readonly md5: Hash = createHash('md5');
  private md5Digest: Buffer | null = null;
  private readonly checksum: { algorithm: ChecksumAlgorithm; sum: Checksum; expected: string | null; trailer: boolean } | null;
  private readonly contentMd5: string | null;
  private readonly checksumByRelay: boolean;
  private consumed = false;

  constructor(private readonly source: AsyncIterable<Buffer>, private readonly v: Verified, headers: Map<string, string>) {
    const chunked = v.payload.kind === 'signed-chunks' || v.payload.kind === 'unsigned-trailer';
    const length = parseLength(chunked ? headers.get('x-amz-decoded-content-length') : headers.get('content-length'));
    if (length === null) {
      if (chunked) throw s3Errors.missingContentLength();
      // A body without a length is one Node dechunked for us: S3 wants the length.
      if (headers.has('transfer-encoding')) throw s3Errors.missingContentLength();
    }
    this.length = length ?? 0;
    const trailerNames = (headers.get('x-amz-trailer') ?? '').split(',').map((t) => t.trim().toLowerCase()).filter(Boolean);
    const trailing = v.payload.kind === 'unsigned-trailer' || (v.payload.kind === 'signed-chunks' && v.payload.trailer);
    if (trailerNames.length > 0 && !trailing) throw s3Errors.invalidRequest('x-amz-trailer is only allowed with a STREAMING-…-TRAILER payload.');
    let checksum: Payload['checksum'] = null;
    for (const name of trailerNames) {
      const algorithm = checksumAlgorithmOf(name);
      if (!algorithm) throw s3Errors.invalidRequest(`The trailer ${name} is not a checksum this service knows.`);
      checksum = { algorithm, sum: createChecksum(algorithm), expected: null, trailer: true };
    }
    if (!checksum) {
      for (const [name, value] of headers) {
        const algorithm = checksumAlgorithmOf(name);
        if (algorithm) checksum = { algorithm, sum: createChecksum(algorithm), expected: value.trim(), trailer: false };
      }
    }
    this.checksum = checksum;
    this.checksumByRelay = checksum?.algorithm === 'sha256' && v.payload.kind === 'sha256';
    const md5 = headers.get('content-md5');
    if (md5 !== undefined && Buffer.from(md5.trim(), 'base64').length !== 16) throw s3Errors.invalidDigest();
    this.contentMd5 = md5 === undefined ? null : Buffer.from(md5.trim(), 'base64').toString('hex');
  }

  /** The MD5 of the decoded body, hex; known once the body was read to its end. */
  get md5Hex(): string {
    if (!this.md5Digest) throw new Error('the body has not been read to its end');
    return this.md5Digest.toString('hex');
  }

  /** The checksum the client sent and the bytes matched, for the answer's header. */
  get verifiedChecksum(): { header: string; value: string } | null {
    return this.checksum && this.checksum.expected !== null ? { header: `x-amz-checksum-${this.checksum.algorithm}`, value: this.checksum.expected } : null;
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    if (this.consumed) throw new Error('a request body can be read once');
    this.consumed = true;
    return this.read();
  }

  private tap(piece: Buffer): void {
    this.md5.update(piece);
    if (!this.checksumByRelay) this.checksum?.sum.update(piece);
  }

  /**
   * The decoded bytes in runs of 1 MiB (the last one shorter): a socket hands on 16–64 KiB at a
   * time, and each piece costs the consumer a write (a system call on disk) and a trip through
   * its generators; copying them into pooled buffers is far cheaper (and leaves no garbage). With a signed payload the runs pass
   * through a relay that hashes them: a store writing them from the first takes that hash as
   * its own (each byte hashed once). The last run comes once every check has held.
   */
  private async *read(): AsyncGenerator<Buffer> {
    const mode = this.v.payload;
    const relay = mode.kind === 'sha256' ? new Sha256Relay() : null;
    const runs = new Runs();
    try {
      for await (const piece of this.decoded()) {
        for (const run of runs.add(piece)) {
          yield relay ? relay.pass(run) : run;
          runs.reclaim();
        }
      }
      const last = runs.rest();
      if (last && relay) relay.pass(last);
      if (mode.kind === 'sha256') {
        const computed = relay!.hex();
        if (computed !== mode.hex) throw s3Errors.contentSha256Mismatch(mode.hex, computed);
      }
      this.finish(relay);
      if (last) yield last;
    } finally {
      runs.release();
    }
  }

  private async *decoded(): AsyncGenerator<Buffer> {
    const mode = this.v.payload;
    if (mode.kind === 'signed-chunks' || mode.kind === 'unsigned-trailer') {
      yield* this.readChunked(mode.kind === 'signed-chunks', mode.kind === 'unsigned-trailer' || mode.trailer);
    } else {
      // A signed payload's SHA-256 is taken over the runs, in read().
      let total = 0;
      for await (const piece of this.source) {
        total += piece.length;
        if (total > this.length) throw s3Errors.incompleteBody();
        this.tap(piece);
        yield piece;
      }
      if (total !== this.length) throw s3Errors.incompleteBody();
    }
  }

  private finish(relay: Sha256Relay | null): void {
    this.md5Digest = this.md5.digest();
    if (this.checksum) {
      if (this.checksum.expected === null) throw s3Errors.invalidRequest(`The body ended without its ${this.checksum.algorithm} trailer.`);
      // An x-amz-checksum-sha256 beside a signed payload is the relay's digest: not hashed twice.
      const sum = this.checksumByRelay ? Buffer.from(relay!.hex(), 'hex').toString('base64') : this.checksum.sum.digest();
      if (sum !== this.checksum.expected) throw s3Errors.badDigest(`The ${this.checksum.algorithm} checksum you specified did not match the calculated checksum.`);
    }
    if (this.contentMd5 !== null && this.contentMd5 !== this.md5Digest.toString('hex')) throw s3Errors.badDigest();
  }

  /** What every chunk's string to sign starts with (AWS4-HMAC-SHA256-PAYLOAD, the date, the scope). */
  private chunkPrefix: string | null = null;

  private chunkSignature(previous: string, chunkSha: string): string {
    this.chunkPrefix ??= `AWS4-HMAC-SHA256-PAYLOAD\n${this.v.amzDate}\n${this.v.scope}\n`;
    return createHmac('sha256', this.v.signingKey).update(`${this.chunkPrefix}${previous}\n${EMPTY_SHA256}\n${chunkSha}`).digest('hex');
  }

  private async *readChunked(signed: boolean, trailing: boolean): AsyncGenerator<Buffer> {
    const reader = new ByteReader(this.source);
    let previous = this.v.signature;
    let total = 0;
    for (;;) {
      const header = await reader.line();
      const [sizeText, ...extensions] = header.split(';');
      if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText!.trim())) throw s3Errors.invalidRequest('A chunk of the aws-chunked body has no size.');
      const size = parseInt(sizeText!.trim(), 16);
      const signature = extensions.map((e) => /^chunk-signature=([0-9a-f]{64})$/.exec(e.trim())?.[1]).find(Boolean);
      if (signed && !signature) throw s3Errors.signatureDoesNotMatch('A chunk of the aws-chunked body is not signed.');
      const hash = signed ? createHash('sha256') : null;
      for (let left = size; left > 0;) {
        const piece = await reader.some(left);
        left -= piece.length;
        total += piece.length;
        if (total > this.length) throw s3Errors.incompleteBody();
        hash?.update(piece);
        this.tap(piece);
        yield piece;
      }
      if (signed) {
        if (!signaturesEqual(signature!, this.chunkSignature(previous, hash!.digest('hex')))) {
          throw s3Errors.signatureDoesNotMatch('The signature of a chunk of the aws-chunked body does not match.');
        }
        previous = signature!;
      }
      if (size === 0) break;
      if ((await reader.line()) !== '') throw s3Errors.invalidRequest('A chunk of the aws-chunked body is longer than its size says.');
    }
    if (total !== this.length) throw s3Errors.incompleteBody();
    if (trailing) await this.readTrailer(reader, signed, previous);
    else if ((await reader.line()) !== '') throw s3Errors.invalidRequest('The aws-chunked body does not end after its last chunk.');
    await reader.rest();
  }

  private async readTrailer(reader: ByteReader, signed: boolean, previous: string): Promise<void> {
    const trailers: Array<[string, string]> = [];
    let signature: string | null = null;
    for (;;) {
      const line = await reader.line();
      if (line === '') break;
      const colon = line.indexOf(':');
      if (colon <= 0) throw s3Errors.invalidRequest('A trailer of the aws-chunked body is not "name:value".');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'x-amz-trailer-signature') signature = value;
      else trailers.push([name, value]);
    }
    if (signed) {
      const canonical = trailers.map(([n, v]) => `${n}:${v}\n`).join('');
      const text = ['AWS4-HMAC-SHA256-TRAILER', this.v.amzDate, this.v.scope, previous, createHash('sha256').update(canonical).digest('hex')].join('\n');
      const expected = createHmac('sha256', this.v.signingKey).update(text).digest('hex');
      if (signature === null || !signaturesEqual(signature, expected)) throw s3Errors.signatureDoesNotMatch('The trailer signature of the aws-chunked body does not match.');
    }
    for (const [name, value] of trailers) {
      if (this.checksum && checksumAlgorithmOf(name) === this.checksum.algorithm) this.checksum.expected = value;
    }
  }
}

/** A small body (XML), read whole and checked, up to `limit` bytes. */
export async function readSmallBody(payload: Payload, limit: number): Promise<Buffer> {
  if (payload.length > limit) throw s3Errors.invalidRequest(`This request's body may be at most ${limit} bytes.`);
  const pieces: Buffer[] = [];
  for await (const piece of payload) pieces.push(Buffer.from(piece));
  return Buffer.concat(pieces);
}
