/**
 * The Edges page (`/?page=edges`): every edge the origin knows, refreshed every few seconds,
 * with the ones that stopped answering marked. Names come from the edges: shown as text only.
 */
import type { JSX } from 'preact';
import { useEffect } from 'preact/hooks';
import { CofferError } from '../../../src/sdk/index.js';
import { errorMessage, plural } from '../app/format.js';
import { CloudOffIcon, RefreshIcon, ServerIcon } from '../app/icons.js';
import { SidePage } from '../app/SidePage.js';
import { Loading } from '../app/States.js';
import { EdgeTable } from './EdgeTable.js';
import { useEdges } from './useEdges.js';
// The page heading, table and status dots are the Keys page's.
import './edges.css';

const sessionGone = (err: unknown) => err instanceof CofferError && (err.status === 401 || err.code === 'csrf_failed');

export function EdgesPage(props: { onSignOut: () => void; onSessionEnded: () => void }): JSX.Element {
  const { state, reload } = useEdges();
  const answer = state.answer;

  useEffect(() => { document.title = 'Edges · Coffer'; }, []);
  useEffect(() => {
    if (state.status === 'error' && sessionGone(state.error)) props.onSessionEnded();
  }, [state.status]);

  let content: JSX.Element;
  if (!answer && state.status === 'loading') content = <div class="content"><Loading view="list" /></div>;
  else if (!answer) {
    content = (
      <div class="content">
        <div class="state error" data-testid="edges-error" role="alert">
          <div class="state-art"><CloudOffIcon size={44} /></div>
          <h2 class="state-title">Could not load the edges</h2>
          <p class="state-text">{errorMessage(state.error)}</p>
          <div class="state-actions"><button type="button" class="btn btn-primary" onClick={reload}>Try again</button></div>
        </div>
      </div>
    );
  } else if (answer.edges.length === 0) {
    content = (
      <div class="content">
        <div class="state" data-testid="edges-empty">
          <div class="state-art"><ServerIcon size={44} /></div>
          <h2 class="state-title">No edges yet</h2>
          <p class="state-text">
            Edges deliver your files close to your users. Start one with <code>coffer edge --origin URL --name NAME</code> and the
            origin's edge token; it shows here within seconds, and stays listed for an hour after it was last heard from.
          </p>
        </div>
      </div>
    );
  } else {
    content = <EdgeTable edges={answer.edges} now={Date.parse(answer.checked_at)} />;
  }

  const down = answer ? answer.edges.filter((e) => !e.answering).length : 0;
  return (
    <SidePage
      page="edges" title="Edges" lead="The delivery network: where each edge fills from, whether it answers, and what it serves." onSignOut={props.onSignOut}
      actions={
        <button type="button" class="btn" onClick={reload} data-focus-home data-testid="refresh-edges" aria-label="Refresh the edges">
          <RefreshIcon /><span class="hide-narrow">Refresh</span>
        </button>
      }
      summary={<>
        {answer && answer.edges.length > 0
          ? `${plural(answer.edges.length, 'edge')} · ${down === 0 ? 'all answering' : `${down} not answering`} · feed at event ${answer.head_seq.toLocaleString('en-US')}`
          : ''}
        {answer && state.status === 'error' && <span class="edges-stale"> · refresh failed: {errorMessage(state.error)}</span>}
      </>}
      summaryTestId="edges-summary"
    >
      {content}
    </SidePage>
  );
}
