/**
 * Shows a new key's secret, this once. The secret lives only in this dialog's props and the
 * field that shows it: never in web storage, IndexedDB or the address. When the dialog
 * closes its owner drops the answer, so nothing in the page refers to the secret any more.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { CreateKeyResponse } from '../../../src/sdk/index.js';
import { copyText } from '../app/clipboard.js';
import { Modal } from '../app/dialogs/Modal.js';
import { errorMessage, formatExact } from '../app/format.js';
import { AlertIcon, CheckIcon, CopyIcon, KeyIcon } from '../app/icons.js';
import { toastError, toastSuccess } from '../app/Toasts.js';

export function KeyCreatedDialog(props: { created: CreateKeyResponse; folderText: string; onClose: () => void }): JSX.Element {
  const k = props.created;
  const [copied, setCopied] = useState(false);
  // Closing before copying asks once more: after that the key is gone for good.
  const [confirming, setConfirming] = useState(false);

  const copy = async () => {
    try {
      await copyText(k.key);
      setCopied(true);
      setConfirming(false);
      toastSuccess('Key copied', { detail: 'Paste it where it is needed now: it will not be shown again.' });
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
      title="Copy your new key" icon={<KeyIcon />} size="medium" testId="key-created-dialog"
      description={<>The key <strong class="break">{k.name}</strong> was created.</>}
      onClose={close}
      footer={confirming ? <>
        <button type="button" class="btn" onClick={() => setConfirming(false)}>Back</button>
        <button type="button" class="btn btn-danger" onClick={props.onClose} data-testid="close-without-copy">Close without copying</button>
      </> : (
        <button type="button" class={'btn' + (copied ? ' btn-primary' : '')} onClick={close} data-testid="key-done">
          {copied ? 'Done' : 'Close'}
        </button>
      )}
    >
      <p class="warning key-once" role="note">
        <AlertIcon size={18} />
        <span>This is the only time the key is shown. Copy it now and keep it somewhere safe: Coffer stores only a hash of it and cannot show it again.</span>
      </p>
      <label class="field">
        <span class="field-label">Key</span>
        <div class="input-group">
          <input class="input mono" type="text" readOnly value={k.key} data-testid="new-key" data-select="none" autoComplete="off" spellcheck={false}
            onFocus={(e) => e.currentTarget.select()} />
          <button type="button" class="btn btn-primary" onClick={copy} data-testid="copy-key" data-autofocus>
            {copied ? <CheckIcon /> : <CopyIcon />}<span>{copied ? 'Copied' : 'Copy'}</span>
          </button>
        </div>
      </label>
      <dl class="facts key-facts">
        <div class="fact"><dt>Key ID</dt><dd><code class="mono break small">{k.key_id}</code></dd></div>
        <div class="fact"><dt>Scopes</dt><dd>{k.scopes.join(', ')}</dd></div>
        <div class="fact"><dt>Folder</dt><dd class="break">{props.folderText}</dd></div>
        <div class="fact"><dt>Expires</dt><dd>{k.expires_at ? formatExact(k.expires_at) : 'Never (until revoked)'}</dd></div>
      </dl>
      <p class="muted small">
        Send it as <code class="mono">Authorization: Bearer …</code>. S3 clients use the key ID as the access key ID and the key as the secret.
      </p>
      {confirming && (
        <p class="form-error" role="alert">You have not copied the key. Once this dialog closes, nobody can see it again: you would need a new key.</p>
      )}
    </Modal>
  );
}
