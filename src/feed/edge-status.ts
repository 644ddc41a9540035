/**
 * What an edge says of itself with every usage report (POST /_edge/usage's `edge`): checked
 * strictly, since it is shown to operators and kept in the store. Counts are cumulative since
 * the edge started.
 */
import { isSafeLabel } from '../core/names.js';

export interface EdgeStatus {
  id: string;
  name: string;
  parents: string[];
  started_at: number;
  seq: number;
  cache: { used_bytes: number; capacity_bytes: number };
  requests: number;
  hits: number;
  misses: number;
  bytes_sent: number;
  fills: { parent: number; origin: number; failovers: number; served_to_children: number };
}

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_NAME = 100;
const MAX_PARENTS = 8;
const MAX_PARENT = 300;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
/** Printable text only: names end up in tables, terminals and pages. */
const isText = isSafeLabel;

function counts<K extends string>(v: unknown, keys: readonly K[]): Record<K, number> | string {
  if (!isObject(v)) return 'is not an object';
  const extra = Object.keys(v).find((k) => !(keys as readonly string[]).includes(k));
  if (extra !== undefined) return `has an unknown field "${extra.slice(0, 40)}"`;
  const out = {} as Record<K, number>;
  for (const k of keys) {
    if (!isCount(v[k])) return `needs "${k}" as a whole, non-negative number`;
    out[k] = v[k] as number;
  }
  return out;
}

const TOP = ['id', 'name', 'parents', 'started_at', 'seq', 'cache', 'requests', 'hits', 'misses', 'bytes_sent', 'fills'] as const;
const COUNTS = ['started_at', 'seq', 'requests', 'hits', 'misses', 'bytes_sent'] as const;

/** The status, or what is wrong with it (one sentence's end, for the 400). */
export function parseEdgeStatus(v: unknown): EdgeStatus | string {
  if (!isObject(v)) return '"edge" must be an object';
  const extra = Object.keys(v).find((k) => !(TOP as readonly string[]).includes(k));
  if (extra !== undefined) return `"edge" has an unknown field "${extra.slice(0, 40)}"`;
  if (typeof v.id !== 'string' || !ID.test(v.id)) return '"edge.id" must be the edge\'s feed id (1–64 of A–Z a–z 0–9 _ -)';
  if (!isText(v.name, MAX_NAME) || v.name.trim() === '') return `"edge.name" must be 1–${MAX_NAME} printable characters`;
  const parents = v.parents;
  if (!Array.isArray(parents) || parents.length > MAX_PARENTS || !parents.every((p) => isText(p, MAX_PARENT) && p !== '')) {
    return `"edge.parents" must be at most ${MAX_PARENTS} strings of 1–${MAX_PARENT} printable characters`;
  }
  for (const k of COUNTS) if (!isCount(v[k])) return `"edge.${k}" must be a whole, non-negative number`;
  const cache = counts(v.cache, ['used_bytes', 'capacity_bytes'] as const);
  if (typeof cache === 'string') return `"edge.cache" ${cache}`;
  const fills = counts(v.fills, ['parent', 'origin', 'failovers', 'served_to_children'] as const);
  if (typeof fills === 'string') return `"edge.fills" ${fills}`;
  return {
    id: v.id, name: v.name, parents: parents as string[], started_at: v.started_at as number, seq: v.seq as number, cache,
    requests: v.requests as number, hits: v.hits as number, misses: v.misses as number, bytes_sent: v.bytes_sent as number, fills,
  };
}
