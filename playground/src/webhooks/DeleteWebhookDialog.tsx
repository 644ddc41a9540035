/** Confirms deleting a webhook: no more deliveries are made or retried for it. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { WebhookRecord } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { Modal } from '../app/dialogs/Modal.js';
import { errorMessage } from '../app/format.js';
import { TrashIcon } from '../app/icons.js';

export function DeleteWebhookDialog(props: { hook: WebhookRecord; onClose: () => void; onDeleted: () => void }): JSX.Element {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const confirm = async () => {
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      await client.deleteWebhook(props.hook.webhook_id);
      props.onDeleted();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <Modal
      title="Delete this webhook?" icon={<TrashIcon />} tone="danger" size="small" testId="delete-webhook-dialog"
      onClose={props.onClose} onSubmit={confirm}
      footer={<>
        <button type="button" class="btn" onClick={props.onClose} data-autofocus>Cancel</button>
        <button type="submit" class="btn btn-danger" disabled={busy}>{busy ? 'Deleting…' : 'Delete webhook'}</button>
      </>}
    >
      <p><strong class="break">{props.hook.url}</strong> gets no more events from now on.</p>
      <p class="muted">Deliveries still waiting or being retried are dropped, and its delivery history goes with it.</p>
      {error && <p class="form-error" role="alert">{error}</p>}
    </Modal>
  );
}
