/**
 * A confirmation of something that cannot be undone: Cancel holds the focus, the action
 * button shows it is running, and a failure is said in the dialog, which stays open.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { errorMessage } from '../format.js';
import { Modal } from './Modal.js';

export function ConfirmDialog(props: {
  title: string; icon: JSX.Element; testId: string;
  /** The action button's label, and its label while the action runs. */
  action: string; running: string;
  /** Does the thing; a throw is shown in the dialog, unless `onError` takes it (answers true). */
  run: () => Promise<void>;
  onError?: (err: unknown) => boolean;
  onClose: () => void;
  children: ComponentChildren;
}): JSX.Element {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const confirm = async () => {
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      await props.run();
    } catch (err) {
      if (!props.onError?.(err)) setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <Modal
      title={props.title} icon={props.icon} tone="danger" size="small" testId={props.testId}
      onClose={props.onClose} onSubmit={confirm}
      footer={<>
        <button type="button" class="btn" onClick={props.onClose} data-autofocus>Cancel</button>
        <button type="submit" class="btn btn-danger" disabled={busy}>{busy ? props.running : props.action}</button>
      </>}
    >
      {props.children}
      {error && <p class="form-error" role="alert">{error}</p>}
    </Modal>
  );
}
