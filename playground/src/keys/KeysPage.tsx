/**
 * The Keys page (`/?page=keys`): every key with what it may do and where, making one (its
 * secret shown once), and revoking one.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { CreateKeyResponse, KeyRecord } from '../../../src/sdk/index.js';
import { CofferError } from '../../../src/sdk/index.js';
import { errorMessage, middleEllipsis, plural } from '../app/format.js';
import { CloudOffIcon, KeyIcon, PlusIcon } from '../app/icons.js';
import { SidePage } from '../app/SidePage.js';
import { Loading } from '../app/States.js';
import { toastSuccess } from '../app/Toasts.js';
import { useNow } from '../app/useNow.js';
import { CreateKeyDialog } from './CreateKeyDialog.js';
import { KeyCreatedDialog } from './KeyCreatedDialog.js';
import { KeyTable, placeText } from './KeyTable.js';
import { RevokeKeyDialog } from './RevokeKeyDialog.js';
import { keyStatus, useKeys } from './useKeys.js';
import './keys.css';

type Dialog =
  | { type: 'create' }
  | { type: 'created'; created: CreateKeyResponse; folderText: string }
  | { type: 'revoke'; k: KeyRecord };

const sessionGone = (err: unknown) => err instanceof CofferError && (err.status === 401 || err.code === 'csrf_failed');

export function KeysPage(props: { onSignOut: () => void; onSessionEnded: () => void }): JSX.Element {
  const { state, places, reload, added, revoked } = useKeys();
  const [dialog, setDialog] = useState<Dialog | null>(null);
  const now = useNow(30_000);

  useEffect(() => { document.title = 'Keys · Coffer'; }, []);
  useEffect(() => {
    if (state.status === 'error' && sessionGone(state.error)) props.onSessionEnded();
  }, [state.status]);

  const folderText = (k: KeyRecord) => placeText(k.folder_id, k.folder_id ? places.get(k.folder_id) : undefined);
  const active = state.keys.filter((k) => keyStatus(k, now) === 'active').length;
  const create = () => setDialog({ type: 'create' });

  let content: JSX.Element;
  if (state.status === 'loading') content = <Loading view="list" />;
  else if (state.status === 'error') {
    content = (
      <div class="state error" data-testid="keys-error" role="alert">
        <div class="state-art"><CloudOffIcon size={44} /></div>
        <h2 class="state-title">Could not load the keys</h2>
        <p class="state-text">{errorMessage(state.error)}</p>
        <p class="state-text muted">Check that the service is running, then try again.</p>
        <div class="state-actions"><button type="button" class="btn btn-primary" onClick={reload}>Try again</button></div>
      </div>
    );
  } else if (state.keys.length === 0) {
    content = (
      <div class="state" data-testid="keys-empty">
        <div class="state-art"><KeyIcon size={44} /></div>
        <h2 class="state-title">No keys yet</h2>
        <p class="state-text">
          Give each program or person its own key instead of the root key: choose what it may do and which folder it sees,
          and revoke it when it is no longer needed.
        </p>
        <div class="state-actions"><button type="button" class="btn btn-primary" onClick={create}><PlusIcon /><span>Create key</span></button></div>
      </div>
    );
  } else {
    content = <KeyTable keys={state.keys} places={places} now={now} onRevoke={(k) => setDialog({ type: 'revoke', k })} />;
  }

  return (
    <SidePage
      page="keys" title="Keys" lead="Keys let programs use Coffer with only the access they need." onSignOut={props.onSignOut}
      actions={
        <button type="button" class="btn btn-primary" onClick={create} data-focus-home data-testid="create-key">
          <PlusIcon /><span>Create key</span>
        </button>
      }
      summary={state.status === 'ready' && state.keys.length > 0 ? `${plural(state.keys.length, 'key')} · ${active} active` : ''}
      summaryTestId="keys-summary"
      over={<>
        {dialog?.type === 'create' && (
          <CreateKeyDialog onClose={() => setDialog(null)} onCreated={(created, path) => {
            added(created, path);
            const text = path ? path.map((f) => f.name).join(' / ') : 'All files';
            setDialog({ type: 'created', created, folderText: text });
          }} />
        )}
        {/* Closing drops the answer: the secret is referred to from nowhere after this. */}
        {dialog?.type === 'created' && <KeyCreatedDialog created={dialog.created} folderText={dialog.folderText} onClose={() => setDialog(null)} />}
        {dialog?.type === 'revoke' && (
          <RevokeKeyDialog k={dialog.k} folderText={folderText(dialog.k)} now={now} onClose={() => setDialog(null)} onRevoked={(r) => {
            const name = dialog.k.name;
            revoked(r.key_id, r.revoked_at);
            setDialog(null);
            toastSuccess(`Revoked “${middleEllipsis(name, 40)}”`, { detail: 'Every origin refuses it from now on.' });
          }} />
        )}
      </>}
    >
      <section class="content" aria-label="Keys">{content}</section>
    </SidePage>
  );
}
