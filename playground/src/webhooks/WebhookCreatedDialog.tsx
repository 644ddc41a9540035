/** Shows a new webhook's signing secret, this once, and how a receiver checks it. */
import type { JSX } from 'preact';
import type { CreateWebhookResponse } from '../../../src/sdk/index.js';
import { SecretOnceDialog } from '../app/dialogs/SecretOnceDialog.js';
import { WebhookIcon } from '../app/icons.js';

export function WebhookCreatedDialog(props: { created: CreateWebhookResponse; onClose: () => void }): JSX.Element {
  const w = props.created;
  return (
    <SecretOnceDialog
      title="Copy the signing secret" icon={<WebhookIcon />} label="Signing secret" secret={w.secret} onClose={props.onClose}
      description={<>The webhook for <strong class="break">{w.url}</strong> was created.</>}
      warning="This is the only time the secret is shown. Your receiver needs it to check that deliveries come from Coffer."
      copiedDetail="Give it to your receiver now: it will not be shown again."
      notCopied="You have not copied the secret. Once this dialog closes nobody can see it again: you would need a new webhook."
      ids={{ dialog: 'webhook-created-dialog', field: 'new-secret', copy: 'copy-secret', done: 'secret-done' }}
    >
      <p class="muted small">
        Check each delivery with <code class="mono">verifyWebhook(headers, body, secret)</code> from the SDK: it checks the
        {' '}<code class="mono">webhook-signature</code> header (Standard Webhooks) and the timestamp.
      </p>
    </SecretOnceDialog>
  );
}
