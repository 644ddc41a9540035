/**
 * An edge's copy of file bytes: small files in memory, the rest on disk, both bounded
 * and evicted least-recently-used first. A file enters the cache only whole and with the
 * SHA-256 its record names, so a partial fetch is never served; concurrent misses for one
 * file share one fetch, from each source in turn (sources.ts: parent edges, then the origin)
 * until one delivers the whole, checked copy.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat, statfs, unlink, writeFile } from 'node:fs/promises';
import { Coalescer } from '../core/coalesce.js';
import type { HotFill } from '../core/hot-bytes.js';
import type { ChunkConsumer } from './blob-fetch.js';
import { FillCounts, type FillSource } from './sources.js';
import { copyFromSource, type Fetched } from './fill-copy.js';
import { join } from 'node:path';
import type { EdgeFile } from './state.js';

export interface CachedBytes {
  /** Set for small files: the whole file. */
  memory?: Buffer;
  /** Set when the file is on disk. */
  path?: string;
  size: number;
}

interface MemoryEntry {
  sha256: string;
  bytes: Buffer;
  /** Asked for since eviction last passed it. */
  used: boolean;
  /** What a hit returns, made once: callers never change it. */
  hit: CachedBytes;
}

interface DiskEntry {
  path: string;
  /** The file's SHA-256; for a variant, its source file's. */
  sha256: string;
  size: number;
  /** Set for a variant: the file it was made of. */
  fileId?: string;
}

/** A variant kept by the cache: its bytes, and the ETag they were sent with. */
export interface CachedVariant extends CachedBytes {
  etag: string;
}

/** Delivers a file's bytes from the origin to `onChunk`, waiting on its promise between chunks. */
export type BlobSource = (fileId: string, onChunk: ChunkConsumer) => Promise<'ok' | 'not_found'>;


/** Files up to this size are also kept in memory. */
export const MEMORY_FILE_LIMIT = 1 << 20;
/** Fetches under way at once; a miss beyond them is passed through instead of cached. */
export const MAX_FILLS = 16;
const GIB = 1024 ** 3;

/** COFFER_EDGE_CACHE_BYTES when unset: a quarter of the free space, within sensible bounds. */
export async function defaultCapacity(dir: string): Promise<number> {
  try {
    const s = await statfs(dir);
    return Math.max(256 * 1024 ** 2, Math.min(64 * GIB, Math.floor((s.bavail * s.bsize) / 4)));
  } catch {
    return 10 * GIB;
  }
}

/** `lastAlive` of a fill from the origin: alive for as long as it lasts. */
const FROM_ORIGIN = -1;

export class EdgeCache {
  private readonly disk = new Map<string, DiskEntry>();
  /**
   * Small files' bytes, oldest first. A hit only marks its entry used (second chance): moving
   * it to the end (a Map delete and set) on every hit cost more than the rest of the lookup.
   * Eviction passes over a used entry once, clearing the mark and moving it to the end.
   */
  private readonly memory = new Map<string, MemoryEntry>();
  private readonly fills = new Coalescer<string, CachedBytes | null>();
  private diskBytes = 0;
  /** Room taken by fetches under way, counted against the bound before their bytes arrive. */
  private reservedBytes = 0;
  private memoryBytes = 0;
  private readonly blobDir: string;
  private readonly tmpDir: string;
  /** Variants are not kept across restarts: their directory is emptied on open. */
  private readonly variantDir: string;
  /** Each file's variants, by cache key, so a delete drops them all. */
  private readonly variantsOf = new Map<string, Set<string>>();
  private readonly variantEtags = new Map<string, string>();
  private readonly sources: readonly FillSource[];
  /** For each fill under way, when anything last arrived from upstream (Date.now()). */
  private readonly lastAlive = new Map<string, number>();
  /** Where fills came from (metrics, the status report). */
  readonly counts = new FillCounts();
  /** Where each fill's bytes also go as they arrive, if anywhere: a parent's children read them there (tier-route.ts). */
  tapFor: (file: EdgeFile) => HotFill | null = () => null;

