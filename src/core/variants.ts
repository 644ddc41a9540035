/**
 * Image variant parameters (contract §13): how `w`, `h`, `fit`, `format` and `q` are read,
 * checked and written. Pure code shared by every edge, the origin's create-link and the SDK,
 * so a link signs exactly the variant an edge will make.
 */
export const VARIANT_PARAMS = ['w', 'h', 'fit', 'format', 'q'] as const;
export type VariantParamName = (typeof VARIANT_PARAMS)[number];
export const VARIANT_FITS = ['cover', 'contain', 'inside'] as const;
export type VariantFit = (typeof VARIANT_FITS)[number];
export const VARIANT_FORMATS = ['webp', 'avif', 'jpeg', 'png', 'auto'] as const;
export type VariantFormat = (typeof VARIANT_FORMATS)[number];
/** What an edge writes: a format asked for, or the source's own when none was. */
export type OutputFormat = Exclude<VariantFormat, 'auto'> | 'gif';
export const MAX_VARIANT_SIDE = 4096;

export interface VariantParams {
  w?: number;
  h?: number;
  fit?: VariantFit;
  format?: VariantFormat;
  q?: number;
}

export interface VariantProblem {
  /** The parameter at fault. */
  field: string;
  message: string;
}

/** The images variants are made of, by media type, and the format each is read as. */
const SOURCES: Record<string, 'jpeg' | 'png' | 'webp' | 'avif' | 'gif' | 'tiff'> = {
  'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/pjpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp',
  'image/avif': 'avif', 'image/gif': 'gif', 'image/tiff': 'tiff',
};

export const OUTPUT_TYPES: Record<OutputFormat, string> = {
  webp: 'image/webp', avif: 'image/avif', jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif',
};
const EXTENSIONS: Record<OutputFormat, string> = { webp: 'webp', avif: 'avif', jpeg: 'jpg', png: 'png', gif: 'gif' };

const isParam = (name: string): name is VariantParamName => (VARIANT_PARAMS as readonly string[]).includes(name);

/** The format a stored file is read as, or null when variants cannot be made of it. */
export function sourceFormat(contentType: string): (typeof SOURCES)[string] | null {
  return SOURCES[contentType.split(';', 1)[0]!.trim().toLowerCase()] ?? null;
}

const SIDE = /^[1-9][0-9]{0,3}$/;
const QUALITY = /^[1-9][0-9]{0,2}$/;

/** Checks one parameter written as text (a URL's spelling: plain decimal, no sign, no leading zero). */
function readOne(name: VariantParamName, text: string, into: VariantParams): VariantProblem | null {
  switch (name) {
    case 'w':
    case 'h':
      if (!SIDE.test(text) || Number(text) > MAX_VARIANT_SIDE) return { field: name, message: `"${name}" must be a whole number of pixels from 1 to ${MAX_VARIANT_SIDE}.` };
      into[name] = Number(text);
      return null;
    case 'q':
      if (!QUALITY.test(text) || Number(text) > 100) return { field: 'q', message: '"q" must be a whole number from 1 to 100.' };
      into.q = Number(text);
      return null;
    case 'fit':
      if (!(VARIANT_FITS as readonly string[]).includes(text)) return { field: 'fit', message: `"fit" must be one of ${VARIANT_FITS.join(', ')}.` };
      into.fit = text as VariantFit;
      return null;
    case 'format':
      if (!(VARIANT_FORMATS as readonly string[]).includes(text)) return { field: 'format', message: `"format" must be one of ${VARIANT_FORMATS.join(', ')}.` };
      into.format = text as VariantFormat;
      return null;
  }
}

/**
 * The variant a query asks for: null when it names none of the parameters, a problem when
 * one is wrong or given twice.
 */
export function readVariant(pairs: ReadonlyArray<readonly [string, string]>): { params: VariantParams } | { problem: VariantProblem } | null {
  let params: VariantParams | null = null;
  for (const [name, value] of pairs) {
    if (!isParam(name)) continue;
    params ??= {};
    if (params[name] !== undefined) return { problem: { field: name, message: `"${name}" may be given only once.` } };
    const problem = readOne(name, value, params);
    if (problem) return { problem };
  }
  return params ? { params } : null;
}

/**
 * Checks parameters given as values (create-link, the SDK) and returns them as the query
 * parameters to sign; throws nothing, answers the first problem instead.
 */
export function variantQuery(given: Readonly<Record<string, unknown>>): { query: Record<string, string> } | { problem: VariantProblem } {
  const query: Record<string, string> = {};
  const checked: VariantParams = {};
  for (const [name, value] of Object.entries(given)) {
    if (value === undefined) continue;
    if (!isParam(name)) return { problem: { field: name, message: `"${name}" is not a variant parameter; use ${VARIANT_PARAMS.join(', ')}.` } };
    const text = typeof value === 'number' && Number.isInteger(value) ? String(value) : typeof value === 'string' ? value : '';
    const problem = readOne(name, text, checked);
    if (problem) return { problem };
    query[name] = text;
  }
  return { query };
}

/** Whether an Accept header takes a media type (exactly, with a q above 0). */
function accepts(accept: string, type: string): boolean {
  for (const range of accept.split(',')) {
    const [media, ...rest] = range.split(';');
    if (media!.trim().toLowerCase() !== type) continue;
    const q = rest.map((p) => p.trim()).find((p) => p.toLowerCase().startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

/**
 * The format an edge writes: the one asked for; for `auto` the best the Accept header
 * allows (AVIF, then WebP, then JPEG, or PNG for sources that may be transparent); without
 * `format` the source's own (TIFF becomes PNG, which browsers show).
 */
export function outputFormat(params: VariantParams, source: NonNullable<ReturnType<typeof sourceFormat>>, accept: string | undefined): OutputFormat {
  if (params.format && params.format !== 'auto') return params.format;
  if (params.format === 'auto') {
    const header = accept ?? '';
    if (accepts(header, 'image/avif')) return 'avif';
    if (accepts(header, 'image/webp')) return 'webp';
    return source === 'jpeg' ? 'jpeg' : 'png';
  }
  return source === 'tiff' ? 'png' : source;
}

/** One name per distinct output: what the cache and the coalescing are keyed by. */
export const variantKey = (p: VariantParams, out: OutputFormat): string =>
  `w${p.w ?? ''}h${p.h ?? ''}${p.fit ?? 'inside'}.q${p.q ?? ''}.${out}`;

/** The file's name with the extension of the format it is sent in. */
export function variantName(name: string, out: OutputFormat): string {
  // The empty name stays empty (no filename is sent for it), never the hidden name ".webp".
  if (name === '') return '';
  const dot = name.lastIndexOf('.');
  return `${dot > 0 ? name.slice(0, dot) : name}.${EXTENSIONS[out]}`;
}
