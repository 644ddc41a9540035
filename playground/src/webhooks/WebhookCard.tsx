/**
 * One webhook: where it sends, which events, "Send test" and delete, and its latest
 * deliveries with their outcome and the receiver's answer, each one sendable again.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { DeliveryRecord, WebhookRecord } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { errorMessage, formatExact } from '../app/format.js';
import { RefreshIcon, SendIcon, TrashIcon } from '../app/icons.js';
import { RelTime } from '../app/parts.js';
import { toastError, toastSuccess } from '../app/Toasts.js';
import { RECENT, useDeliveries } from './useWebhooks.js';

const EXCERPT = 120;

function statusWords(d: DeliveryRecord): { cls: string; text: string } {
  if (d.status === 'delivered') return { cls: 'delivered', text: 'Delivered' };
  if (d.status === 'failed') return { cls: 'failed', text: 'Failed' };
  return d.attempts === 0 ? { cls: 'pending', text: 'Sending…' } : { cls: 'retrying', text: 'Retrying' };
}

function Response(props: { d: DeliveryRecord }): JSX.Element {
  const d = props.d;
  if (d.last_status === null && d.last_error === null) return <span class="muted">No answer yet</span>;
  const body = (d.last_response ?? '').trim();
  return (
    <span class="hook-response">
      {d.last_status !== null && <code class={'http-status' + (d.last_status < 300 ? ' ok' : ' bad')} data-testid="delivery-http-status">{d.last_status}</code>}
      {body && <span class="hook-excerpt mono" title={body}>{body.length > EXCERPT ? `${body.slice(0, EXCERPT)}…` : body}</span>}
      {!body && d.last_error && <span class="hook-excerpt" title={d.last_error}>{d.last_error}</span>}
    </span>
  );
}

function Deliveries(props: { hook: WebhookRecord; now: number; state: ReturnType<typeof useDeliveries> }): JSX.Element {
  const { state, refresh, put } = props.state;
  const [busy, setBusy] = useState<string | null>(null);

  const again = async (d: DeliveryRecord) => {
    setBusy(d.delivery_id);
    try {
      put(await client.redeliver(d.delivery_id));
      toastSuccess(`Sending “${d.event_type}” again`);
    } catch (err) {
      toastError(errorMessage(err));
    } finally {
      setBusy(null);
    }
  };

  if (state.status === 'loading') return <p class="muted hook-note">Loading deliveries…</p>;
  if (state.status === 'error') {
    return (
      <p class="form-error hook-note" role="alert">
        Could not load the deliveries: {errorMessage(state.error)} <button type="button" class="btn btn-link" onClick={refresh}>Try again</button>
      </p>
    );
  }
  if (state.deliveries.length === 0) {
    return <p class="muted hook-note" data-testid="no-deliveries">Nothing sent yet. Events from now on appear here; “Send test” sends one at once.</p>;
  }
  return (
    <div class="hook-scroll">
      <table class="hook-table" data-testid="deliveries">
        <caption class="sr-only">The latest {RECENT} deliveries to {props.hook.url}, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Response</th>
            <th scope="col" class="col-time">Time</th>
            <th scope="col"><span class="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {state.deliveries.map((d) => {
            const s = statusWords(d);
            return (
              <tr key={d.delivery_id} data-testid="delivery-row" data-delivery-id={d.delivery_id} data-status={d.status} data-event={d.event_type}>
                <th scope="row" class="hook-event"><code class="mono">{d.event_type}</code></th>
                <td>
                  <span class={'hook-status ' + s.cls} data-testid="delivery-status"><span class="dot" aria-hidden="true" />{s.text}</span>
                  {d.status === 'pending' && d.attempts > 0 && d.next_attempt_at && <span class="key-when">next <RelTime iso={d.next_attempt_at} now={props.now} /></span>}
                </td>
                <td data-testid="delivery-attempts">{d.attempts}</td>
                <td class="hook-response-cell"><Response d={d} /></td>
                <td class="key-time col-time" title={d.delivered_at ? `Delivered ${formatExact(d.delivered_at)}` : undefined}><RelTime iso={d.created_at} now={props.now} /></td>
                <td class="key-actions">
                  <button type="button" class="btn btn-small" disabled={busy === d.delivery_id} onClick={() => again(d)}
                    aria-label={`Redeliver ${d.event_type} of ${formatExact(d.created_at)}`} data-testid="redeliver">
                    Redeliver
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

export function WebhookCard(props: { hook: WebhookRecord; now: number; onDelete: (w: WebhookRecord) => void }): JSX.Element {
  const w = props.hook;
  const deliveries = useDeliveries(w.webhook_id);
  const [testing, setTesting] = useState(false);
  const titleId = `hook-${w.webhook_id}`;

  const test = async () => {
    setTesting(true);
    try {
      deliveries.put(await client.testWebhook(w.webhook_id));
      toastSuccess('Test delivery sent', { detail: 'Its outcome appears under Recent deliveries.' });
    } catch (err) {
      toastError(errorMessage(err));
    } finally {
      setTesting(false);
    }
  };

  return (
    <article class="hook-card" aria-labelledby={titleId} data-testid="webhook-card" data-url={w.url} data-webhook-id={w.webhook_id}>
      <header class="hook-head">
        <div class="hook-title">
          <h2 id={titleId} class="hook-url break">{w.url}</h2>
          <div class="hook-meta">
            <span>Created <RelTime iso={w.created_at} now={props.now} /></span>
            <ul class="scopes hook-events" aria-label={`Events: ${w.events.includes('*') ? 'all' : w.events.join(', ')}`}>
              {w.events.map((e) => <li key={e} class="scope">{e === '*' ? 'all events' : e}</li>)}
            </ul>
          </div>
        </div>
        <div class="hook-actions">
          <button type="button" class="btn btn-small" onClick={test} disabled={testing} data-testid="send-test">
            <SendIcon size={16} /><span>{testing ? 'Sending…' : 'Send test'}</span>
          </button>
          <button type="button" class="btn btn-small btn-danger-ghost" onClick={() => props.onDelete(w)} aria-label={`Delete webhook ${w.url}`} data-testid="delete-webhook">
            <TrashIcon size={16} /><span class="hide-narrow">Delete</span>
          </button>
        </div>
      </header>
      <section class="hook-deliveries" aria-label={`Recent deliveries to ${w.url}`}>
        <div class="hook-subhead">
          <h3 class="hook-h3">Recent deliveries</h3>
          <button type="button" class="icon-btn" onClick={deliveries.refresh} aria-label={`Refresh the deliveries to ${w.url}`} title="Refresh">
            <RefreshIcon size={16} />
          </button>
        </div>
        <Deliveries hook={w} now={props.now} state={deliveries} />
      </section>
    </article>
  );
}
