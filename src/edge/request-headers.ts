/**
 * The few request headers an edge answer depends on, read from `rawHeaders`. Node builds
 * `req.headers` lazily, an object and a keyed store per header on every request that asks:
 * the hot path never asks. Values are what `req.headers` would hold: repeated If-None-Match,
 * Range and If-Range are joined with ", ", If-Modified-Since keeps the first.
 */

export interface AskedHeaders {
  ifNoneMatch?: string;
  ifModifiedSince?: string;
  range?: string;
  ifRange?: string;
}

/** What a request without any of the four carries: shared, never to be changed. */
const NONE: Readonly<AskedHeaders> = Object.freeze({});

/** Case-insensitive name test that lowercases only a name of the right length. */
function named(name: string, lower: string): boolean {
  return name.length === lower.length && (name === lower || name.toLowerCase() === lower);
}

const join = (before: string | undefined, value: string): string => (before === undefined ? value : `${before}, ${value}`);

/** The conditional and range headers of a request; a shared empty object when it has none. */
export function askedHeaders(raw: readonly string[]): Readonly<AskedHeaders> {
  let asked: AskedHeaders | null = null;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const n = name.length;
    // The four names are 5, 8, 13 and 17 characters long: most headers stop here.
    if (n !== 5 && n !== 8 && n !== 13 && n !== 17) continue;
    const value = raw[i + 1]!;
    if (named(name, 'range')) (asked ??= {}).range = join(asked.range, value);
    else if (named(name, 'if-range')) (asked ??= {}).ifRange = join(asked.ifRange, value);
    else if (named(name, 'if-none-match')) (asked ??= {}).ifNoneMatch = join(asked.ifNoneMatch, value);
    else if (named(name, 'if-modified-since')) (asked ??= {}).ifModifiedSince ??= value;
  }
  return asked ?? NONE;
}

/** The Range header as `req.headers.range` holds it, or undefined (the access log, usage). */
export function rangeHeader(raw: readonly string[]): string | undefined {
  let range: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (named(raw[i]!, 'range')) range = join(range, raw[i + 1]!);
  }
  return range;
}
