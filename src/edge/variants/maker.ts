/**
 * Variants made once per edge: concurrent requests for one variant share one transform,
 * transforms wait their turn behind a limit, and what is made is kept by the edge's cache.
 */
import { createHash } from 'node:crypto';
import { access } from 'node:fs/promises';
import { Coalescer } from '../../core/coalesce.js';
import type { OutputFormat, VariantParams } from '../../core/variants.js';
import { MEMORY_FILE_LIMIT, type CachedBytes, type CachedVariant, type EdgeCache } from '../cache.js';
import type { EdgeFile } from '../state.js';
import { Limiter } from './limiter.js';
import { VariantError } from './transform.js';
import { TransformProcess } from './transform-pool.js';

export interface VariantOptions {
  /** Transforms at once on this edge. */
  concurrency: number;
  /** Largest source image, in pixels (width × height). */
  maxPixels: number;
  /** Transforms allowed to wait for a turn; more are refused with 503. */
  maxQueued: number;
}

export class VariantMaker {
  private readonly limiter: Limiter;
  private readonly making = new Coalescer<string, CachedVariant>();
  /** Transforms finished since start (tests, metrics). */
  made = 0;
  failed = 0;

  /** Where the transforms run. */
  readonly helper: TransformProcess;

  constructor(private readonly cache: EdgeCache, readonly options: VariantOptions) {
    this.limiter = new Limiter(options.concurrency, options.maxQueued);
    this.helper = new TransformProcess(options.concurrency + 1);
  }

  close(): Promise<void> {
    return this.helper.close();
  }

  get active(): number {
    return this.limiter.active;
  }

  get queued(): number {
    return this.limiter.queued;
  }

  /**
   * The variant `key` of `file` made from `source`, shared with every request that asks
   * while it is being made. Rejects with a VariantError.
   */
  make(file: EdgeFile, key: string, params: VariantParams, out: OutputFormat, source: CachedBytes, stillWanted: () => boolean): { promise: Promise<CachedVariant>; joined: boolean } {
    const id = `${file.file_id}.${file.sha256}~${key}`;
    if (!this.making.has(id) && this.limiter.full) {
      return { promise: Promise.reject(new VariantError(503, 'edge_busy', 'This edge is making too many variants; try again shortly.')), joined: false };
    }
    return this.making.run(id, () => this.limiter.run(async () => {
      let bytes: Buffer;
      try {
        bytes = await this.helper.transform(source, params, out, this.options.maxPixels);
      } catch (err) {
        this.failed++;
        // The source evicted while this waited for its turn is no fault of the image.
        if (!source.memory && source.path && !(await access(source.path).then(() => true, () => false))) {
          throw new VariantError(503, 'edge_unavailable', 'The image left this edge while its variant waited; try again.');
        }
        throw err;
      }
      this.made++;
      const etag = createHash('sha256').update(bytes).digest('hex');
      await this.cache.storeVariant(file, key, bytes, etag, stillWanted);
      // A large variant is sent from disk, a chunk at a time under the delivery gate, like a large file.
      const kept = bytes.length > MEMORY_FILE_LIMIT ? this.cache.lookupVariant(file, key) : null;
      return kept?.path ? { path: kept.path, size: kept.size, etag } : { memory: bytes, size: bytes.length, etag };
    }));
  }
}
