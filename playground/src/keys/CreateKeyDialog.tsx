/**
 * Makes a key: a name, its scopes, optionally a folder it is confined to (chosen in the
 * folder picker) and an expiry. The answer, secret included, goes straight to the caller,
 * which shows it once; nothing of it is kept here.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { CreateKeyResponse, FolderRecord } from '../../../src/sdk/index.js';
import { client } from '../api.js';
import { FolderPickerDialog, type FolderPath } from '../app/dialogs/FolderPickerDialog.js';
import { Modal } from '../app/dialogs/Modal.js';
import { errorMessage, formatExact } from '../app/format.js';
import { ChevronDownIcon, CloseIcon, FolderIcon, HomeIcon, KeyIcon } from '../app/icons.js';
import { SCOPE_TEXT } from './KeyTable.js';

const SCOPES = ['read', 'write', 'admin'] as const;
type Scope = (typeof SCOPES)[number];

const DAY = 86_400;
const EXPIRIES = [
  { id: 'never', label: 'Never', seconds: null },
  { id: '7d', label: '7 days', seconds: 7 * DAY },
  { id: '30d', label: '30 days', seconds: 30 * DAY },
  { id: '90d', label: '90 days', seconds: 90 * DAY },
  { id: '1y', label: '1 year', seconds: 365 * DAY },
  { id: 'custom', label: 'Custom', seconds: null },
] as const;
type ExpiryId = (typeof EXPIRIES)[number]['id'];
const MAX_DAYS = 3650;

export function CreateKeyDialog(props: {
  onClose: () => void;
  onCreated: (created: CreateKeyResponse, path: FolderRecord[] | null) => void;
}): JSX.Element {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<ReadonlySet<Scope>>(new Set(['read']));
  const [path, setPath] = useState<FolderPath | null>(null);
  const [picking, setPicking] = useState(false);
  const [expiry, setExpiry] = useState<ExpiryId>('never');
  const [days, setDays] = useState('14');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ field: 'name' | 'scopes' | 'expiry' | null; message: string } | null>(null);

  const folder = path && path.length > 0 ? path[path.length - 1]! : null;
  const customDays = Number(days);
  const customOk = Number.isInteger(customDays) && customDays >= 1 && customDays <= MAX_DAYS;
  const seconds = expiry === 'custom' ? (customOk ? customDays * DAY : null) : EXPIRIES.find((e) => e.id === expiry)!.seconds;

  const toggle = (s: Scope) => {
    const next = new Set(scopes);
    if (next.has(s)) next.delete(s);
    else next.add(s);
    setScopes(next);
    if (error?.field === 'scopes') setError(null);
  };

  const submit = async () => {
    if (busy || picking) return;
    if (!name.trim()) return setError({ field: 'name', message: 'Enter a name, so you know later what the key is for.' });
    if (scopes.size === 0) return setError({ field: 'scopes', message: 'Choose at least one scope.' });
    if (expiry === 'custom' && !customOk) return setError({ field: 'expiry', message: `Choose a whole number of days from 1 to ${MAX_DAYS}.` });
    setBusy(true);
    setError(null);
    try {
      const created = await client.createKey({
        name: name.trim(), scopes: SCOPES.filter((s) => scopes.has(s)), folder_id: folder?.folder_id ?? null, expires_in: seconds,
      });
      props.onCreated(created, folder ? path : null);
    } catch (err) {
      setError({ field: null, message: errorMessage(err) });
      setBusy(false);
    }
  };

  const invalid = (field: 'name' | 'scopes' | 'expiry') => (error?.field === field ? { 'aria-invalid': true, 'aria-describedby': 'create-key-error' } : {});
  return (
    <>
      <Modal
        title="Create key" icon={<KeyIcon />} size="medium" testId="create-key-dialog"
        description="A key for a program or a person: it can do only what its scopes allow, only inside its folder."
        onClose={() => { if (!picking) props.onClose(); }} onSubmit={submit}
        footer={<>
          <button type="button" class="btn" onClick={props.onClose}>Cancel</button>
          <button type="submit" class="btn btn-primary" disabled={busy}>{busy ? 'Creating…' : 'Create key'}</button>
        </>}
      >
        <label class="field">
          <span class="field-label">Name</span>
          <input class="input" type="text" name="key-name" value={name} maxLength={255} autoComplete="off" spellcheck={false}
            placeholder="e.g. Website uploads" {...invalid('name')}
            onInput={(e) => { setName(e.currentTarget.value); if (error?.field === 'name') setError(null); }} />
        </label>

        <fieldset class="scope-choices" {...(error?.field === 'scopes' ? { 'aria-describedby': 'create-key-error' } : {})}>
          <legend class="field-label">Scopes</legend>
          {SCOPES.map((s) => (
            <label key={s} class={'scope-choice' + (scopes.has(s) ? ' checked' : '')}>
              <input type="checkbox" name="key-scope" value={s} checked={scopes.has(s)} onChange={() => toggle(s)} />
              <span class="scope-choice-text">
                <span class="scope-choice-title">{s}</span>
                <span class="scope-choice-desc">{SCOPE_TEXT[s]}</span>
              </span>
            </label>
          ))}
        </fieldset>

        <div class="field">
          <span class="field-label" id="key-folder-label">Folder</span>
          <div class="key-folder-choice" role="group" aria-labelledby="key-folder-label">
            <span class="key-folder-value" data-testid="key-folder-value" title={path?.map((f) => f.name).join(' / ') ?? 'All files'}>
              {folder ? <FolderIcon size={16} /> : <HomeIcon size={16} />}
              <span class="key-folder-text">{folder ? path!.map((f) => f.name).join(' / ') : 'All files (not confined)'}</span>
            </span>
            <button type="button" class="btn btn-small" onClick={() => setPicking(true)} data-testid="choose-folder">
              {folder ? 'Change…' : 'Choose folder…'}
            </button>
            {folder && (
              <button type="button" class="icon-btn" aria-label="Clear the folder: the key reaches every folder" title="Clear" onClick={() => setPath(null)}>
                <CloseIcon size={16} />
              </button>
            )}
          </div>
          <p class="hint">
            {folder
              ? <>The key sees only <strong>{folder.name}</strong> and what is inside it; everything else answers “not found”.</>
              : 'Optional. A key confined to a folder sees nothing outside it.'}
          </p>
        </div>

        <div class="key-expiry">
          <label class="field inline">
            <span class="field-label">Expires</span>
            <span class="select-wrap">
              <select class="select" name="key-expiry" value={expiry} onChange={(e) => setExpiry(e.currentTarget.value as ExpiryId)}>
                {EXPIRIES.map((x) => <option key={x.id} value={x.id}>{x.id === 'never' ? 'Never (until revoked)' : x.id === 'custom' ? 'Custom…' : `After ${x.label}`}</option>)}
              </select>
              <ChevronDownIcon size={14} class="select-chevron" />
            </span>
          </label>
          {expiry === 'custom' && (
            <label class="field inline">
              <span class="field-label">Days</span>
              <input class="input narrow" type="number" name="key-expiry-days" min={1} max={MAX_DAYS} step={1} value={days}
                {...invalid('expiry')} onInput={(e) => { setDays(e.currentTarget.value); if (error?.field === 'expiry') setError(null); }} />
            </label>
          )}
          <p class="hint key-expiry-when" aria-live="polite">
            {seconds !== null ? <>Stops working about {formatExact(Date.now() + seconds * 1000)}.</> : expiry === 'never' ? 'Works until you revoke it.' : ''}
          </p>
        </div>

        {error && <p class="form-error" id="create-key-error" role="alert">{error.message}</p>}
      </Modal>
      {picking && (
        <FolderPickerDialog
          title="Confine the key to a folder" start={folder ? folder.parent_id ?? null : null} select={folder?.folder_id ?? null}
          hint={(f) => (f ? <>The key will reach <strong>{f.name}</strong> and everything inside it.</> : 'Choosing All files leaves the key unconfined.')}
          onClose={() => setPicking(false)}
          onChoose={(p) => { setPath(p.length > 0 ? p : null); setPicking(false); }}
        />
      )}
    </>
  );
}
