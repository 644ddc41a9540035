/**
 * Configuration of contract §1: environment variables, each overridden by a flag of the
 * same name in kebab case (`--data-dir` or `--coffer-data-dir` for COFFER_DATA_DIR).
 */
import { DEFAULT_MAX_FILE_SIZE } from '../core/upload.js';
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from '../core/listener-bounds.js';
import { MAX_VARIANT_SIDE } from '../core/variants.js';
import { hostname } from 'node:os';
import { isSafeLabel } from '../core/names.js';

export interface Config {
  host: string;
  port: number;
  edgePort: number;
  /** The S3 interface's port (contract §12). */
  s3Port: number;
  baseUrl: string;
  cdnUrl: string;
  dataDir: string;
  accessKey: string | undefined;
  signingSecrets: string[];
  databaseUrl: string | undefined;
  blobStore: string | undefined;
  /** Edge credentials: the first is what an edge presents, every one is accepted by the origin (rotation). */
  edgeTokens: string[];
  /** A PEM CA bundle an edge trusts when its origin is https://. */
  originCa: string | undefined;
  /** Milliseconds a client may take to send a request's headers. */
  headersTimeoutMs: number;
  /** Milliseconds a request body or a response may make no progress before the connection is dropped. */
  idleTimeoutMs: number;
  /** Connections each listener (origin, S3, edge) holds at once; unset: a share of the open-file limit (core/fd-budget.ts). */
  maxConnections: number | undefined;
  /** Connections one client address holds at once on each listener. */
  maxConnectionsPerAddress: number;
  edgeCacheBytes: number | undefined;
  /** Parent edges this edge fills from, in order of priority, before the origin (at most MAX_EDGE_PARENTS). */
  edgeParents: string[];
  /** The edge's name or region shown to operators (default: the host name). */
  edgeName: string;
  edgeLeaseMs: number;
  publicMaxAge: number | undefined;
  uploadTtl: number;
  /** Seconds a Playground session lasts after sign-in. */
  sessionTtl: number;
  maxFileSize: number;
  /** Requests per second one client address may make to the programmatic interface. */
  rateLimit: number;
  logLevel: string;
  /** Webhook receivers may be on loopback and private addresses (tests, private networks). */
  webhookAllowPrivate: boolean;
  /** The first webhook retry's delay in ms; each next one doubles, up to an hour. */
  webhookRetryBaseMs: number;
  /** When set, GET /metrics asks for it as a Bearer token. */
  metricsToken: string | undefined;
  /** Where an edge writes one JSON line per request: a file path, or "stdout"; none when unset. */
  edgeAccessLog: string | undefined;
  /** Image transforms an edge runs at once (contract §13). */
  variantConcurrency: number;
  /** Largest image, in pixels, an edge makes variants of: a guard against decompression bombs. */
  variantMaxPixels: number;
  /** Transforms one client address may have running or waiting at an edge. */
  variantPerClient: number;
  /** Longest wait of a transform for its turn, in ms, before 503 `variant_busy`. */
  variantQueueMs: number;
  /** New variants of one file that requests without a signed link may have made per minute. */
  variantPerSource: number;
  /** The only `w`/`h` a request without a signed link may ask for; undefined: any. */
  variantSizes: number[] | undefined;
  /** The only `q` a request without a signed link may ask for; undefined: any. */
  variantQualities: number[] | undefined;
}

