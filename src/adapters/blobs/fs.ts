/**
 * Blobs on the local disk. Parts are separate files named by their etag, so a re-sent
 * part never overwrites the one the metadata points at. Complete links the parts into a
 * temporary directory with a manifest, fsyncs it and renames it into place: the bytes are
 * written to disk once, and an object is whole or absent.
 */
import { createReadStream } from 'node:fs';
import { link, mkdir, open, readFile, rename, rm, readdir, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createHash, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { FileHasher, type HashId } from './file-hasher.js';
import { PassHash } from './pass-hash.js';
import { FsPartWriter, fsyncDir, hashFile } from './fs-part.js';
import { BlobNotFoundError, UploadGoneError, type BlobStore, type ByteRange, type CommittedPart, type PartWriter } from '../../core/ports.js';

const SAFE_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
const MANIFEST = 'manifest.json';

/** An object is a directory of its parts (hard links) and this manifest. */
interface Manifest {
  size: number;
  sha256: string;
  parts: number[];
}

function checkKey(key: string): string[] {
  const segments = key.split('/');
  if (segments.length === 0 || !segments.every((s) => SAFE_SEGMENT.test(s) && s !== '..')) {
    throw new Error(`unsafe blob key: ${JSON.stringify(key)}`);
  }
  return segments;
}

/**
 * For an upload whose parts do not come in order (PassHash could not take them as they
 * passed): hashes its parts in order, read back on the hashing thread, while the rest are
 * still arriving, so complete seldom reads every byte again. It only ever vouches for the exact part versions
 * (etags) it read; complete falls back to hashing from the first unvouched part.
 */
class RunningHash {
  /** Etags and sizes of parts 1..n, in order, already in the hash. */
  readonly etags: string[] = [];
  readonly sizes: number[] = [];
  /** The newest committed version of each part. */
  readonly latest = new Map<number, string>();
  chain: Promise<void> = Promise.resolve();
  broken = false;
  constructor(readonly id: HashId) {}
}

const MAX_RUNNING_HASHES = 512;

export class FsBlobStore implements BlobStore {
  readonly bucket: string;
  private readonly objects: string;
  private readonly multipart: string;
  private readonly tmp: string;
  private readonly manifests = new Map<string, Manifest>();
  private readonly running = new Map<string, RunningHash>();
  /** Uploads whose parts have all come in order so far, hashed as they passed. */
  private readonly passing = new Map<string, PassHash>();
  private readonly hasher = new FileHasher();

  private constructor(root: string, bucket: string) {
    this.bucket = bucket;
    this.objects = join(root, 'objects');
    this.multipart = join(root, 'multipart');
    this.tmp = join(root, 'tmp');
  }

  static async open(root: string, bucket = 'local'): Promise<FsBlobStore> {
    const store = new FsBlobStore(root, bucket);
    await Promise.all([store.objects, store.multipart, store.tmp].map((d) => mkdir(d, { recursive: true })));
    // Whatever was being written when the process stopped is garbage now.
    for (const name of await readdir(store.tmp)) await rm(join(store.tmp, name), { force: true, recursive: true });
    return store;
  }

  private objectPath(key: string): string {
    return join(this.objects, ...checkKey(key));
  }

  private uploadDir(uploadId: string): string {
    checkKey(uploadId);
    return join(this.multipart, uploadId);
  }

  private tmpPath(): string {
    return join(this.tmp, randomBytes(12).toString('hex'));
  }

  async createMultipart(_key: string): Promise<{ uploadId: string }> {
    const uploadId = randomBytes(16).toString('base64url');
    await mkdir(this.uploadDir(uploadId), { recursive: true });
    return { uploadId };
  }

  /** The part's identity is only needed at commit: the bytes go to a temporary file first, hashed on their way when in order. */
  async openPart(_key: string, uploadId: string, partNumber: number, _expectedSize: number): Promise<PartWriter> {
    const writer = await this.openUnnamedPart();
    if (this.running.has(uploadId)) return writer;
    let pass = this.passing.get(uploadId);
    if (!pass) {
      if (this.passing.size >= MAX_RUNNING_HASHES) this.passing.delete(this.passing.keys().next().value!);
      pass = new PassHash();
      this.passing.set(uploadId, pass);
    }
    const claimed = pass;
    writer.hash = claimed.claim(partNumber, writer);
    if (writer.hash) writer.onRelease = () => claimed.release(writer);
    else this.readBack(uploadId);
    return writer;
  }

  /** The upload's parts can no longer all be hashed as they pass: those hashed so far are read back too. */
  private readBack(uploadId: string): void {
    const pass = this.passing.get(uploadId);
    this.passing.delete(uploadId);
    pass?.etags.forEach((etag, i) => this.noteCommitted(uploadId, i + 1, etag));
  }

  async openUnnamedPart(): Promise<FsPartWriter> {
    const path = this.tmpPath();
    return new FsPartWriter(path, await open(path, 'wx', 0o600));
  }

  async commitPart(key: string, uploadId: string, partNumber: number, writer: PartWriter): Promise<CommittedPart> {
    if (!(writer instanceof FsPartWriter)) throw new Error('part writer of another store');
    const etag = randomBytes(8).toString('hex');
    const dir = this.uploadDir(uploadId);
    try {
      // Renamed while still open: the flush to disk runs after the answer, not before it.
      await rename(writer.path, join(dir, `${partNumber}.${etag}`));
      writer.committed = true;
    } catch (err) {
      await writer.discard();
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !(await stat(dir).then(() => true, () => false))) throw new UploadGoneError(key, uploadId);
      throw err;
    }
    const pass = this.passing.get(uploadId);
    const hash = writer.hash;
    writer.hash = null;
    if (!pass || !hash || !pass.committed(writer, hash, partNumber, etag, writer.bytesWritten)) {
      this.readBack(uploadId);
      this.noteCommitted(uploadId, partNumber, etag);
    }
    const durable = writer.seal().then(() => fsyncDir(dir));
    // The caller awaits `durable`; this keeps an unawaited failure from crashing the process.
    durable.catch(() => {});
    return { etag, size: writer.bytesWritten, durable };
  }

  private noteCommitted(uploadId: string, partNumber: number, etag: string): void {
    let run = this.running.get(uploadId);
    if (!run) {
      if (this.running.size >= MAX_RUNNING_HASHES) this.forgetRunning(this.running.keys().next().value!);
      run = new RunningHash(this.hasher.create());
      this.running.set(uploadId, run);
    }
    // A part already hashed was replaced: this hash can no longer vouch for it.
    if (partNumber <= run.etags.length && run.etags[partNumber - 1] !== etag) run.broken = true;
    run.latest.set(partNumber, etag);
    const r = run;
    r.chain = r.chain.then(async () => {
      const dir = this.uploadDir(uploadId);
      while (!r.broken) {
        const next = r.etags.length + 1;
        const nextEtag = r.latest.get(next);
        if (nextEtag === undefined) return;
        try {
          r.sizes.push(await this.hasher.update(r.id, join(dir, `${next}.${nextEtag}`)));
          r.etags.push(nextEtag);
        } catch {
          r.broken = true;
        }
      }
    });
  }

  async dropPart(_key: string, uploadId: string, partNumber: number, etag: string): Promise<void> {
    await rm(join(this.uploadDir(uploadId), `${partNumber}.${checkKey(etag)[0]}`), { force: true });
  }

  async completeMultipart(key: string, uploadId: string, parts: Array<{ partNumber: number; etag: string }>): Promise<{ size: number; sha256: string }> {
    const dir = this.uploadDir(uploadId);
    const target = this.objectPath(key);
    if (!(await stat(dir).then(() => true, () => false))) {
      // Completed before (its parts were cleared afterwards), or aborted.
      const done = await this.manifest(key);
      if (done) return { size: done.size, sha256: done.sha256 };
      throw new UploadGoneError(key, uploadId);
    }
    const ordered = [...parts].sort((a, b) => a.partNumber - b.partNumber);
    const pass = this.passing.get(uploadId);
    this.passing.delete(uploadId);
    if (pass) {
      // Hashed as they passed: only parts it cannot vouch for are read, here.
      const { hash, sizes } = pass.prefix(ordered);
      return this.join(key, dir, target, ordered, sizes.length, sizes, (path) => hashFile(hash, path), async () => hash.digest('hex'));
    }
    const run = this.running.get(uploadId);
    if (run) await run.chain;
    // Start from what the running hash read, if it read exactly these versions.
    let vouched = 0;
    if (run && !run.broken) while (vouched < run.etags.length && vouched < ordered.length && run.etags[vouched] === ordered[vouched]!.etag) vouched++;
    // A fork holds every part the running hash read, so it may only be used when all of them
    // are vouched for: a part replaced while it was being hashed is in it but not in `ordered`.
    if (run && vouched < run.etags.length) vouched = 0;
    const hash = run && vouched > 0 ? this.hasher.fork(run.id) : this.hasher.create();
    const sizes: number[] = run && vouched > 0 ? run.sizes.slice(0, vouched) : [];
    try {
      return await this.join(key, dir, target, ordered, vouched, sizes, (path) => this.hasher.update(hash, path), () => this.hasher.digest(hash));
    } catch (err) {
      this.hasher.drop(hash);
      throw err;
    }
  }

  /**
   * Links the parts into a staged object and publishes it; `hashPart` feeds the hash each part
   * from the `vouched`-th on (answering its size), those before it are in it already.
   */
  private async join(key: string, dir: string, target: string, ordered: Array<{ partNumber: number; etag: string }>, vouched: number, sizes: number[],
    hashPart: (path: string) => Promise<number>, digest: () => Promise<string>): Promise<{ size: number; sha256: string }> {
    const staging = this.tmpPath();
    await mkdir(staging);
    try {
      for (const [index, part] of ordered.entries()) {
        // Each part was fsynced when it arrived; linking shares its bytes instead of writing them again.
        const linked = join(staging, String(index + 1));
        await link(join(dir, `${part.partNumber}.${checkKey(part.etag)[0]}`), linked);
        if (index >= vouched) sizes.push(await hashPart(linked));
      }
      const manifest: Manifest = { size: sizes.reduce((a, b) => a + b, 0), sha256: await digest(), parts: sizes };
      await this.publish(key, staging, target, manifest);
      return { size: manifest.size, sha256: manifest.sha256 };
    } catch (err) {
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
  }

  /** Writes a staged object's manifest, fsyncs it and renames it into place: whole or absent. */
  private async publish(key: string, staging: string, target: string, manifest: Manifest): Promise<void> {
    const out = await open(join(staging, MANIFEST), 'wx', 0o600);
    try {
      await out.writeFile(JSON.stringify(manifest));
      await out.sync();
    } finally {
      await out.close();
    }
    await fsyncDir(staging);
    const targetDir = dirname(target);
    await mkdir(targetDir, { recursive: true });
    // A leftover of a completion that crashed before it was recorded is not a live object.
    await rm(target, { recursive: true, force: true });
    await rename(staging, target);
    await fsyncDir(targetDir);
    this.manifests.delete(key);
  }

  /** A one-part object, made like a completed upload's: staged, fsynced, renamed into place. */
  async putObject(key: string, chunks: readonly Buffer[]): Promise<void> {
    const target = this.objectPath(key);
    const staging = this.tmpPath();
    await mkdir(staging);
    try {
      const hash = createHash('sha256');
      let size = 0;
      const part = await open(join(staging, '1'), 'wx', 0o600);
      try {
        for (const chunk of chunks) {
          await part.writeFile(chunk);
          hash.update(chunk);
          size += chunk.length;
        }
        await part.sync();
      } finally {
        await part.close();
      }
      await this.publish(key, staging, target, { size, sha256: hash.digest('hex'), parts: [size] });
    } catch (err) {
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
  }

  private forgetRunning(uploadId: string): void {
    const run = this.running.get(uploadId);
    if (!run) return;
    this.running.delete(uploadId);
    const id = run.id;
    void run.chain.then(() => this.hasher.drop(id));
  }

  async abortMultipart(_key: string, uploadId: string): Promise<void> {
    this.passing.delete(uploadId);
    this.forgetRunning(uploadId);
    await rm(this.uploadDir(uploadId), { recursive: true, force: true });
  }

  private async manifest(key: string): Promise<Manifest | null> {
    const cached = this.manifests.get(key);
    if (cached) return cached;
    try {
      const manifest = JSON.parse(await readFile(join(this.objectPath(key), MANIFEST), 'utf8')) as Manifest;
      if (this.manifests.size > 10_000) this.manifests.clear();
      this.manifests.set(key, manifest);
      return manifest;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw err;
    }
  }

  async read(key: string, range?: ByteRange): Promise<NodeJS.ReadableStream> {
    const manifest = await this.manifest(key);
    if (!manifest) throw new BlobNotFoundError(key);
    const dir = this.objectPath(key);
    const start = range?.start ?? 0;
    const end = range?.end ?? manifest.size - 1;
    async function* bytes() {
      let offset = 0;
      for (const [index, size] of manifest!.parts.entries()) {
        const partStart = offset;
        const partEnd = offset + size - 1;
        offset += size;
        if (size === 0 || partEnd < start || partStart > end) continue;
        const from = Math.max(start, partStart) - partStart;
        const to = Math.min(end, partEnd) - partStart;
        try {
          for await (const chunk of createReadStream(join(dir, String(index + 1)), { start: from, end: to, highWaterMark: 1 << 20 })) yield chunk as Buffer;
        } catch (err) {
          // Deleted while it was read.
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(key);
          throw err;
        }
      }
    }
    return Readable.from(bytes(), { objectMode: false });
  }

  async size(key: string): Promise<number | null> {
    return (await this.manifest(key))?.size ?? null;
  }

  async delete(key: string): Promise<void> {
    this.manifests.delete(key);
    await rm(this.objectPath(key), { recursive: true, force: true });
  }

  async close(): Promise<void> {
    await this.hasher.close();
  }
}
