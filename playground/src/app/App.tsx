/** The Playground: the sign-in screen, or once a session exists the file manager, the keys, the webhooks or the edges (the address decides). */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { currentSession, signOut } from '../api.js';
import { EdgesPage } from '../edges/EdgesPage.js';
import { KeysPage } from '../keys/KeysPage.js';
import { WebhooksPage } from '../webhooks/WebhooksPage.js';
import { dropSessionUploads } from '../uploads/shared.js';
import { FileManager } from './FileManager.js';
import { errorMessage } from './format.js';
import { LogoIcon } from './icons.js';
import { SignIn } from './SignIn.js';
import { useRoute } from './state/url.js';
import { clearThumbs } from './thumbs.js';
import { Toasts } from './Toasts.js';

type State = { kind: 'checking' } | { kind: 'signed-out'; notice: string | null } | { kind: 'signed-in' } | { kind: 'error'; message: string };

export function App(): JSX.Element {
  const [state, setState] = useState<State>({ kind: 'checking' });
  const page = useRoute().page;

  const check = () => {
    setState({ kind: 'checking' });
    currentSession().then(
      (s) => setState(s ? { kind: 'signed-in' } : { kind: 'signed-out', notice: null }),
      (err: unknown) => setState({ kind: 'error', message: errorMessage(err) }),
    );
  };
  useEffect(check, []);

  useEffect(() => {
    document.title = state.kind === 'signed-out' ? 'Sign in · Coffer' : 'Coffer';
  }, [state.kind]);

  const ended = (notice: string | null) => {
    clearThumbs();
    dropSessionUploads();
    setState({ kind: 'signed-out', notice });
  };

  let screen: JSX.Element;
  switch (state.kind) {
    case 'checking':
      screen = (
        <main class="splash" aria-busy="true">
          <span class="brand-mark pulse"><LogoIcon size={28} /></span>
          <p class="sr-only" role="status">Loading Coffer…</p>
        </main>
      );
      break;
    case 'error':
      screen = (
        <main class="splash">
          <div class="state-card">
            <h1 class="state-title">Could not reach Coffer</h1>
            <p class="state-text">{state.message}</p>
            <button type="button" class="btn btn-primary" onClick={check}>Try again</button>
          </div>
        </main>
      );
      break;
    case 'signed-out':
      screen = <SignIn notice={state.notice} onSignedIn={() => setState({ kind: 'signed-in' })} />;
      break;
    case 'signed-in': {
      const session = {
        onSignOut: async () => {
          try {
            await signOut();
            ended('You are signed out.');
          } catch (err) {
            ended(`Signed out here, but the service said: ${errorMessage(err)}`);
          }
        },
        onSessionEnded: () => ended('Your session has ended. Sign in again to continue.'),
      };
      screen = page === 'keys' ? <KeysPage {...session} />
        : page === 'webhooks' ? <WebhooksPage {...session} />
          : page === 'edges' ? <EdgesPage {...session} /> : <FileManager {...session} />;
      break;
    }
  }
  return (
    <>
      {screen}
      <Toasts />
    </>
  );
}
