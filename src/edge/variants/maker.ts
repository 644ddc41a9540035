/**
 * Variants made once per edge: concurrent requests for one variant share one transform,
 * transforms wait their turn behind a limit, and what is made is kept by the edge's cache.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { Coalescer } from '../../core/coalesce.js';
import { type CofferError, errors } from '../../core/errors.js';
import type { ErrorCode } from '../../core/error-codes.js';
import type { OutputFormat, VariantParams } from '../../core/variants.js';
import { MEMORY_FILE_LIMIT, type CachedBytes, type CachedVariant, type EdgeCache } from '../cache.js';
import type { EdgeFile } from '../state.js';
import type { AllowedVariants } from './allowed.js';
import { AdmissionError, Limiter } from './limiter.js';
import { SourceBudget } from './source-budget.js';
import { VariantError } from './transform.js';
import { TransformProcess } from './transform-pool.js';

export interface VariantOptions {
  /** Transforms at once on this edge. */
  concurrency: number;
  /** Largest source image, in pixels (width × height). */
  maxPixels: number;
  /** Transforms allowed to wait for a turn; more are refused with 503. */
  maxQueued: number;
  /** Transforms one client may have running or waiting; more are refused with 503. */
  perClient: number;
  /** Longest wait for a turn, in ms; then 503. */
  maxWaitMs: number;
  /** New variants of one file that requests without a signed link may have made per minute. */
  perSource: number;
  /** What a request without a signed link may ask for. */
  allowed: AllowedVariants;
}

/** Who asks for a variant: the client it is counted against, and whether its link is signed. */
export interface Asker {
  client: string;
  signed: boolean;
}

/** What the coalescer would start for a key already under way: never called. */
const joinedOnly = (): Promise<never> => Promise.reject(new Error('a transform under way is joined, not started again'));

const asVariantError = (e: CofferError<ErrorCode>) => new VariantError(e.code, e.message, e.details);

export class VariantMaker {
  private readonly limiter: Limiter;
  private readonly making = new Coalescer<string, CachedVariant>();
  /** Transforms finished since start (tests, metrics). */
  made = 0;
  failed = 0;

  /** Where the transforms run. */
  readonly helper: TransformProcess;

  private readonly budget: SourceBudget;

  constructor(private readonly cache: EdgeCache, readonly options: VariantOptions, now?: { monotonic(): number; wall(): number }) {
    this.limiter = new Limiter(options, now?.monotonic);
    this.budget = new SourceBudget(options.perSource, now?.wall);
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

  /** The client the next free transform slot goes to (tests, diagnostics). */
  get nextClient(): string | undefined {
    return this.limiter.nextClient;
  }

  /** Why a new transform for `asker` of `file` is refused now, taking from the file's budget when not. */
  private admit(file: EdgeFile, asker: Asker): VariantError | null {
    if (this.limiter.refusal(asker.client)) return asVariantError(errors.variantBusy(this.limiter.retryAfter()));
    if (asker.signed) return null;
    const wait = this.budget.take(file.file_id);
    return wait > 0 ? asVariantError(errors.variantLimit(wait)) : null;
  }

  /**
   * The variant `key` of `file` made from `source`, shared with every request that asks
   * while it is being made. Rejects with a VariantError.
   */
  make(file: EdgeFile, key: string, params: VariantParams, out: OutputFormat, source: CachedBytes, stillWanted: () => boolean, asker: Asker): { promise: Promise<CachedVariant>; joined: boolean } {
    const id = `${file.file_id}.${file.sha256}~${key}`;
    // Joining a transform under way adds no work: only a new one is admitted.
    if (this.making.has(id)) return this.making.run(id, joinedOnly);
    const refused = this.admit(file, asker);
    if (refused) return { promise: Promise.reject(refused), joined: false };
    // Started here, not when the coalescer gets to it: its slot is counted before the next request is admitted.
    const work = this.limiter.run(asker.client, () => this.transformAndKeep(file, key, params, out, source, stillWanted)).catch((err: unknown) => {
      throw err instanceof AdmissionError ? asVariantError(errors.variantBusy(err.retryAfter)) : err;
    });
    return this.making.run(id, () => work);
  }

  /** Makes the variant in the helper and keeps it in the cache (under `stillWanted`). */
  private async transformAndKeep(file: EdgeFile, key: string, params: VariantParams, out: OutputFormat, source: CachedBytes, stillWanted: () => boolean): Promise<CachedVariant> {
    let bytes: Buffer;
    try {
      bytes = await this.helper.transform(source, params, out, this.options.maxPixels);
    } catch (err) {
      this.failed++;
      // The source evicted while this waited for its turn, or its copy gone or cut short behind the
      // edge's back (forgotten then, so the next request fills it anew), is no fault of the image.
      if (!source.memory && source.path && !(await stat(source.path).then((s) => s.isFile() && s.size >= source.size, () => false))) {
        this.cache.dropBroken(source.path);
        throw new VariantError('edge_unavailable', 'The image left this edge while its variant waited; try again.');
      }
      throw err;
    }
    this.made++;
    const etag = createHash('sha256').update(bytes).digest('hex');
    await this.cache.storeVariant(file, key, bytes, etag, stillWanted);
    // A large variant is sent from disk, a chunk at a time under the delivery gate, like a large file.
    const kept = bytes.length > MEMORY_FILE_LIMIT ? this.cache.lookupVariant(file, key) : null;
    return kept?.path ? { path: kept.path, size: kept.size, etag } : { memory: bytes, size: bytes.length, etag };
  }
}
