/** An edge's variant settings from its configuration. */
import type { Config } from '../../config/config.js';
import type { VariantOptions } from './maker.js';

/** Transforms allowed to wait for a turn beyond those running. */
export const MAX_QUEUED_TRANSFORMS = 1000;

/**
 * A transform holds one thread of libuv's pool (UV_THREADPOOL_SIZE, 4 unless set) while it
 * runs; the edge reads cached files on the same pool. Two threads are always left for the
 * reads, so deliveries never queue behind transforms.
 */
export function variantOptions(config: Config, log: { warn(obj: object, msg: string): void }): VariantOptions {
  const pool = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  const ceiling = Math.max(1, pool - 2);
  if (config.variantConcurrency > ceiling) {
    log.warn({ asked: config.variantConcurrency, used: ceiling, UV_THREADPOOL_SIZE: pool }, 'COFFER_VARIANT_CONCURRENCY lowered: raise UV_THREADPOOL_SIZE to run more transforms at once');
  }
  return { concurrency: Math.min(config.variantConcurrency, ceiling), maxPixels: config.variantMaxPixels, maxQueued: MAX_QUEUED_TRANSFORMS };
}