  constructor(
    dir: string,
    readonly capacity: number,
    private readonly memoryCapacity: number,
    source: BlobSource | readonly FillSource[],
    private readonly maxFills = MAX_FILLS,
  ) {
    this.sources = typeof source === 'function' ? [{ kind: 'origin', fetch: (file, onChunk, onAlive) => source(file.file_id, (chunk) => (onAlive(), onChunk(chunk))) }] : source;
    this.blobDir = join(dir, 'blobs');
    this.tmpDir = join(dir, 'tmp');
    this.variantDir = join(dir, 'variants');
  }

  /** Finds what an earlier run left; `retain` then drops whatever is no longer current. */
  async open(): Promise<void> {
    await mkdir(this.blobDir, { recursive: true });
    await rm(this.tmpDir, { recursive: true, force: true });
    await mkdir(this.tmpDir, { recursive: true });
    await rm(this.variantDir, { recursive: true, force: true });
    await mkdir(this.variantDir, { recursive: true });
    for (const name of await readdir(this.blobDir)) {
      // `<id>.<sha256>.<nonce>`, or without the nonce as earlier versions named copies.
      const m = /^([A-Za-z0-9_-]+)\.([0-9a-f]{64})(?:\.[0-9a-f]{12})?$/.exec(name);
      const path = join(this.blobDir, name);
      if (!m || this.disk.has(m[1]!)) {
        await rm(path, { force: true });
        continue;
      }
      const size = (await stat(path)).size;
      this.disk.set(m[1]!, { path, sha256: m[2]!, size });
      this.diskBytes += size;
    }
  }

  /** Keeps only the bytes of files that exist now with the same content. */
  retain(current: ReadonlyMap<string, EdgeFile>): void {
    for (const [id, entry] of this.disk) {
      const file = current.get(id);
      // A copy cut short (a crash mid-write on a disk that lost it) is never served.
      if (!file || file.sha256 !== entry.sha256 || file.size !== entry.size) this.drop(id);
    }
  }

  lookup(file: EdgeFile): CachedBytes | null {
    const mem = this.memory.get(file.file_id);
    if (mem && mem.sha256 === file.sha256) {
      mem.used = true;
      return mem.hit;
    }
    const entry = this.disk.get(file.file_id);
    if (entry && entry.sha256 === file.sha256) {
      this.disk.delete(file.file_id);
      this.disk.set(file.file_id, entry);
      return { path: entry.path, size: entry.size };
    }
    return null;
  }

  /** True when a fetch for this file is under way. */
  fetching(fileId: string): boolean {
    return this.fills.has(fileId);
  }

  /**
   * The file's bytes, fetched once however many ask. Resolves null when the file is too
   * large for this cache, when the cache has no room for another fetch now, or when the
   * file vanished meanwhile; `stillWanted` is asked once it is whole.
   */
  ensure(file: EdgeFile, stillWanted: () => boolean, via: readonly string[] = []): Promise<CachedBytes | null> {
    const hit = this.lookup(file);
    if (hit) return Promise.resolve(hit);
    if (!this.fills.has(file.file_id) && !this.reserve(file.size)) return Promise.resolve(null);
    return this.fills.run(file.file_id, () => this.fetch(file, stillWanted, via).finally(() => {
      this.reservedBytes -= file.size;
    })).promise;
  }

  /** Makes room for a fetch, evicting what was used longest ago; false when there is none. */
  private reserve(size: number): boolean {
    if (this.fills.size >= this.maxFills || this.reservedBytes + size > this.capacity) return false;
    this.reservedBytes += size;
    this.evict(null);
    return true;
  }

  /** Copies evicted to make room, since start (metrics). */
  evictions = 0;

  /** Evicts least-recently-used copies until kept and reserved bytes fit the bound. */
  private evict(keep: string | null): void {
    for (const [victim, e] of this.disk) {
      if (this.diskBytes + this.reservedBytes <= this.capacity) break;
      if (victim === keep) continue;
      this.disk.delete(victim);
      this.diskBytes -= e.size;
      this.evictions++;
      this.dropMemory(victim);
      if (e.fileId !== undefined) this.forgetVariant(e.fileId, victim);
      void unlink(e.path).catch(() => {});
    }
  }

