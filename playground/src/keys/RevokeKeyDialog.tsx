/** Confirms revoking a key: from the answer on, every origin refuses it and the grants it made. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { KeyRecord, RevokeKeyResponse } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { Modal } from '../app/dialogs/Modal.js';
import { errorMessage } from '../app/format.js';
import { RelTime } from '../app/parts.js';
import { TrashIcon } from '../app/icons.js';

export function RevokeKeyDialog(props: {
  k: KeyRecord; folderText: string; now: number; onClose: () => void; onRevoked: (r: RevokeKeyResponse) => void;
}): JSX.Element {
  const k = props.k;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const confirm = async () => {
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      props.onRevoked(await client.revokeKey(k.key_id));
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <Modal
      title="Revoke this key?" icon={<TrashIcon />} tone="danger" size="small" testId="revoke-key-dialog"
      onClose={props.onClose} onSubmit={confirm}
      footer={<>
        <button type="button" class="btn" onClick={props.onClose} data-autofocus>Cancel</button>
        <button type="submit" class="btn btn-danger" disabled={busy}>{busy ? 'Revoking…' : 'Revoke key'}</button>
      </>}
    >
      <p>
        <strong class="break">{k.name}</strong> ({k.scopes.join(', ')} · {props.folderText}) stops working at once, on every origin.
        Upload grants made with it stop working too.
      </p>
      <p class="muted">
        {k.last_used_at ? <>It was last used <RelTime iso={k.last_used_at} now={props.now} />.</> : 'It has never been used.'}
        {' '}Programs that still send it get “401 unauthorized”.
      </p>
      <p class="muted small">This cannot be undone: make a new key if it is needed again.</p>
      {error && <p class="form-error" role="alert">{error}</p>}
    </Modal>
  );
}