export const SETTINGS = [
  ['COFFER_HOST', 'address to bind (default 127.0.0.1)'],
  ['COFFER_PORT', 'origin port; 0 picks a free one (default 8080)'],
  ['COFFER_EDGE_PORT', 'edge port (default 8081)'],
  ['COFFER_S3_PORT', 'S3 interface port for serve and origin; 0 picks a free one (default 8082)'],
  ['COFFER_BASE_URL', 'public address of the origin'],
  ['COFFER_CDN_URL', 'public address of the delivery network'],
  ['COFFER_DATA_DIR', 'data directory (default ./data)'],
  ['COFFER_ACCESS_KEY', 'Bearer key of the programmatic interface (generated on first start)'],
  ['COFFER_SIGNING_SECRET', 'HMAC secret(s) for signed links, comma-separated (generated on first start)'],
  ['COFFER_DATABASE_URL', 'postgres://… to keep metadata in PostgreSQL'],
  ['COFFER_BLOB_STORE', 's3://bucket?endpoint=…&region=… to keep bytes in S3-compatible storage'],
  ['COFFER_EDGE_TOKEN', "the edges' credential for the origin's feed, comma-separated to rotate: an edge sends the first, the origin accepts all (generated on first start)"],
  ['COFFER_ORIGIN_CA', 'PEM file of the CA an edge trusts when --origin is https:// (default: the system CAs)'],
  ['COFFER_HEADERS_TIMEOUT_MS', 'milliseconds a client may take to send request headers (default 30000)'],
  ['COFFER_IDLE_TIMEOUT_MS', 'milliseconds a request body or a response may stall before the connection is dropped (default 30000)'],
  ['COFFER_MAX_CONNECTIONS', 'connections each listener (origin, S3, edge) holds at once; more are closed as they come (default: a share of the open-file limit)'],
  ['COFFER_MAX_CONNECTIONS_PER_ADDRESS', 'connections one client address (IPv6: its /64) holds at once on each listener (default 1000)'],
  ['COFFER_EDGE_CACHE_BYTES', "an edge's cache bound"],
  ['COFFER_EDGE_PARENTS', 'comma-separated parent edges an edge fills from before the origin, first first, e.g. http://10.0.1.5:8081,http://10.0.2.5:8081 (default: none; at most 8)'],
  ['COFFER_EDGE_NAME', "an edge's name or region shown to operators, e.g. eu-west-1a (default: the host name)"],
  ['COFFER_EDGE_LEASE_MS', 'how long an edge serves from cache without hearing from the origin (default 5000, at least 100)'],
  ['COFFER_PUBLIC_MAX_AGE', 'seconds of browser caching for Public answers'],
  ['COFFER_UPLOAD_TTL', 'seconds an open upload may stay open (default 86400)'],
  ['COFFER_SESSION_TTL', 'seconds a Playground session lasts after sign-in (default 43200)'],
  ['COFFER_MAX_FILE_SIZE', 'largest declared size accepted at initiate (default 52428800000)'],
  ['COFFER_RATE_LIMIT', 'requests per second per client address (default 1000)'],
  ['COFFER_LOG_LEVEL', 'info, warn, error or debug (default info)'],
  ['COFFER_EDGE_ACCESS_LOG', "an edge's access log: a file path or stdout, one JSON line per request (default: none)"],
  ['COFFER_VARIANT_CONCURRENCY', 'image transforms an edge runs at once (default 2), in a helper process at a lower priority'],
  ['COFFER_VARIANT_MAX_PIXELS', 'largest source image, width × height, an edge makes variants of (default 67108864, 8192 × 8192)'],
  ['COFFER_VARIANT_PER_CLIENT', 'image transforms one client address (an IPv6 /64) may have running or waiting at an edge (default 6)'],
  ['COFFER_VARIANT_QUEUE_MS', 'longest wait of a transform for its turn before 503 variant_busy (default 10000)'],
  ['COFFER_VARIANT_PER_SOURCE', 'new variants of one file that requests without a signed link may have made per minute at an edge (default 24)'],
  ['COFFER_VARIANT_SIZES', 'comma-separated: the only w and h a request without a signed link may ask for (default: any)'],
  ['COFFER_VARIANT_QUALITIES', 'comma-separated: the only q a request without a signed link may ask for (default: any)'],
  ['COFFER_METRICS_TOKEN', 'when set, GET /metrics on origins and edges asks for it as a Bearer token (default: open)'],
  ['COFFER_WEBHOOK_ALLOW_PRIVATE', '1 lets webhook receivers be on loopback and private addresses (default 0)'],
  ['COFFER_WEBHOOK_RETRY_BASE_MS', "a webhook's first retry delay in ms; each next doubles, up to an hour (default 1000)"],
] as const;

export type SettingName = (typeof SETTINGS)[number][0];

/** `COFFER_DATA_DIR` → `data-dir`. */
export const flagName = (env: string): string => env.replace(/^COFFER_/, '').toLowerCase().replace(/_/g, '-');

export class ConfigError extends Error {}

export const DEFAULT_VARIANT_CONCURRENCY = 2;
export const DEFAULT_VARIANT_MAX_PIXELS = 8192 * 8192;
/** A browser opens at most six connections to one host: one page alone is never refused. */
export const DEFAULT_VARIANT_PER_CLIENT = 6;
export const DEFAULT_VARIANT_QUEUE_MS = 10_000;
/** Above the widths a responsive page asks for (Next.js lists 16) in the formats browsers take. */
export const DEFAULT_VARIANT_PER_SOURCE = 24;

