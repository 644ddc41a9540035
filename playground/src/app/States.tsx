/** Empty folder, no search results, failures and loading: each says what to do. */
import type { JSX } from 'preact';
import { AlertIcon, CloudOffIcon, FolderIcon, FolderPlusIcon, SearchIcon, UploadIcon } from './icons.js';

export function EmptyFolder(props: { root: boolean; onUpload: () => void; onNewFolder: () => void }): JSX.Element {
  return (
    <div class="state" data-testid="empty-state">
      <div class="state-art"><FolderIcon size={44} /></div>
      <h2 class="state-title">{props.root ? 'No files yet' : 'This folder is empty'}</h2>
      <p class="state-text">Drag files here to upload them, or choose files with Upload. Create folders to keep things organized.</p>
      <div class="state-actions">
        <button type="button" class="btn btn-primary" onClick={props.onUpload}><UploadIcon /><span>Upload files</span></button>
        <button type="button" class="btn" onClick={props.onNewFolder}><FolderPlusIcon /><span>New folder</span></button>
      </div>
    </div>
  );
}

export function NoResults(props: { q: string; where: string; onClear: () => void }): JSX.Element {
  return (
    <div class="state" data-testid="no-results">
      <div class="state-art"><SearchIcon size={44} /></div>
      <h2 class="state-title">No results for “{props.q}”</h2>
      <p class="state-text">Nothing in <strong>{props.where}</strong> has a name containing “{props.q}”. Search looks at this folder only, not inside its sub-folders: try another word, or open another folder.</p>
      <div class="state-actions">
        <button type="button" class="btn" onClick={props.onClear}>Clear search</button>
      </div>
    </div>
  );
}

export function ErrorState(props: { message: string; notFound: boolean; onRetry: () => void; onRoot: () => void }): JSX.Element {
  return (
    <div class="state error" data-testid="error-state" role="alert">
      <div class="state-art">{props.notFound ? <AlertIcon size={44} /> : <CloudOffIcon size={44} />}</div>
      <h2 class="state-title">{props.notFound ? 'This folder does not exist' : 'Could not load this folder'}</h2>
      <p class="state-text">{props.message}</p>
      <p class="state-text muted">{props.notFound ? 'It may have been deleted, or the link is wrong.' : 'Check that the service is running, then try again.'}</p>
      <div class="state-actions">
        {!props.notFound && <button type="button" class="btn btn-primary" onClick={props.onRetry}>Try again</button>}
        <button type="button" class={props.notFound ? 'btn btn-primary' : 'btn'} onClick={props.onRoot}>Go to All files</button>
      </div>
    </div>
  );
}

export function Loading(props: { view: 'grid' | 'list' }): JSX.Element {
  return (
    <div class={`skeleton skeleton-${props.view}`} aria-busy="true" data-testid="loading">
      <span class="sr-only" role="status">Loading…</span>
      {Array.from({ length: props.view === 'grid' ? 8 : 9 }, (_, i) => <div key={i} class="skeleton-item" />)}
    </div>
  );
}
