/** Rename a file or a folder. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { FileRecord, FolderRecord } from '../../../../src/sdk/index.js';
import { client } from '../../api.js';
import { errorMessage } from '../format.js';
import { PencilIcon } from '../icons.js';
import { Modal } from './Modal.js';

export type Renamable = { kind: 'file'; file: FileRecord } | { kind: 'folder'; folder: FolderRecord };

export function RenameDialog(props: {
  target: Renamable; onClose: () => void;
  onRenamed: (r: { kind: 'file'; file: FileRecord } | { kind: 'folder'; folder: FolderRecord }) => void;
}): JSX.Element {
  const t = props.target;
  const original = t.kind === 'file' ? t.file.name : t.folder.name;
  const [name, setName] = useState(original);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // For a file, the name is selected up to its extension.
  const dot = original.lastIndexOf('.');
  const selectEnd = t.kind === 'file' && dot > 0 ? dot : original.length;

  const submit = async () => {
    if (busy) return;
    const next = name.trim();
    if (!next) {
      setError('Enter a name.');
      return;
    }
    if (next === original) {
      props.onClose();
      return;
    }
    setBusy(true);
    setError(null);
    try {
      if (t.kind === 'file') props.onRenamed({ kind: 'file', file: await client.updateFile({ file_id: t.file.file_id, name: next }) });
      else props.onRenamed({ kind: 'folder', folder: await client.updateFolder({ folder_id: t.folder.folder_id, name: next }) });
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };

  return (
    <Modal
      title={t.kind === 'file' ? 'Rename file' : 'Rename folder'} icon={<PencilIcon />}
      onClose={props.onClose} onSubmit={submit} size="small" testId="rename-dialog"
      footer={<>
        <button type="button" class="btn" onClick={props.onClose}>Cancel</button>
        <button type="submit" class="btn btn-primary" disabled={busy}>{busy ? 'Renaming…' : 'Rename'}</button>
      </>}
    >
      <label class="field">
        <span class="field-label">New name</span>
        <input class="input" type="text" name="new-name" value={name} maxLength={255} autoComplete="off" spellcheck={false}
          data-select-end={String(selectEnd)}
          aria-invalid={error ? true : undefined} aria-describedby={error ? 'rename-error' : undefined}
          onInput={(e) => { setName(e.currentTarget.value); setError(null); }} />
      </label>
      {t.kind === 'file' && <p class="note">Links and delivery URLs keep working after a rename.</p>}
      {error && <p class="form-error" id="rename-error" role="alert">{error}</p>}
    </Modal>
  );
}
