/**
 * Makes a webhook: the receiver's URL and the events it gets (every event, or some). The
 * answer, signing secret included, goes straight to the caller, which shows it once.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { CreateWebhookResponse } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { Modal } from '../app/dialogs/Modal.js';
import { errorMessage } from '../app/format.js';
import { WebhookIcon } from '../app/icons.js';
import { EVENT_TYPES } from './useWebhooks.js';

export const EVENT_TEXT: Record<string, string> = {
  'file.ready': 'A file finished uploading',
  'file.updated': 'A file was renamed, moved or its visibility changed',
  'file.deleted': 'A file was deleted',
  'folder.created': 'A folder was created',
  'folder.updated': 'A folder was renamed, moved or its visibility changed',
  'folder.deleted': 'A folder was deleted',
  'upload.expired': 'An unfinished upload expired',
};

type Field = 'url' | 'events';

function urlProblem(text: string): string | null {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return 'Enter the receiver’s full address, starting with https://';
  }
  return u.protocol === 'https:' || u.protocol === 'http:' ? null : 'The address must start with https:// or http://';
}

export function CreateWebhookDialog(props: { onClose: () => void; onCreated: (created: CreateWebhookResponse) => void }): JSX.Element {
  const [url, setUrl] = useState('');
  const [all, setAll] = useState(true);
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set(['file.ready']));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ field: Field | null; message: string } | null>(null);

  const toggle = (e: string) => {
    const next = new Set(chosen);
    if (next.has(e)) next.delete(e);
    else next.add(e);
    setChosen(next);
    if (error?.field === 'events') setError(null);
  };

  const submit = async () => {
    if (busy) return;
    const problem = urlProblem(url.trim());
    if (problem) return setError({ field: 'url', message: problem });
    if (!all && chosen.size === 0) return setError({ field: 'events', message: 'Choose at least one event, or every event.' });
    setBusy(true);
    setError(null);
    try {
      props.onCreated(await client.createWebhook({ url: url.trim(), events: all ? ['*'] : EVENT_TYPES.filter((e) => chosen.has(e)) }));
    } catch (err) {
      setError({ field: null, message: errorMessage(err) });
      setBusy(false);
    }
  };

  const invalid = (field: Field) => (error?.field === field ? { 'aria-invalid': true, 'aria-describedby': 'create-hook-error' } : {});
  return (
    <Modal
      title="Create webhook" icon={<WebhookIcon />} size="medium" testId="create-webhook-dialog"
      description="Coffer POSTs each event to your receiver, signed, and retries for a day until it answers 2xx."
      onClose={props.onClose} onSubmit={submit}
      footer={<>
        <button type="button" class="btn" onClick={props.onClose}>Cancel</button>
        <button type="submit" class="btn btn-primary" disabled={busy}>{busy ? 'Creating…' : 'Create webhook'}</button>
      </>}
    >
      <label class="field">
        <span class="field-label">Receiver URL</span>
        <input class="input" type="url" name="webhook-url" value={url} autoComplete="off" spellcheck={false} inputMode="url"
          placeholder="https://example.com/coffer-events" {...invalid('url')}
          onInput={(e) => { setUrl(e.currentTarget.value); if (error?.field === 'url') setError(null); }} />
        <span class="hint">Loopback and private addresses are refused unless the service allows them.</span>
      </label>

      <fieldset class="scope-choices" {...(error?.field === 'events' ? { 'aria-describedby': 'create-hook-error' } : {})}>
        <legend class="field-label">Events</legend>
        <label class={'scope-choice' + (all ? ' checked' : '')}>
          <input type="radio" name="hook-events" checked={all} onChange={() => setAll(true)} />
          <span class="scope-choice-text">
            <span class="scope-choice-title">Every event</span>
            <span class="scope-choice-desc">Including kinds added in later versions</span>
          </span>
        </label>
        <label class={'scope-choice' + (!all ? ' checked' : '')}>
          <input type="radio" name="hook-events" checked={!all} onChange={() => setAll(false)} data-testid="some-events" />
          <span class="scope-choice-text">
            <span class="scope-choice-title">Only these</span>
            <span class="scope-choice-desc">Choose below</span>
          </span>
        </label>
        {!all && (
          <div class="hook-event-grid">
            {EVENT_TYPES.map((e) => (
              <label key={e} class="hook-event-choice" title={EVENT_TEXT[e]}>
                <input type="checkbox" name="hook-event" value={e} checked={chosen.has(e)} onChange={() => toggle(e)} />
                <code class="mono">{e}</code>
              </label>
            ))}
          </div>
        )}
      </fieldset>

      {error && <p class="form-error" id="create-hook-error" role="alert">{error.message}</p>}
    </Modal>
  );
}