  /**
   * Whether the fill of this file under way is alive: asking the origin (no loop of parents can
   * stall that; its own idle limit bounds it), or heard from a parent within the last `withinMs`.
   */
  fillAlive(fileId: string, withinMs: number): boolean {
    const at = this.lastAlive.get(fileId);
    return at !== undefined && (at === FROM_ORIGIN || Date.now() - at <= withinMs);
  }

  /** Tries each source in order; a failed or refusing one gives way to the next, from byte 0. */
  private async fetch(file: EdgeFile, stillWanted: () => boolean, via: readonly string[]): Promise<CachedBytes | null> {
    try {
      for (let i = 0; ; i++) {
        const source = this.sources[i]!;
        const last = i === this.sources.length - 1;
        let got: Fetched | 'not_found';
        try {
          got = await this.copyFrom(source, file, via);
        } catch (err) {
          if (last) throw err;
          this.counts.failovers++;
          continue;
        }
        // Only the last source (the origin) is the authority on a file's absence.
        if (got === 'not_found' && !last) {
          this.counts.failovers++;
          continue;
        }
        if (got === 'not_found') return null;
        this.counts[source.kind]++;
        return await this.keep(file, got, stillWanted);
      }
    } finally {
      this.lastAlive.delete(file.file_id);
    }
  }

  private async keep(file: EdgeFile, got: Fetched, stillWanted: () => boolean): Promise<CachedBytes | null> {
    try {
      if (!stillWanted()) {
        await rm(got.tmp, { force: true });
        return null;
      }
      // A name of its own each time, as variants have: an older copy's unlink still queued, or a
      // reader of an older copy that finds it broken (dropBroken), never hits this one.
      const path = join(this.blobDir, `${file.file_id}.${file.sha256}.${randomBytes(6).toString('hex')}`);
      await rename(got.tmp, path);
      // Deleted or replaced while it was renamed: a drop then found nothing to drop.
      if (!stillWanted()) {
        await rm(path, { force: true });
        return null;
      }
      this.insertDisk(file.file_id, { path, sha256: file.sha256, size: file.size });
      if (got.memory) this.insertMemory(file.file_id, file.sha256, got.memory);
      return { path, size: file.size, ...(got.memory ? { memory: got.memory } : {}) };
    } catch (err) {
      await rm(got.tmp, { force: true });
      throw err;
    }
  }

  /** One source's whole copy, noting when anything last arrived from a parent (fillAlive). */
  private copyFrom(source: FillSource, file: EdgeFile, via: readonly string[]): Promise<Fetched | 'not_found'> {
    const keepInMemory = file.size <= MEMORY_FILE_LIMIT && file.size <= this.memoryCapacity;
    if (source.kind === 'origin') this.lastAlive.set(file.file_id, FROM_ORIGIN);
    const alive = source.kind === 'origin' ? () => {} : () => this.lastAlive.set(file.file_id, Date.now());
    return copyFromSource(source, file, via, { tmpDir: this.tmpDir, keepInMemory, alive, tap: this.tapFor(file) });
  }

  private insertDisk(id: string, entry: DiskEntry): void {
    const old = this.disk.get(id);
    if (old) {
      this.disk.delete(id);
      this.diskBytes -= old.size;
      void unlink(old.path).catch(() => {});
    }
    this.disk.set(id, entry);
    this.diskBytes += entry.size;
    // This fetch's own reservation is still counted until it settles, which is harmless:
    // it is released right after.
    this.reservedBytes -= entry.size;
    this.evict(id);
    this.reservedBytes += entry.size;
  }

  private insertMemory(id: string, sha256: string, bytes: Buffer): void {
    this.dropMemory(id);
    this.memory.set(id, { sha256, bytes, used: false, hit: { memory: bytes, size: bytes.length } });
    this.memoryBytes += bytes.length;
    // Entries moved to the end are met again, unmarked: the pass ends. The new entry is spared
    // once too, so a cache whose every entry was used since the last pass does not drop it first.
    let spared = false;
    for (const [victim, e] of this.memory) {
      if (this.memoryBytes <= this.memoryCapacity) break;
      this.memory.delete(victim);
      const newcomer = victim === id;
      if (newcomer ? !spared : e.used) {
        if (newcomer) spared = true;
        e.used = false;
        this.memory.set(victim, e);
      } else {
        this.memoryBytes -= e.bytes.length;
      }
    }
  }

