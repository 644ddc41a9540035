/**
 * The line under the toolbar: what the folder holds, or what a search found and where it
 * looked (this folder or all folders), or, while several items are being selected, what can
 * be done with them.
 */
import type { JSX } from 'preact';
import type { Item } from './bulk.js';
import { plural } from './format.js';
import { GlobeIcon, LockIcon } from './icons.js';
import { SelectionBar } from './SelectionBar.js';
import { navigate } from './state/url.js';
import type { GlobalHits } from './useGlobalSearch.js';
import type { Listing } from './useListing.js';

export interface SelectionProps {
  items: Item[]; busy: boolean; onClear: () => void; onMove: () => void;
  onVisibility: (v: 'Public' | 'Private') => void; onDelete: () => void;
}

export function SubBar(props: {
  listing: Listing; q: string; where: string; everywhere: boolean; hits: GlobalHits; onStop: () => void;
  found: number; pending: number; selection: SelectionProps | null;
}): JSX.Element {
  const { listing, q, where, everywhere, hits } = props;
  if (props.selection) return <div class="subbar"><SelectionBar {...props.selection} /></div>;
  const more = listing.cursor ? '+' : '';
  let text: JSX.Element;
  if (q) {
    const walking = everywhere && hits.status === 'searching';
    const summary = everywhere
      ? `${plural(props.found, 'result')}${hits.partial ? '+' : ''} for “${q}”`
      : `${plural(props.found, 'result')}${more} for “${q}”`;
    text = (
      <p class="subbar-text" role="status">
        <span>{listing.status === 'ready' || everywhere ? summary : ''} in <strong>{everywhere ? 'all folders' : where}</strong>
          {walking && <> · searching…</>}
          {everywhere && hits.status === 'done' && hits.partial && <> · stopped at the search’s limit</>}
          {everywhere && hits.status === 'stopped' && <> · stopped</>}
        </span>
        {walking && <button type="button" class="btn btn-link" onClick={props.onStop}>Stop</button>}
        <button type="button" class="btn btn-link" onClick={() => navigate({ q: '' }, 'replace')}>Clear search</button>
      </p>
    );
  } else {
    const summary = listing.status !== 'ready' ? ''
      : `${plural(listing.folders.length, 'folder')}${more}, ${plural(listing.files.length, 'file')}${more}${props.pending ? ` · ${plural(props.pending, 'upload')} in progress` : ''}`;
    text = <p class="subbar-text" role="status" data-testid="summary">{summary}</p>;
  }
  const folder = listing.folder;
  return (
    <div class="subbar">
      {text}
      {q && (
        <div class="segmented search-scope" role="group" aria-label="Search in">
          <button type="button" class={'seg' + (everywhere ? '' : ' checked')} aria-pressed={!everywhere} data-testid="scope-folder"
            onClick={() => navigate({ all: false }, 'replace')}>{listing.folder ? 'This folder' : 'Top level'}</button>
          <button type="button" class={'seg' + (everywhere ? ' checked' : '')} aria-pressed={everywhere} data-testid="scope-all"
            onClick={() => navigate({ all: true }, 'replace')}>All folders</button>
        </div>
      )}
      {!q && listing.status === 'ready' && folder && (
        <span class="subbar-badge" title={folder.effective_visibility === 'Private' ? 'Files in this folder need signed links' : 'Files here are Public unless Private themselves'}>
          {folder.effective_visibility === 'Private' ? <LockIcon size={13} /> : <GlobeIcon size={13} />}
          {folder.effective_visibility === 'Private' ? 'Private folder' : 'Public folder'}
        </span>
      )}
    </div>
  );
}
