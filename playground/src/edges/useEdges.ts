/**
 * The edges the origin knows (POST /collections/edges), asked again every few seconds while
 * the page is open, so an edge that stops answering shows as such without a reload.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { client } from '../api.js';

/** One edge as the origin lists it (docs/api.md "Edges"). */
export interface EdgeRecord {
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
  fills: { parent: number; origin: number; failovers: number; served_to_children: number } | null;
  started_at: string | null;
}

export interface EdgesAnswer {
  head_seq: number;
  checked_at: string;
  edges: EdgeRecord[];
}

export interface EdgesState {
  status: 'loading' | 'ready' | 'error';
  error: unknown;
  answer: EdgesAnswer | null;
}

/** How often the list is asked again. */
export const REFRESH_MS = 3000;

export function useEdges() {
  const [state, setState] = useState<EdgesState>({ status: 'loading', error: null, answer: null });
  const [reads, setReads] = useState(0);
  const timer = useRef<ReturnType<typeof setTimeout>>();

  useEffect(() => {
    const ac = new AbortController();
    client.call<EdgesAnswer>('/collections/edges', {}, { signal: ac.signal, idempotent: true }).then(
      (answer) => setState({ status: 'ready', error: null, answer }),
      // A failed refresh keeps the last list on screen, marked with the error.
      (err: unknown) => { if (!ac.signal.aborted) setState((s) => ({ ...s, status: 'error', error: err })); },
    ).finally(() => {
      if (!ac.signal.aborted) timer.current = setTimeout(() => setReads((n) => n + 1), REFRESH_MS);
    });
    return () => {
      ac.abort();
      clearTimeout(timer.current);
    };
  }, [reads]);

  const reload = useCallback(() => {
    clearTimeout(timer.current);
    setReads((n) => n + 1);
  }, []);
  return { state, reload };
}