  private dropMemory(id: string): void {
    const m = this.memory.get(id);
    if (m) {
      this.memory.delete(id);
      this.memoryBytes -= m.bytes.length;
    }
  }

  /** Forgets a file's bytes and every variant made of it at once; the disk space is freed in the background. */
  drop(id: string): void {
    this.dropKey(id);
    const variants = this.variantsOf.get(id);
    if (!variants) return;
    this.variantsOf.delete(id);
    for (const key of variants) {
      this.dropKey(key);
      this.variantEtags.delete(key);
    }
  }

  /**
   * A kept copy that could not be read whole (send.ts: gone or cut short behind the edge's
   * back) is forgotten, so the next request fills it anew. Found by its path, which is that
   * copy's own: a copy kept since, of any version, is left alone.
   */
  readonly dropBroken = (path: string): void => {
    for (const [key, e] of this.disk) {
      if (e.path !== path) continue;
      this.brokenCopies++;
      this.dropKey(key);
      if (e.fileId !== undefined) this.forgetVariant(e.fileId, key);
      return;
    }
  };

  /** Kept copies found gone or short on disk and forgotten, since start (metrics). */
  brokenCopies = 0;

  private dropKey(key: string): void {
    this.dropMemory(key);
    const e = this.disk.get(key);
    if (e) {
      this.disk.delete(key);
      this.diskBytes -= e.size;
      void unlink(e.path).catch(() => {});
    }
  }

  private forgetVariant(fileId: string, key: string): void {
    this.variantEtags.delete(key);
    const set = this.variantsOf.get(fileId);
    if (!set) return;
    set.delete(key);
    if (set.size === 0) this.variantsOf.delete(fileId);
  }

  /** A kept variant of the file as it is now (same SHA-256), or null. */
  lookupVariant(file: EdgeFile, variant: string): CachedVariant | null {
    const key = `${file.file_id}~${variant}`;
    const etag = this.variantEtags.get(key);
    if (etag === undefined) return null;
    const mem = this.memory.get(key);
    const entry = this.disk.get(key);
    if (!entry || entry.sha256 !== file.sha256) return null;
    this.disk.delete(key);
    this.disk.set(key, entry);
    if (mem) {
      mem.used = true;
      return { memory: mem.bytes, size: mem.bytes.length, etag };
    }
    return { path: entry.path, size: entry.size, etag };
  }

  /**
   * Keeps a variant within the same bound as files, least recently used first among both.
   * `stillWanted` is asked once its bytes are on disk: a variant of a file deleted meanwhile
   * is not kept.
   */
  async storeVariant(file: EdgeFile, variant: string, bytes: Buffer, etag: string, stillWanted: () => boolean): Promise<void> {
    if (bytes.length > this.capacity) return;
    const key = `${file.file_id}~${variant}`;
    // A name of its own each time: an older copy's unlink, still queued, never hits this one.
    const path = join(this.variantDir, `${key}.${randomBytes(6).toString('hex')}`);
    // Not synced: variants do not outlive the process, the directory is emptied on start.
    await writeFile(path, bytes, { mode: 0o600 });
    if (!stillWanted()) {
      await rm(path, { force: true });
      return;
    }
    this.dropKey(key);
    this.disk.set(key, { path, sha256: file.sha256, size: bytes.length, fileId: file.file_id });
    this.diskBytes += bytes.length;
    this.variantEtags.set(key, etag);
    let set = this.variantsOf.get(file.file_id);
    if (!set) this.variantsOf.set(file.file_id, (set = new Set()));
    set.add(key);
    this.evict(key);
    if (bytes.length <= MEMORY_FILE_LIMIT && bytes.length <= this.memoryCapacity) this.insertMemory(key, file.sha256, bytes);
  }

  /** How many variants are kept (tests, metrics). */
  get variantCount(): number {
    return this.variantEtags.size;
  }

  /** Bytes kept on disk plus bytes reserved by fetches under way. */
  get usedBytes(): number {
    return this.diskBytes + this.reservedBytes;
  }
}