/**
 * The shortest lease accepted: an edge's beat (a fifth of the lease, at least 20 ms) must fit in
 * it five times, or the edge drops its own feed between two beats (docs/edge.md, "The lease").
 */
export const MIN_EDGE_LEASE_MS = 100;

function integer(name: string, raw: string | undefined, fallback: number, min = 0): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, not "${raw}".`);
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < min) throw new ConfigError(`${name} must be a whole number of at least ${min}.`);
  return value;
}

function optionalInteger(name: string, raw: string | undefined, min = 0): number | undefined {
  return raw === undefined || raw === '' ? undefined : integer(name, raw, 0, min);
}

/** A comma-separated list of whole numbers from `min` to `max`; undefined when unset. */
function integerList(name: string, raw: string | undefined, min: number, max: number): number[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  return raw.split(',').map((item) => {
    if (item.trim() === '') throw new ConfigError(`${name} has an empty item: list whole numbers separated by commas.`);
    const value = integer(name, item.trim(), min, min);
    if (value > max) throw new ConfigError(`${name} lists ${value}; each value must be from ${min} to ${max}.`);
    return value;
  });
}

function url(name: string, raw: string): string {
  try {
    const parsed = new URL(raw);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error();
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, not "${raw}".`);
  }
  return raw.replace(/\/+$/, '');
}

export const MAX_EDGE_PARENTS = 8;

