/** Create a folder (name and visibility) inside the current one. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { FolderRecord } from '../../../../src/sdk/index.js';
import { client } from '../../api.js';
import { errorMessage } from '../format.js';
import { FolderPlusIcon } from '../icons.js';
import { Modal } from './Modal.js';
import { VisibilityChoice, type Visibility } from './VisibilityChoice.js';

export function NewFolderDialog(props: { parent: FolderRecord | null; onClose: () => void; onCreated: (f: FolderRecord) => void }): JSX.Element {
  const [name, setName] = useState('');
  const [visibility, setVisibility] = useState<Visibility>('Public');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const where = props.parent ? props.parent.name : 'All files';
  const parentPrivate = props.parent?.effective_visibility === 'Private';

  const submit = async () => {
    if (busy) return;
    if (!name.trim()) {
      setError('Enter a name for the folder.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const folder = await client.createFolder({ name: name.trim(), visibility, parent_id: props.parent?.folder_id ?? null });
      props.onCreated(folder);
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <Modal
      title="New folder" description={<>Inside <strong>{where}</strong></>} icon={<FolderPlusIcon />}
      onClose={props.onClose} onSubmit={submit} size="small" testId="new-folder-dialog"
      footer={<>
        <button type="button" class="btn" onClick={props.onClose}>Cancel</button>
        <button type="submit" class="btn btn-primary" disabled={busy}>{busy ? 'Creating…' : 'Create folder'}</button>
      </>}
    >
      <label class="field">
        <span class="field-label">Name</span>
        <input class="input" type="text" name="folder-name" value={name} maxLength={255} autoComplete="off" spellcheck={false}
          aria-invalid={error ? true : undefined} aria-describedby={error ? 'new-folder-error' : undefined}
          onInput={(e) => { setName(e.currentTarget.value); setError(null); }} placeholder="e.g. Photos 2026" />
      </label>
      <VisibilityChoice name="new-folder-visibility" legend="Who can download its files" value={visibility} onChange={setVisibility} />
      {parentPrivate && visibility === 'Public' && (
        <p class="note">It is inside a Private folder, so its files stay Private until that folder is made Public.</p>
      )}
      {error && <p class="form-error" id="new-folder-error" role="alert">{error}</p>}
    </Modal>
  );
}
