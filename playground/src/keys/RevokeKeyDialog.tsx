/** Confirms revoking a key: from the answer on, every origin refuses it and the grants it made. */
import type { JSX } from 'preact';
import type { KeyRecord, RevokeKeyResponse } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { ConfirmDialog } from '../app/dialogs/ConfirmDialog.js';
import { RelTime } from '../app/parts.js';
import { TrashIcon } from '../app/icons.js';

export function RevokeKeyDialog(props: {
  k: KeyRecord; folderText: string; now: number; onClose: () => void; onRevoked: (r: RevokeKeyResponse) => void;
}): JSX.Element {
  const k = props.k;
  return (
    <ConfirmDialog
      title="Revoke this key?" icon={<TrashIcon />} testId="revoke-key-dialog" action="Revoke key" running="Revoking…"
      run={async () => props.onRevoked(await client.revokeKey(k.key_id))} onClose={props.onClose}
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
    </ConfirmDialog>
  );
}
