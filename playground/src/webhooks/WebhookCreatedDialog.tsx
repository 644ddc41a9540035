/**
 * Shows a new webhook's signing secret, this once. Like a new key, the secret lives only in
 * this dialog's props and field; its owner drops the answer when the dialog closes.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { CreateWebhookResponse } from '../../../src/sdk/index.js';
import { copyText } from '../app/clipboard.js';
import { Modal } from '../app/dialogs/Modal.js';
import { errorMessage } from '../app/format.js';
import { AlertIcon, CheckIcon, CopyIcon, WebhookIcon } from '../app/icons.js';
import { toastError, toastSuccess } from '../app/Toasts.js';

export function WebhookCreatedDialog(props: { created: CreateWebhookResponse; onClose: () => void }): JSX.Element {
  const w = props.created;
  const [copied, setCopied] = useState(false);
  const [confirming, setConfirming] = useState(false);

  const copy = async () => {
    try {
      await copyText(w.secret);
      setCopied(true);
      setConfirming(false);
      toastSuccess('Signing secret copied', { detail: 'Give it to your receiver now: it will not be shown again.' });
    } catch (err) {
      toastError(errorMessage(err));
    }
  };
  const close = () => {
    if (copied || confirming) props.onClose();
    else setConfirming(true);
  };

  return (
    <Modal
      title="Copy the signing secret" icon={<WebhookIcon />} size="medium" testId="webhook-created-dialog"
      description={<>The webhook for <strong class="break">{w.url}</strong> was created.</>}
      onClose={close}
      footer={confirming ? <>
        <button type="button" class="btn" onClick={() => setConfirming(false)}>Back</button>
        <button type="button" class="btn btn-danger" onClick={props.onClose} data-testid="close-without-copy">Close without copying</button>
      </> : (
        <button type="button" class={'btn' + (copied ? ' btn-primary' : '')} onClick={close} data-testid="secret-done">{copied ? 'Done' : 'Close'}</button>
      )}
    >
      <p class="warning key-once" role="note">
        <AlertIcon size={18} />
        <span>This is the only time the secret is shown. Your receiver needs it to check that deliveries come from Coffer.</span>
      </p>
      <label class="field">
        <span class="field-label">Signing secret</span>
        <div class="input-group">
          <input class="input mono" type="text" readOnly value={w.secret} data-testid="new-secret" autoComplete="off" spellcheck={false}
            onFocus={(e) => e.currentTarget.select()} />
          <button type="button" class="btn btn-primary" onClick={copy} data-testid="copy-secret" data-autofocus>
            {copied ? <CheckIcon /> : <CopyIcon />}<span>{copied ? 'Copied' : 'Copy'}</span>
          </button>
        </div>
      </label>
      <p class="muted small">
        Check each delivery with <code class="mono">verifyWebhook(headers, body, secret)</code> from the SDK: it checks the
        {' '}<code class="mono">webhook-signature</code> header (Standard Webhooks) and the timestamp.
      </p>
      {confirming && (
        <p class="form-error" role="alert">You have not copied the secret. Once this dialog closes nobody can see it again: you would need a new webhook.</p>
      )}
    </Modal>
  );
}
