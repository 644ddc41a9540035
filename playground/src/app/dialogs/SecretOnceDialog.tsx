/**
 * Shows a secret this once (a new key, a webhook's signing secret). The secret lives only in
 * this dialog's props and the field that shows it: never in web storage, IndexedDB or the
 * address; its owner drops the answer when the dialog closes. Closing before copying asks once
 * more, since after that the secret is gone for good.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { copyText } from '../clipboard.js';
import { errorMessage } from '../format.js';
import { AlertIcon, CheckIcon, CopyIcon } from '../icons.js';
import { toastError, toastSuccess } from '../Toasts.js';
import { Modal } from './Modal.js';

export function SecretOnceDialog(props: {
  title: string; icon: JSX.Element; description: ComponentChildren;
  /** What the secret is called in the field's label, the warning and the toasts. */
  label: string; secret: string; warning: string; copiedDetail: string; notCopied: string;
  /** Test ids: the dialog, the field, the copy button and the close button. */
  ids: { dialog: string; field: string; copy: string; done: string };
  onClose: () => void;
  children?: ComponentChildren;
}): JSX.Element {
  const [copied, setCopied] = useState(false);
  const [confirming, setConfirming] = useState(false);

  const copy = async () => {
    try {
      await copyText(props.secret);
      setCopied(true);
      setConfirming(false);
      toastSuccess(`${props.label} copied`, { detail: props.copiedDetail });
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
      title={props.title} icon={props.icon} size="medium" testId={props.ids.dialog}
      description={props.description}
      onClose={close}
      footer={confirming ? <>
        <button type="button" class="btn" onClick={() => setConfirming(false)}>Back</button>
        <button type="button" class="btn btn-danger" onClick={props.onClose} data-testid="close-without-copy">Close without copying</button>
      </> : (
        <button type="button" class={'btn' + (copied ? ' btn-primary' : '')} onClick={close} data-testid={props.ids.done}>
          {copied ? 'Done' : 'Close'}
        </button>
      )}
    >
      <p class="warning key-once" role="note">
        <AlertIcon size={18} />
        <span>{props.warning}</span>
      </p>
      <label class="field">
        <span class="field-label">{props.label}</span>
        <div class="input-group">
          <input class="input mono" type="text" readOnly value={props.secret} data-testid={props.ids.field} data-select="none" autoComplete="off" spellcheck={false}
            onFocus={(e) => e.currentTarget.select()} />
          <button type="button" class="btn btn-primary" onClick={copy} data-testid={props.ids.copy} data-autofocus>
            {copied ? <CheckIcon /> : <CopyIcon />}<span>{copied ? 'Copied' : 'Copy'}</span>
          </button>
        </div>
      </label>
      {props.children}
      {confirming && <p class="form-error" role="alert">{props.notCopied}</p>}
    </Modal>
  );
}
