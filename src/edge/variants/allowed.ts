/**
 * Optional presets, as imgproxy's and Cloudflare Images' named variants: when an operator
 * lists the sizes and qualities an edge makes, a request without a signed link may ask only
 * for those (400 `variant_not_allowed` otherwise); a signed link names its variant and may
 * ask for any. Unset, any value of contract §13 is allowed.
 */
import type { VariantParams } from '../../core/variants.js';

export interface AllowedVariants {
  /** Allowed `w` and `h`, in pixels; null: any. */
  sizes: ReadonlySet<number> | null;
  /** Allowed `q`; null: any. */
  qualities: ReadonlySet<number> | null;
}

export interface Disallowed {
  field: 'w' | 'h' | 'q';
  allowed: number[];
}

const sorted = (set: ReadonlySet<number>) => [...set].sort((a, b) => a - b);

/** The first parameter of `params` outside the presets, or null when every one is in them. */
export function disallowed(params: VariantParams, allowed: AllowedVariants): Disallowed | null {
  const { sizes, qualities } = allowed;
  if (sizes) {
    if (params.w !== undefined && !sizes.has(params.w)) return { field: 'w', allowed: sorted(sizes) };
    if (params.h !== undefined && !sizes.has(params.h)) return { field: 'h', allowed: sorted(sizes) };
  }
  if (qualities && params.q !== undefined && !qualities.has(params.q)) return { field: 'q', allowed: sorted(qualities) };
  return null;
}
