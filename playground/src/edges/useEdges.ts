/**
 * The edges the origin knows (POST /collections/edges), asked again every few seconds while
 * the page is open, so an edge that stops answering shows as such without a reload.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { EdgesResponse } from '../../../src/sdk/index.js';
import { client } from '../api.js';

export interface EdgesState {
  status: 'loading' | 'ready' | 'error';
  error: unknown;
  answer: EdgesResponse | null;
}

/** How often the list is asked again. */
export const REFRESH_MS = 3000;

export function useEdges() {
  const [state, setState] = useState<EdgesState>({ status: 'loading', error: null, answer: null });
  const [reads, setReads] = useState(0);
  const timer = useRef<ReturnType<typeof setTimeout>>();

  useEffect(() => {
    const ac = new AbortController();
    client.edges({ signal: ac.signal }).then(
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
