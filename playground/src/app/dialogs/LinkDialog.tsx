/**
 * A signed link for a Private file: choose how long it works (15 min, 1 h, 1 day, or a
 * custom time up to 24 h), see exactly when it expires, copy it.
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { CreateLinkResponse, FileRecord } from '../../../../src/sdk/index.js';
import { client } from '../../api.js';
import { copyText } from '../clipboard.js';
import { errorMessage, formatDuration, formatExact } from '../format.js';
import { CheckIcon, ChevronDownIcon, CopyIcon, LinkIcon } from '../icons.js';
import { toastError, toastSuccess } from '../Toasts.js';
import { Modal } from './Modal.js';

const PRESETS = [
  { id: '15m', label: '15 min', seconds: 15 * 60 },
  { id: '1h', label: '1 hour', seconds: 3600 },
  { id: '1d', label: '1 day', seconds: 86400 },
] as const;
type PresetId = (typeof PRESETS)[number]['id'] | 'custom';
const MAX = 86400;

export function LinkDialog(props: { file: FileRecord; onClose: () => void }): JSX.Element {
  const { file } = props;
  const [preset, setPreset] = useState<PresetId>('1h');
  const [amount, setAmount] = useState('2');
  const [unit, setUnit] = useState<'minutes' | 'hours'>('hours');
  const [link, setLink] = useState<CreateLinkResponse | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const generation = useRef(0);

  const customSeconds = (() => {
    const n = Number(amount);
    if (!Number.isFinite(n) || n <= 0) return null;
    const s = Math.round(n * (unit === 'hours' ? 3600 : 60));
    return s >= 1 && s <= MAX ? s : null;
  })();
  const seconds = preset === 'custom' ? customSeconds : PRESETS.find((p) => p.id === preset)!.seconds;
  const customError = preset === 'custom' && customSeconds === null ? 'Choose a time from 1 minute to 24 hours.' : null;

  useEffect(() => {
    if (seconds === null) {
      setLink(null);
      return;
    }
    const gen = ++generation.current;
    setBusy(true);
    setError(null);
    setCopied(false);
    const timer = setTimeout(() => {
      client.createLink({ file_id: file.file_id, file_type: file.file_type, expiry: seconds }).then(
        (l) => { if (gen === generation.current) { setLink(l); setBusy(false); } },
        (err: unknown) => { if (gen === generation.current) { setLink(null); setError(errorMessage(err)); setBusy(false); } },
      );
    }, preset === 'custom' ? 350 : 0);
    return () => clearTimeout(timer);
  }, [seconds]);

  const copy = async () => {
    if (!link) return;
    try {
      await copyText(link.presigned_url);
      setCopied(true);
      toastSuccess('Signed link copied', { detail: `It works until ${formatExact(link.expires_at)}.` });
    } catch (err) {
      toastError(errorMessage(err));
    }
  };

  return (
    <Modal
      title="Create a signed link" icon={<LinkIcon />} size="medium" testId="link-dialog"
      description={<>Anyone with this link can download <strong class="break">{file.name}</strong> until it expires.</>}
      onClose={props.onClose}
      footer={<button type="button" class="btn" onClick={props.onClose}>Done</button>}
    >
      <fieldset class="segmented-field">
        <legend class="field-label">Expires after</legend>
        <div class="segmented wide">
          {[...PRESETS, { id: 'custom' as const, label: 'Custom', seconds: 0 }].map((p) => (
            <label key={p.id} class={'seg' + (preset === p.id ? ' checked' : '')}>
              <input type="radio" name="link-expiry" value={p.id} checked={preset === p.id} onChange={() => setPreset(p.id)}
                data-autofocus={p.id === '1h' ? '' : undefined} />
              <span>{p.label}</span>
            </label>
          ))}
        </div>
      </fieldset>
      {preset === 'custom' && (
        <div class="custom-expiry">
          <label class="field inline">
            <span class="field-label">Custom time</span>
            <input class="input narrow" type="number" min={1} max={unit === 'hours' ? 24 : 1440} step="any" value={amount}
              aria-invalid={customError ? true : undefined} aria-describedby={customError ? 'custom-expiry-error' : undefined}
              onInput={(e) => setAmount(e.currentTarget.value)} />
          </label>
          <label class="field inline select-wrap">
            <span class="sr-only">Unit</span>
            <select class="select" value={unit} onChange={(e) => setUnit(e.currentTarget.value as 'minutes' | 'hours')}>
              <option value="minutes">minutes</option>
              <option value="hours">hours</option>
            </select>
            <ChevronDownIcon size={14} class="select-chevron" />
          </label>
          <span class="muted small">up to 24 hours</span>
        </div>
      )}
      {customError && <p class="form-error" id="custom-expiry-error" role="alert">{customError}</p>}

      <div class={'link-result' + (busy ? ' busy' : '')} aria-busy={busy}>
        <label class="field">
          <span class="field-label">Signed link</span>
          <div class="input-group">
            <input class="input mono" type="text" readOnly value={link?.presigned_url ?? (busy ? 'Creating link…' : '')}
              data-testid="signed-link" onFocus={(e) => e.currentTarget.select()} data-select="none" />
            <button type="button" class="btn btn-primary" onClick={copy} disabled={!link || busy} data-testid="copy-link">
              {copied ? <CheckIcon /> : <CopyIcon />}<span>{copied ? 'Copied' : 'Copy'}</span>
            </button>
          </div>
        </label>
        <p class="expiry" data-testid="link-expiry" aria-live="polite">
          {link && !busy ? (
            <>Expires <time dateTime={link.expires_at} class="strong">{formatExact(link.expires_at)}</time>{' '}
              <span class="muted">({formatDuration(link.expiry)} from now)</span></>
          ) : seconds !== null ? (
            <span class="muted">Expires about {formatExact(Date.now() + seconds * 1000)}</span>
          ) : null}
        </p>
      </div>
      {error && <p class="form-error" role="alert">{error}</p>}
    </Modal>
  );
}
