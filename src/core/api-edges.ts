/** The shapes of the edges list (docs/api.md "Edges"): every edge the origins know, as one operator reads it. */
import type { Static, TSchema } from 'typebox';
import { Type } from './schema.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Count = (description: string) => Nullable(Type.Integer({ minimum: 0, description }));

/** What an edge may be: `live` and `catching_up` answer; `lapsed` and `unreachable` do not. */
export const EDGE_STATES = ['live', 'catching_up', 'lapsed', 'unreachable'] as const;
export type EdgeState = (typeof EDGE_STATES)[number];

export const EdgesRequest = Nullable(Type.Object({}, { additionalProperties: false }));
export type EdgesRequest = Record<string, never> | null;

export const EdgeFills = Type.Object({
  parent: Type.Integer({ description: 'Files filled from a parent edge.' }),
  origin: Type.Integer({ description: 'Files filled from the origin.' }),
  failovers: Type.Integer({ description: 'Fills that fell back to the next parent or the origin.' }),
  served_to_children: Type.Integer({ description: 'Fills this edge answered for its children.' }),
});

export const EdgeEntry = Type.Object({
  id: Type.String({ description: 'The edge\'s feed id.' }),
  name: Type.String({ description: 'COFFER_EDGE_NAME, or the id when the edge has not reported one.' }),
  parents: Type.Array(Type.String(), { description: 'The parent edges it fills from, in order; empty: the origin.' }),
  state: Type.Union([Type.Literal('live'), Type.Literal('catching_up'), Type.Literal('lapsed'), Type.Literal('unreachable')], {
    description: 'live: holds its lease and reports; catching_up: heard, applying the feed before it holds a lease; lapsed: its lease ran out or a change was answered without it; unreachable: its reports stopped.',
  }),
  answering: Type.Boolean({ description: 'false when lapsed or unreachable.' }),
  last_seen_at: Type.String({ description: 'The last acknowledgement or report any origin heard from it.' }),
  lease_expires_at: Nullable(Type.String({ description: 'When its lease ends; null when it holds none.' })),
  applied_seq: Type.Integer({ description: 'The last event it applied.' }),
  feed_lag_events: Type.Integer({ description: 'head_seq − applied_seq.' }),
  cache_used_bytes: Count('Bytes in its cache; null until it reports.'),
  cache_capacity_bytes: Count('Its cache\'s capacity; null until it reports.'),
  hit_ratio: Nullable(Type.Number({ description: 'hits / (hits + misses) since it started; null before any byte answer.' })),
  requests: Count('Requests answered since it started.'),
  bytes_sent: Count('Bytes sent since it started.'),
  fills: Nullable(EdgeFills),
  started_at: Nullable(Type.String({ description: 'When the edge process started.' })),
});
export type EdgeEntry = Static<typeof EdgeEntry>;

export const EdgesResponse = Type.Object({
  head_seq: Type.Integer({ description: 'The event log\'s head as this origin knows it.' }),
  checked_at: Type.String({ description: 'This origin\'s time when it answered (for "seen 3 s ago").' }),
  edges: Type.Array(EdgeEntry),
});
export type EdgesResponse = Static<typeof EdgesResponse>;
