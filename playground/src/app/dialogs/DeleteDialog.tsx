/**
 * Confirms a delete, naming what goes. For folders it first counts everything inside them,
 * at every level ("12 files and 3 folders"), and deletes them with their contents only after this.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { CofferError } from '../../../../src/sdk/index.js';
import { deleteItems, countWords, itemName, type Item } from '../bulk.js';
import { errorMessage, formatSize, middleEllipsis, plural } from '../format.js';
import { TrashIcon } from '../icons.js';
import { COUNT_LIMIT, countTree, type TreeCount } from '../tree.js';
import { Modal } from './Modal.js';

export type Deletable = Item;

/** "12 files and 3 folders (4.2 MiB)", counted at every level; "more than 10,000" past the bound. */
export function describeContents(c: TreeCount): string {
  if (c.more) return `more than ${COUNT_LIMIT.toLocaleString('en')} files and folders`;
  const parts = [plural(c.files, 'file')];
  if (c.folders) parts.push(plural(c.folders, 'folder'));
  return parts.join(' and ') + (c.files ? ` (${formatSize(c.bytes)})` : '');
}

const NAMED = 5;

export function DeleteDialog(props: { targets: Deletable[]; onClose: () => void; onDeleted: (ids: string[], failed: number) => void }): JSX.Element {
  // After a partial failure, confirming again retries only what is left.
  const [targets, setTargets] = useState(props.targets);
  const folders = targets.flatMap((t) => (t.kind === 'folder' ? [t.folder] : []));
  const [contents, setContents] = useState<TreeCount | null>(null);
  const [countError, setCountError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // A folder found not empty at delete time (an upload finished since the count).
  const [forceRecursive, setForceRecursive] = useState(false);

  useEffect(() => {
    if (folders.length === 0) return;
    const ac = new AbortController();
    countTree(folders, ac.signal).then(setContents, (err: unknown) => { if (!ac.signal.aborted) setCountError(errorMessage(err)); });
    return () => ac.abort();
  }, []);

  const counting = folders.length > 0 && contents === null && countError === null;
  const empty = contents !== null && !contents.more && contents.files === 0 && contents.folders === 0 && !forceRecursive;

  const confirm = async () => {
    if (busy || counting) return;
    setBusy(true);
    setError(null);
    const r = await deleteItems(targets, !empty);
    if (r.failed.length === 0) {
      props.onDeleted(r.done, 0);
      return;
    }
    const first = r.failed[0]!;
    if (first.error instanceof CofferError && first.error.code === 'folder_not_empty') {
      setForceRecursive(true);
      setError(`${first.error.message} Confirm again to delete it with everything inside.`);
    } else setError(`${plural(r.failed.length, 'item')} could not be deleted: “${middleEllipsis(itemName(first.item), 40)}”: ${errorMessage(first.error)}`);
    setBusy(false);
    setTargets(r.failed.map((f) => f.item));
    if (r.done.length) props.onDeleted(r.done, r.failed.length);
  };

  const single = targets.length === 1 ? targets[0]! : null;
  let what: JSX.Element;
  if (single?.kind === 'file') {
    what = <p>The file <strong class="break">{single.file.name}</strong> ({formatSize(single.file.size)}) is removed from storage and from every edge. Its delivery URL and signed links stop working.</p>;
  } else if (single?.kind === 'folder') {
    what = <p>The folder <strong class="break">{single.folder.name}</strong>{empty ? ' is empty.' : ' and everything inside it are deleted, with every sub-folder and file below it.'}</p>;
  } else {
    const names = targets.slice(0, NAMED).map(itemName);
    what = (
      <>
        <p>{countWords(targets)} are deleted from storage and from every edge:</p>
        <ul class="delete-names">
          {names.map((n, i) => <li key={i} class="break">{n}</li>)}
          {targets.length > NAMED && <li class="muted">and {plural(targets.length - NAMED, 'more item')}</li>}
        </ul>
      </>
    );
  }

  const inside = single ? 'It contains' : folders.length === 1 ? 'The folder contains' : 'The folders contain';
  return (
    <Modal
      title={single ? (single.kind === 'file' ? 'Delete file?' : 'Delete folder?') : `Delete ${plural(targets.length, 'item')}?`}
      icon={<TrashIcon />} tone="danger" onClose={props.onClose} onSubmit={confirm} size="small" testId="delete-dialog"
      footer={<>
        <button type="button" class="btn" onClick={props.onClose} data-autofocus>Cancel</button>
        <button type="submit" class="btn btn-danger" disabled={busy || counting}>
          {busy ? 'Deleting…' : single?.kind === 'folder' && !empty ? 'Delete folder and contents' : 'Delete'}
        </button>
      </>}
    >
      {what}
      {counting && <p class="muted" aria-live="polite"><span class="spinner" aria-hidden="true" /> Counting what is inside…</p>}
      {countError && <p class="warning">Could not count what is inside: {countError}. Everything inside is deleted too.</p>}
      {contents && !empty && (
        <p class="warning" data-testid="delete-contents">{inside} {describeContents(contents)} at every level, all deleted with {folders.length === 1 ? 'it' : 'them'}.</p>
      )}
      <p class="muted small">This cannot be undone.</p>
      {error && <p class="form-error" role="alert">{error}</p>}
    </Modal>
  );
}
