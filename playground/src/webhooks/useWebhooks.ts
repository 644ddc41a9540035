/**
 * The webhooks the page shows, newest first, and each one's recent deliveries, asked again
 * every few seconds while one of them is still on its way.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { DeliveryRecord, WebhookRecord } from '../../../src/sdk/index.js';
import { client } from '../api.js';

export const EVENT_TYPES = ['file.ready', 'file.updated', 'file.deleted', 'folder.created', 'folder.updated', 'folder.deleted', 'upload.expired'] as const;

export interface WebhooksState {
  status: 'loading' | 'ready' | 'error';
  error: unknown;
  hooks: WebhookRecord[];
}

const newestFirst = (a: WebhookRecord, b: WebhookRecord) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0);

/** Only what a list answer holds: a record passed in from a creation loses its secret here. */
const publicPart = (w: WebhookRecord): WebhookRecord => ({
  webhook_id: w.webhook_id, url: w.url, events: w.events, created_at: w.created_at, folder_id: w.folder_id, made_by: w.made_by,
});

export function useWebhooks() {
  const [state, setState] = useState<WebhooksState>({ status: 'loading', error: null, hooks: [] });
  const [reloads, setReloads] = useState(0);

  useEffect(() => {
    const ac = new AbortController();
    setState((s) => ({ ...s, status: s.status === 'ready' ? 'ready' : 'loading' }));
    client.listWebhooks({ signal: ac.signal }).then(
      ({ webhooks }) => setState({ status: 'ready', error: null, hooks: webhooks.map(publicPart).sort(newestFirst) }),
      (err: unknown) => { if (!ac.signal.aborted) setState((s) => ({ ...s, status: 'error', error: err })); },
    );
    return () => ac.abort();
  }, [reloads]);

  const reload = useCallback(() => setReloads((n) => n + 1), []);
  const added = useCallback((w: WebhookRecord) => {
    setState((s) => ({ ...s, status: 'ready', hooks: [publicPart(w), ...s.hooks.filter((x) => x.webhook_id !== w.webhook_id)].sort(newestFirst) }));
  }, []);
  const removed = useCallback((id: string) => {
    setState((s) => ({ ...s, hooks: s.hooks.filter((w) => w.webhook_id !== id) }));
  }, []);
  return { state, reload, added, removed };
}

export const RECENT = 10;
const POLL_MS = 1000;

export interface DeliveriesState {
  status: 'loading' | 'ready' | 'error';
  error: unknown;
  deliveries: DeliveryRecord[];
}

/** One webhook's latest deliveries; `put` shows a delivery the page has just asked for before the next read. */
export function useDeliveries(webhookId: string) {
  const [state, setState] = useState<DeliveriesState>({ status: 'loading', error: null, deliveries: [] });
  const [reads, setReads] = useState(0);
  const timer = useRef<ReturnType<typeof setTimeout>>();

  useEffect(() => {
    const ac = new AbortController();
    client.webhookDeliveries({ webhook_id: webhookId, limit: RECENT }, { signal: ac.signal }).then(
      ({ deliveries }) => setState({ status: 'ready', error: null, deliveries }),
      (err: unknown) => { if (!ac.signal.aborted) setState((s) => ({ ...s, status: 'error', error: err })); },
    );
    return () => ac.abort();
  }, [webhookId, reads]);

  const refresh = useCallback(() => setReads((n) => n + 1), []);
  const pending = state.deliveries.some((d) => d.status === 'pending');
  // Poll only while something is on its way: a settled list stays as it is.
  useEffect(() => {
    clearTimeout(timer.current);
    if (pending) timer.current = setTimeout(refresh, POLL_MS);
    return () => clearTimeout(timer.current);
  }, [pending, state.deliveries, refresh]);

  const put = useCallback((d: DeliveryRecord) => {
    setState((s) => ({
      ...s, status: 'ready',
      // A delivery sent again keeps its place; a new one (a test) comes first.
      deliveries: s.deliveries.some((x) => x.delivery_id === d.delivery_id)
        ? s.deliveries.map((x) => (x.delivery_id === d.delivery_id ? d : x))
        : [d, ...s.deliveries].slice(0, RECENT),
    }));
  }, []);
  return { state, refresh, put };
}
