/** Shows a new key, this once, with what it may do. */
import type { JSX } from 'preact';
import type { CreateKeyResponse } from '../../../src/sdk/index.js';
import { SecretOnceDialog } from '../app/dialogs/SecretOnceDialog.js';
import { formatExact } from '../app/format.js';
import { KeyIcon } from '../app/icons.js';

export function KeyCreatedDialog(props: { created: CreateKeyResponse; folderText: string; onClose: () => void }): JSX.Element {
  const k = props.created;
  return (
    <SecretOnceDialog
      title="Copy your new key" icon={<KeyIcon />} label="Key" secret={k.key} onClose={props.onClose}
      description={<>The key <strong class="break">{k.name}</strong> was created.</>}
      warning="This is the only time the key is shown. Copy it now and keep it somewhere safe: Coffer stores only a hash of it and cannot show it again."
      copiedDetail="Paste it where it is needed now: it will not be shown again."
      notCopied="You have not copied the key. Once this dialog closes, nobody can see it again: you would need a new key."
      ids={{ dialog: 'key-created-dialog', field: 'new-key', copy: 'copy-key', done: 'key-done' }}
    >
      <dl class="facts key-facts">
        <div class="fact"><dt>Key ID</dt><dd><code class="mono break small">{k.key_id}</code></dd></div>
        <div class="fact"><dt>Scopes</dt><dd>{k.scopes.join(', ')}</dd></div>
        <div class="fact"><dt>Folder</dt><dd class="break">{props.folderText}</dd></div>
        <div class="fact"><dt>Expires</dt><dd>{k.expires_at ? formatExact(k.expires_at) : 'Never (until revoked)'}</dd></div>
      </dl>
      <p class="muted small">
        Send it as <code class="mono">Authorization: Bearer …</code>. S3 clients use the key ID as the access key ID and the key as the secret.
      </p>
    </SecretOnceDialog>
  );
}
