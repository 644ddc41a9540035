/**
 * What can be done with several selected files and folders at once: move, visibility and
 * delete. It takes the place of the folder's summary while a selection is being made.
 */
import type { JSX } from 'preact';
import { countWords, type Item } from './bulk.js';
import { CloseIcon, GlobeIcon, LockIcon, MoveIcon, TrashIcon } from './icons.js';
import './selection.css';

export function SelectionBar(props: {
  items: Item[];
  busy: boolean;
  onMove: () => void;
  onVisibility: (v: 'Public' | 'Private') => void;
  onDelete: () => void;
  onClear: () => void;
}): JSX.Element {
  const n = props.items.length;
  return (
    <div class="selection-bar" role="toolbar" aria-label="Selected items" data-testid="selection-bar">
      <button type="button" class="icon-btn" aria-label="Clear the selection" title="Clear the selection (Esc)" onClick={props.onClear}>
        <CloseIcon size={16} />
      </button>
      <span class="selection-count" role="status">{n === 0 ? 'Nothing selected' : `${countWords(props.items)} selected`}</span>
      <div class="selection-actions">
        <button type="button" class="btn btn-small" disabled={n === 0 || props.busy} onClick={props.onMove}><MoveIcon size={15} /><span>Move…</span></button>
        <button type="button" class="btn btn-small" disabled={n === 0 || props.busy} onClick={() => props.onVisibility('Public')}><GlobeIcon size={15} /><span>Make Public</span></button>
        <button type="button" class="btn btn-small" disabled={n === 0 || props.busy} onClick={() => props.onVisibility('Private')}><LockIcon size={15} /><span>Make Private</span></button>
        <button type="button" class="btn btn-small btn-danger-soft" disabled={n === 0 || props.busy} onClick={props.onDelete}><TrashIcon size={15} /><span>Delete…</span></button>
      </div>
    </div>
  );
}
