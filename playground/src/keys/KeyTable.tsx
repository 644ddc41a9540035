/** The keys as a table: what each may do, where, since and until when, when it was last used. */
import type { JSX } from 'preact';
import type { KeyRecord } from '../../../src/sdk/index.js';
import { FolderIcon, HomeIcon } from '../app/icons.js';
import { RelTime } from '../app/parts.js';
import { keyStatus, type FolderPlace } from './useKeys.js';

export const SCOPE_TEXT: Record<string, string> = {
  read: 'List, search, download and make signed links',
  write: 'Upload, create, change and delete files and folders',
  admin: 'Manage keys and webhooks',
};

/** "Clients / Acme", or what is known so far. */
export function placeText(folderId: string | null, place: FolderPlace | undefined): string {
  if (folderId === null) return 'All files';
  if (!place || place.status === 'loading') return 'Loading…';
  if (place.status === 'gone') return 'Deleted folder';
  if (place.status === 'error') return folderId;
  return place.path.map((f) => f.name).join(' / ');
}

function Place(props: { folderId: string | null; place: FolderPlace | undefined }): JSX.Element {
  const text = placeText(props.folderId, props.place);
  if (props.folderId === null) {
    return <span class="key-place all" title="Not confined: every folder"><HomeIcon size={15} /><span>All files</span></span>;
  }
  const p = props.place;
  const title = p?.status === 'gone' ? `The folder ${props.folderId} was deleted: this key reaches nothing`
    : p?.status === 'error' ? `Could not look up the folder: ${p.message}` : text;
  return (
    <span class={'key-place' + (p?.status === 'gone' ? ' gone' : '')} title={title} data-testid="key-folder">
      <FolderIcon size={15} /><span class="key-place-text">{text}</span>
    </span>
  );
}

function Status(props: { k: KeyRecord; now: number }): JSX.Element {
  const s = keyStatus(props.k, props.now);
  if (s === 'revoked') return <span class="key-status revoked"><span class="dot" aria-hidden="true" />Revoked</span>;
  if (s === 'expired') return <span class="key-status expired"><span class="dot" aria-hidden="true" />Expired</span>;
  return <span class="key-status active"><span class="dot" aria-hidden="true" />Active</span>;
}

export function KeyTable(props: {
  keys: KeyRecord[]; places: ReadonlyMap<string, FolderPlace>; now: number; onRevoke: (k: KeyRecord) => void;
}): JSX.Element {
  return (
    <div class="keys-scroll">
      <table class="keys-table" data-testid="keys-table">
        <caption class="sr-only">Access keys, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Scopes</th>
            <th scope="col">Folder</th>
            <th scope="col" class="col-created">Created</th>
            <th scope="col">Expires</th>
            <th scope="col">Last used</th>
            <th scope="col">Status</th>
            <th scope="col"><span class="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {props.keys.map((k) => {
            const status = keyStatus(k, props.now);
            return (
              <tr key={k.key_id} class={'key-row ' + status} data-testid="key-row" data-key-id={k.key_id} data-name={k.name} data-status={status}>
                <th scope="row" class="key-name">
                  <span class="key-name-text" title={k.name}>{k.name}</span>
                  <code class="key-id" title="Key ID (the access key ID for S3 clients)">{k.key_id}</code>
                </th>
                <td class="key-scopes">
                  <ul class="scopes" aria-label={`Scopes: ${k.scopes.join(', ')}`}>
                    {k.scopes.map((s) => <li key={s} class={'scope scope-' + s} title={SCOPE_TEXT[s] ?? s}>{s}</li>)}
                  </ul>
                </td>
                <td class="key-folder"><Place folderId={k.folder_id} place={k.folder_id ? props.places.get(k.folder_id) : undefined} /></td>
                <td class="key-time col-created" data-label="Created"><RelTime iso={k.created_at} now={props.now} /></td>
                <td class="key-time col-expires" data-label="Expires">
                  {k.expires_at === null ? <span class="muted">Never</span> : <RelTime iso={k.expires_at} now={props.now} />}
                </td>
                <td class="key-time col-used" data-label="Last used" data-testid="key-last-used">
                  {k.last_used_at === null ? <span class="muted">Never</span> : <RelTime iso={k.last_used_at} now={props.now} />}
                </td>
                <td class="key-state">
                  <Status k={k} now={props.now} />
                  {k.revoked_at !== null && <span class="key-when"><RelTime iso={k.revoked_at} now={props.now} /></span>}
                </td>
                <td class="key-actions">
                  {status !== 'revoked' && (
                    <button type="button" class="btn btn-small btn-danger-ghost" onClick={() => props.onRevoke(k)}
                      aria-label={`Revoke key ${k.name}`} data-testid="revoke-key">
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
