/**
 * `coffer edges`: every edge the origin knows (POST /collections/edges, docs/api.md "Edges"),
 * as a table for people or as the origin's JSON. Edges that stopped answering are marked so
 * they stand out in the table.
 */
import { CofferError } from '../sdk/index.js';
import { CliError, clientFor, type ClientFlags, type Io } from './common.js';
import { formatBytes, safeText, shorten, table } from './format.js';

/** One edge as the origin lists it (src/core/api-edges.ts). */
export interface EdgeRow {
  id: string;
  name: string;
  parents: string[];
  state: 'live' | 'catching_up' | 'lapsed' | 'unreachable';
  answering: boolean;
  last_seen_at: string;
  lease_expires_at: string | null;
  applied_seq: number;
  feed_lag_events: number;
  cache_used_bytes: number | null;
  cache_capacity_bytes: number | null;
  hit_ratio: number | null;
  requests: number | null;
  bytes_sent: number | null;
  started_at: string | null;
}

export interface EdgesAnswer {
  head_seq: number;
  checked_at: string;
  edges: EdgeRow[];
}

export interface EdgesFlags extends ClientFlags {
  json?: boolean;
}

/** "3 s ago", "4 min ago", "2 h ago": how long before `now` the edge was last heard. */
export function agoText(iso: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(s)) return '?';
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

const STATE_TEXT: Record<EdgeRow['state'], string> = {
  live: 'live',
  catching_up: 'catching up',
  lapsed: '!! NOT ANSWERING (lease lapsed)',
  unreachable: '!! NOT ANSWERING (no reports)',
};

const count = (n: number | null): string => (n === null ? '-' : n.toLocaleString('en-US'));

function cacheText(e: EdgeRow): string {
  if (e.cache_used_bytes === null || e.cache_capacity_bytes === null) return '-';
  return `${formatBytes(e.cache_used_bytes)} / ${formatBytes(e.cache_capacity_bytes)}`;
}

/** The table people read: one line per edge, names made safe for a terminal. */
export function edgesTable(answer: EdgesAnswer): string {
  const now = Date.parse(answer.checked_at);
  const rows = [['NAME', 'PARENT', 'STATE', 'LAST SEEN', 'LAG', 'CACHE', 'HIT', 'REQUESTS', 'SENT']];
  for (const e of answer.edges) {
    rows.push([
      shorten(safeText(e.name), 32),
      e.parents.length === 0 ? 'origin' : shorten(safeText(e.parents[0]!), 40) + (e.parents.length > 1 ? ` (+${e.parents.length - 1})` : ''),
      STATE_TEXT[e.state],
      agoText(e.last_seen_at, now),
      `${e.feed_lag_events} ev`,
      cacheText(e),
      e.hit_ratio === null ? '-' : `${(e.hit_ratio * 100).toFixed(1)}%`,
      count(e.requests),
      e.bytes_sent === null ? '-' : formatBytes(e.bytes_sent),
    ]);
  }
  return table(rows);
}

/**
 * The origin's answer as JSON, with C1 controls and bidi overrides written as \u escapes: the
 * same JSON value, but an edge's name or parent cannot drive the terminal that shows it.
 */
export function edgesJson(answer: EdgesAnswer): string {
  return JSON.stringify(answer, null, 2).replace(/[\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export async function listEdges(flags: EdgesFlags, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  let answer: EdgesAnswer;
  try {
    answer = await client.call<EdgesAnswer>('/collections/edges', {}, { idempotent: true });
  } catch (err) {
    if (err instanceof CofferError && err.code === 'forbidden') {
      throw new CliError('Only the root key lists the edges: set COFFER_ACCESS_KEY (or --key) to the key the origin printed when it first started (credentials.json in its data directory).');
    }
    if (err instanceof CofferError && err.code === 'not_found') {
      throw new CliError('This origin does not list edges: it is older than `coffer edges`; upgrade it, or read its /metrics for feed lag per edge.');
    }
    throw err;
  }
  if (flags.json) {
    io.stdout.write(edgesJson(answer) + '\n');
    return;
  }
  if (answer.edges.length === 0) {
    io.stdout.write('No edge has been heard from in the last hour.\n');
    io.stderr.write('Start one with `coffer edge --origin URL --name NAME` (COFFER_EDGE_TOKEN from the origin\'s credentials.json); it appears here once it reports, within 10 s.\n');
    return;
  }
  io.stdout.write(edgesTable(answer) + '\n');
  const down = answer.edges.filter((e) => !e.answering).length;
  io.stderr.write(`${answer.edges.length} edge${answer.edges.length === 1 ? '' : 's'}, ${down} not answering; feed head ${answer.head_seq}.\n`);
}