/** COFFER_EDGE_PARENTS: http(s)://host[:port] addresses without a path, as --origin is checked. */
export function edgeParents(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  const list = raw.split(',').map((item) => {
    const address = item.trim().replace(/\/+$/, '');
    let valid = /^https?:\/\/[^/?#@]+$/.test(address);
    if (valid) {
      try {
        new URL(address);
      } catch {
        valid = false;
      }
    }
    // A password written into the address is not repeated on the terminal.
    if (!valid) throw new ConfigError(`COFFER_EDGE_PARENTS: each parent must be an edge's address without a path or credentials, such as http://10.0.1.5:8081, not "${item.trim().replace(/\/\/[^/@]*@/, '//…@')}".`);
    return address;
  });
  if (list.length > MAX_EDGE_PARENTS) throw new ConfigError(`COFFER_EDGE_PARENTS lists ${list.length} parents; at most ${MAX_EDGE_PARENTS} are allowed.`);
  if (new Set(list).size !== list.length) throw new ConfigError('COFFER_EDGE_PARENTS lists one parent twice.');
  return list;
}

export const MAX_EDGE_NAME = 100;

/** COFFER_EDGE_NAME: printable, at most 100 characters (the origin refuses other names in reports); default the host name. */
export function edgeName(raw: string | undefined, host: string = hostname()): string {
  const name = (raw ?? '').trim();
  if (name === '') return [...host].filter((c) => isSafeLabel(c, 2)).join('').slice(0, MAX_EDGE_NAME) || 'edge';
  if (!isSafeLabel(name, MAX_EDGE_NAME)) {
    throw new ConfigError(`COFFER_EDGE_NAME must be 1–${MAX_EDGE_NAME} printable characters (no control or text-direction characters), such as eu-west-1a.`);
  }
  return name;
}

/** Merges the environment with flags (`values` keyed by variable name) into a config. */
export function loadConfig(env: NodeJS.ProcessEnv, flags: Partial<Record<SettingName, string>> = {}): Config {
  const get = (name: SettingName): string | undefined => flags[name] ?? env[name] ?? undefined;
  const host = get('COFFER_HOST') || '127.0.0.1';
  const port = integer('COFFER_PORT', get('COFFER_PORT'), 8080);
  const edgePort = integer('COFFER_EDGE_PORT', get('COFFER_EDGE_PORT'), 8081);
  const s3Port = integer('COFFER_S3_PORT', get('COFFER_S3_PORT'), 8082);
  if (port > 65535 || edgePort > 65535 || s3Port > 65535) throw new ConfigError('Ports must be from 0 to 65535.');
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const secrets = (get('COFFER_SIGNING_SECRET') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return {
    host,
    port,
    edgePort,
    s3Port,
    baseUrl: url('COFFER_BASE_URL', get('COFFER_BASE_URL') || `http://${urlHost}:${port}`),
    cdnUrl: url('COFFER_CDN_URL', get('COFFER_CDN_URL') || `http://${urlHost}:${edgePort}`),
    dataDir: get('COFFER_DATA_DIR') || './data',
    accessKey: get('COFFER_ACCESS_KEY') || undefined,
    signingSecrets: secrets,
    databaseUrl: get('COFFER_DATABASE_URL') || undefined,
    blobStore: get('COFFER_BLOB_STORE') || undefined,
    edgeTokens: (get('COFFER_EDGE_TOKEN') ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    originCa: get('COFFER_ORIGIN_CA') || undefined,
    headersTimeoutMs: integer('COFFER_HEADERS_TIMEOUT_MS', get('COFFER_HEADERS_TIMEOUT_MS'), 30_000, 1),
    idleTimeoutMs: integer('COFFER_IDLE_TIMEOUT_MS', get('COFFER_IDLE_TIMEOUT_MS'), 30_000, 1),
    maxConnections: optionalInteger('COFFER_MAX_CONNECTIONS', get('COFFER_MAX_CONNECTIONS'), 1),
    maxConnectionsPerAddress: integer('COFFER_MAX_CONNECTIONS_PER_ADDRESS', get('COFFER_MAX_CONNECTIONS_PER_ADDRESS'), DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, 1),
    edgeCacheBytes: optionalInteger('COFFER_EDGE_CACHE_BYTES', get('COFFER_EDGE_CACHE_BYTES')),
    edgeParents: edgeParents(get('COFFER_EDGE_PARENTS')),
    edgeName: edgeName(get('COFFER_EDGE_NAME')),
    edgeLeaseMs: integer('COFFER_EDGE_LEASE_MS', get('COFFER_EDGE_LEASE_MS'), 5000, MIN_EDGE_LEASE_MS),
    publicMaxAge: optionalInteger('COFFER_PUBLIC_MAX_AGE', get('COFFER_PUBLIC_MAX_AGE')),
    uploadTtl: integer('COFFER_UPLOAD_TTL', get('COFFER_UPLOAD_TTL'), 86_400, 1),
    sessionTtl: integer('COFFER_SESSION_TTL', get('COFFER_SESSION_TTL'), 43_200, 1),
    maxFileSize: integer('COFFER_MAX_FILE_SIZE', get('COFFER_MAX_FILE_SIZE'), DEFAULT_MAX_FILE_SIZE),
    rateLimit: integer('COFFER_RATE_LIMIT', get('COFFER_RATE_LIMIT'), 1000, 1),
    logLevel: get('COFFER_LOG_LEVEL') || 'info',
    webhookAllowPrivate: ['1', 'true', 'yes'].includes((get('COFFER_WEBHOOK_ALLOW_PRIVATE') ?? '').toLowerCase()),
    metricsToken: get('COFFER_METRICS_TOKEN') || undefined,
    edgeAccessLog: get('COFFER_EDGE_ACCESS_LOG') || undefined,
    variantConcurrency: integer('COFFER_VARIANT_CONCURRENCY', get('COFFER_VARIANT_CONCURRENCY'), DEFAULT_VARIANT_CONCURRENCY, 1),
    variantMaxPixels: integer('COFFER_VARIANT_MAX_PIXELS', get('COFFER_VARIANT_MAX_PIXELS'), DEFAULT_VARIANT_MAX_PIXELS, 1),
    variantPerClient: integer('COFFER_VARIANT_PER_CLIENT', get('COFFER_VARIANT_PER_CLIENT'), DEFAULT_VARIANT_PER_CLIENT, 1),
    variantQueueMs: integer('COFFER_VARIANT_QUEUE_MS', get('COFFER_VARIANT_QUEUE_MS'), DEFAULT_VARIANT_QUEUE_MS, 1),
    variantPerSource: integer('COFFER_VARIANT_PER_SOURCE', get('COFFER_VARIANT_PER_SOURCE'), DEFAULT_VARIANT_PER_SOURCE),
    variantSizes: integerList('COFFER_VARIANT_SIZES', get('COFFER_VARIANT_SIZES'), 1, MAX_VARIANT_SIDE),
    variantQualities: integerList('COFFER_VARIANT_QUALITIES', get('COFFER_VARIANT_QUALITIES'), 1, 100),
    webhookRetryBaseMs: integer('COFFER_WEBHOOK_RETRY_BASE_MS', get('COFFER_WEBHOOK_RETRY_BASE_MS'), 1000, 1),
  };
}
