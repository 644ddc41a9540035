/**
 * Confirms a delete, naming what goes. For a folder it first looks inside and says what
 * the folder holds; a non-empty folder is deleted with everything in it only after this.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { FileRecord, FolderRecord } from '../../../../src/sdk/index.js';
import { CofferError } from '../../../../src/sdk/index.js';
import { client } from '../../api.js';
import { errorMessage, formatSize, plural } from '../format.js';
import { TrashIcon } from '../icons.js';
import { Modal } from './Modal.js';

export type Deletable = { kind: 'file'; file: FileRecord } | { kind: 'folder'; folder: FolderRecord };

const COUNT_LIMIT = 1000;

interface Contents { folders: number; files: number; more: boolean }

/** "3 folders and 12 files"; "1000+ items" past one page. */
export function describeContents(c: Contents): string {
  if (c.more) return `${COUNT_LIMIT}+ items`;
  const parts: string[] = [];
  if (c.folders) parts.push(plural(c.folders, 'folder'));
  if (c.files || !c.folders) parts.push(plural(c.files, 'file'));
  return parts.join(' and ');
}

export function DeleteDialog(props: { target: Deletable; onClose: () => void; onDeleted: (id: string) => void }): JSX.Element {
  const t = props.target;
  const name = t.kind === 'file' ? t.file.name : t.folder.name;
  const [contents, setContents] = useState<Contents | null>(null);
  const [countError, setCountError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // A folder found not empty at delete time (an unfinished upload is not listed).
  const [forceRecursive, setForceRecursive] = useState(false);

  useEffect(() => {
    if (t.kind !== 'folder') return;
    const ac = new AbortController();
    client.list({ folder_id: t.folder.folder_id, limit: COUNT_LIMIT }, { signal: ac.signal }).then(
      (page) => setContents({ folders: page.folders.length, files: page.files.length, more: page.next_cursor !== null }),
      (err: unknown) => { if (!ac.signal.aborted) setCountError(errorMessage(err)); },
    );
    return () => ac.abort();
  }, []);

  const empty = contents !== null && !contents.more && contents.folders === 0 && contents.files === 0 && !forceRecursive;
  const counting = t.kind === 'folder' && contents === null && countError === null;

  const confirm = async () => {
    if (busy || counting) return;
    setBusy(true);
    setError(null);
    try {
      if (t.kind === 'file') {
        await client.deleteFile(t.file.file_id);
        props.onDeleted(t.file.file_id);
      } else {
        await client.deleteFolder({ folder_id: t.folder.folder_id, recursive: !empty });
        props.onDeleted(t.folder.folder_id);
      }
    } catch (err) {
      if (err instanceof CofferError && err.code === 'folder_not_empty') {
        setForceRecursive(true);
        setError(`${err.message} Confirm again to delete it with everything inside.`);
      } else setError(errorMessage(err));
      setBusy(false);
    }
  };

  let what: JSX.Element;
  if (t.kind === 'file') {
    what = <p>The file <strong class="break">{name}</strong> ({formatSize(t.file.size)}) is removed from storage and from every edge. Its delivery URL and signed links stop working.</p>;
  } else if (counting) {
    what = <p class="muted" aria-live="polite"><span class="spinner" aria-hidden="true" /> Checking what is inside…</p>;
  } else if (countError) {
    what = <p>The folder <strong class="break">{name}</strong> and everything inside it are deleted. (Could not check what is inside: {countError})</p>;
  } else if (empty) {
    what = <p>The folder <strong class="break">{name}</strong> is empty.</p>;
  } else {
    what = (
      <>
        <p>The folder <strong class="break">{name}</strong> and everything inside it are deleted, with every sub-folder and file below it.</p>
        {contents && (
          <p class="warning" data-testid="delete-contents">
            It contains {describeContents(contents)}.
          </p>
        )}
      </>
    );
  }

  const nonEmptyFolder = t.kind === 'folder' && !empty;
  return (
    <Modal
      title={t.kind === 'file' ? 'Delete file?' : 'Delete folder?'} icon={<TrashIcon />} tone="danger"
      onClose={props.onClose} onSubmit={confirm} size="small" testId="delete-dialog"
      footer={<>
        <button type="button" class="btn" onClick={props.onClose} data-autofocus>Cancel</button>
        <button type="submit" class="btn btn-danger" disabled={busy || counting}>
          {busy ? 'Deleting…' : nonEmptyFolder ? 'Delete folder and contents' : 'Delete'}
        </button>
      </>}
    >
      {what}
      <p class="muted small">This cannot be undone.</p>
      {error && <p class="form-error" role="alert">{error}</p>}
    </Modal>
  );
}
