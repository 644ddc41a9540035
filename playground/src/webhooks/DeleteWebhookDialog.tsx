/** Confirms deleting a webhook: no more deliveries are made or retried for it. */
import type { JSX } from 'preact';
import type { WebhookRecord } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { ConfirmDialog } from '../app/dialogs/ConfirmDialog.js';
import { TrashIcon } from '../app/icons.js';

export function DeleteWebhookDialog(props: { hook: WebhookRecord; onClose: () => void; onDeleted: () => void }): JSX.Element {
  return (
    <ConfirmDialog
      title="Delete this webhook?" icon={<TrashIcon />} testId="delete-webhook-dialog" action="Delete webhook" running="Deleting…"
      run={async () => {
        await client.deleteWebhook(props.hook.webhook_id);
        props.onDeleted();
      }}
      onClose={props.onClose}
    >
      <p><strong class="break">{props.hook.url}</strong> gets no more events from now on.</p>
      <p class="muted">Deliveries still waiting or being retried are dropped, and its delivery history goes with it.</p>
    </ConfirmDialog>
  );
}
