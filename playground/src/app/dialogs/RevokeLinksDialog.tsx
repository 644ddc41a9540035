/**
 * Confirms revoking every signed link of a file made so far (contract §10). The service
 * answers once every edge refuses them, so the toast can say they are dead already.
 */
import type { JSX } from 'preact';
import type { FileRecord } from '../../../../src/sdk/index.js';
import { CofferError } from '../../../../src/sdk/index.js';
import { client } from '../../api.js';
import { middleEllipsis } from '../format.js';
import { LinkOffIcon } from '../icons.js';
import { forgetThumb } from '../thumbs.js';
import { toastSuccess } from '../Toasts.js';
import { ConfirmDialog } from './ConfirmDialog.js';

export function RevokeLinksDialog(props: {
  file: FileRecord; onClose: () => void; onSignedLink: (file: FileRecord) => void; onFailed: (err: unknown) => void;
}): JSX.Element {
  const f = props.file;
  const priv = f.effective_visibility === 'Private';

  const run = async () => {
    await client.revokeLinks(f.file_id);
    // The page's own thumbnail link was one of them.
    forgetThumb(f.file_id);
    props.onClose();
    toastSuccess(`Links to “${middleEllipsis(f.name, 40)}” revoked`, {
      detail: 'Every link shared before now answers “revoked” at every edge. Links you create from now on work.',
      ...(priv ? { action: { label: 'Create a new link', run: () => props.onSignedLink(f) } } : {}),
    });
  };
  // A lost session goes back to sign-in; anything else is said in the dialog.
  const onError = (err: unknown) => {
    if (!(err instanceof CofferError && (err.status === 401 || err.code === 'csrf_failed'))) return false;
    props.onFailed(err);
    return true;
  };

  return (
    <ConfirmDialog
      title="Revoke all links to this file?" icon={<LinkOffIcon />} testId="revoke-links-dialog" action="Revoke links" running="Revoking…"
      run={run} onError={onError} onClose={props.onClose}
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
    </ConfirmDialog>
  );
}
