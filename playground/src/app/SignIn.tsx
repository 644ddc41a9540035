/**
 * Sign in with the access key, pasted once. The key goes to the origin in one request and
 * is then dropped: it is never kept in storage, the address, or a variable.
 */
import type { JSX } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { signIn, type Session } from '../api.js';
import { errorMessage } from './format.js';
import { KeyIcon, LogoIcon } from './icons.js';

export function SignIn(props: { onSignedIn: (s: Session) => void; notice?: string | null }): JSX.Element {
  const input = useRef<HTMLInputElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    const field = input.current!;
    if (!field.value.trim()) {
      setError('Paste the access key to sign in.');
      field.focus();
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const session = await signIn(field.value.trim());
      field.value = '';
      props.onSignedIn(session);
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
      field.focus();
      field.select();
    }
  };

  return (
    <main class="signin">
      <form class="signin-card" onSubmit={submit} autoComplete="off" data-testid="signin">
        <div class="signin-brand"><span class="brand-mark"><LogoIcon size={26} /></span><span class="brand-name">Coffer</span></div>
        <h1 class="signin-title">Sign in</h1>
        <p class="signin-lead">Paste the access key of this Coffer service. The page exchanges it for a session and does not keep it.</p>
        {props.notice && !error && <p class="notice" role="status">{props.notice}</p>}
        <label class="field">
          <span class="field-label">Access key</span>
          <span class="input-icon">
            <KeyIcon size={18} />
            <input ref={input} class="input" type="password" name="coffer-access-key" autoComplete="off" autoCapitalize="off"
              spellcheck={false} autoFocus aria-required="true" aria-invalid={error ? true : undefined}
              aria-describedby={error ? 'signin-error' : 'signin-hint'} placeholder="Paste your access key" />
          </span>
        </label>
        {error
          ? <p class="form-error" id="signin-error" role="alert">{error}</p>
          : <p class="hint" id="signin-hint">It was printed when the service first started, and is saved in its data folder.</p>}
        <button type="submit" class="btn btn-primary btn-block" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </main>
  );
}
