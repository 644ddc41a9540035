/**
 * Confirms revoking every signed link of a file made so far (contract §10). The service
 * answers once every edge refuses them, so the toast can say they are dead already.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { FileRecord } from '../../../../src/sdk/index.js';
import { CofferError } from '../../../../src/sdk/index.js';
import { client } from '../../api.js';
import { errorMessage, middleEllipsis } from '../format.js';
import { LinkOffIcon } from '../icons.js';
import { forgetThumb } from '../thumbs.js';
import { toastSuccess } from '../Toasts.js';
import { Modal } from './Modal.js';

export function RevokeLinksDialog(props: {
  file: FileRecord; onClose: () => void; onSignedLink: (file: FileRecord) => void; onFailed: (err: unknown) => void;
}): JSX.Element {
  const f = props.file;
  const priv = f.effective_visibility === 'Private';
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const confirm = async () => {
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      await client.revokeLinks(f.file_id);
      // The page's own thumbnail link was one of them.
      forgetThumb(f.file_id);
      props.onClose();
      toastSuccess(`Links to “${middleEllipsis(f.name, 40)}” revoked`, {
        detail: 'Every link shared before now answers “revoked” at every edge. Links you create from now on work.',
        ...(priv ? { action: { label: 'Create a new link', run: () => props.onSignedLink(f) } } : {}),
      });
    } catch (err) {
      // A lost session goes back to sign-in; anything else is said here.
      if (err instanceof CofferError && (err.status === 401 || err.code === 'csrf_failed')) props.onFailed(err);
      else setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <Modal
      title="Revoke all links to this file?" icon={<LinkOffIcon />} tone="danger"
      onClose={props.onClose} onSubmit={confirm} size="small" testId="revoke-links-dialog"
      footer={<>
        <button type="button" class="btn" onClick={props.onClose} data-autofocus>Cancel</button>
        <button type="submit" class="btn btn-danger" disabled={busy}>{busy ? 'Revoking…' : 'Revoke links'}</button>
      </>}
    >
      <p>
        Every signed link to <strong class="break">{f.name}</strong> shared so far stops working at every edge, at once.
        Whoever opens one is told it was revoked.
      </p>
      <p class="muted">Links you create after this work as usual. The file itself is not changed.</p>
      {!priv && (
        <p class="note" data-testid="revoke-public-note">
          This file is Public: its delivery URL needs no link and keeps working for anyone who has it. Make the file Private to stop that.
        </p>
      )}
      <p class="muted small">This cannot be undone.</p>
      {error && <p class="form-error" role="alert">{error}</p>}
    </Modal>
  );
}
