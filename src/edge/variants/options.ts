/** An edge's variant settings from its configuration. */
import type { Config } from '../../config/config.js';
import type { VariantOptions } from './maker.js';

/** Transforms allowed to wait for a turn beyond those running, all clients together. */
export const MAX_QUEUED_TRANSFORMS = 1000;

export function variantOptions(config: Config): VariantOptions {
  return {
    concurrency: config.variantConcurrency,
    maxPixels: config.variantMaxPixels,
    maxQueued: MAX_QUEUED_TRANSFORMS,
    perClient: config.variantPerClient,
    maxWaitMs: config.variantQueueMs,
    perSource: config.variantPerSource,
    allowed: {
      sizes: config.variantSizes ? new Set(config.variantSizes) : null,
      qualities: config.variantQualities ? new Set(config.variantQualities) : null,
    },
  };
}
