/**
 * The Webhooks page (`/?page=webhooks`): every webhook with its latest deliveries, making
 * one (its signing secret shown once), sending a test, sending a delivery again, deleting.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { CreateWebhookResponse, WebhookRecord } from '../../../src/sdk/index.js';
import { CofferError } from '../../../src/sdk/index.js';
import { errorMessage, middleEllipsis, plural } from '../app/format.js';
import { CloudOffIcon, PlusIcon, WebhookIcon } from '../app/icons.js';
import { SidePage } from '../app/SidePage.js';
import { Loading } from '../app/States.js';
import { toastSuccess } from '../app/Toasts.js';
import { useNow } from '../app/useNow.js';
import { CreateWebhookDialog } from './CreateWebhookDialog.js';
import { DeleteWebhookDialog } from './DeleteWebhookDialog.js';
import { useWebhooks } from './useWebhooks.js';
import { WebhookCard } from './WebhookCard.js';
import { WebhookCreatedDialog } from './WebhookCreatedDialog.js';
// The page heading and the status dots are the Keys page's.
import './webhooks.css';

type Dialog = { type: 'create' } | { type: 'created'; created: CreateWebhookResponse } | { type: 'delete'; hook: WebhookRecord };

const sessionGone = (err: unknown) => err instanceof CofferError && (err.status === 401 || err.code === 'csrf_failed');

export function WebhooksPage(props: { onSignOut: () => void; onSessionEnded: () => void }): JSX.Element {
  const { state, reload, added, removed } = useWebhooks();
  const [dialog, setDialog] = useState<Dialog | null>(null);
  const now = useNow(30_000);

  useEffect(() => { document.title = 'Webhooks · Coffer'; }, []);
  useEffect(() => {
    if (state.status === 'error' && sessionGone(state.error)) props.onSessionEnded();
  }, [state.status]);

  const create = () => setDialog({ type: 'create' });

  let content: JSX.Element;
  if (state.status === 'loading') content = <div class="content"><Loading view="list" /></div>;
  else if (state.status === 'error') {
    content = (
      <div class="content">
        <div class="state error" data-testid="webhooks-error" role="alert">
          <div class="state-art"><CloudOffIcon size={44} /></div>
          <h2 class="state-title">Could not load the webhooks</h2>
          <p class="state-text">{errorMessage(state.error)}</p>
          <div class="state-actions"><button type="button" class="btn btn-primary" onClick={reload}>Try again</button></div>
        </div>
      </div>
    );
  } else if (state.hooks.length === 0) {
    content = (
      <div class="content">
        <div class="state" data-testid="webhooks-empty">
          <div class="state-art"><WebhookIcon size={44} /></div>
          <h2 class="state-title">No webhooks yet</h2>
          <p class="state-text">
            A webhook tells your application when something happens: a file finished uploading, was changed or deleted.
            Coffer sends each event at least once, in order per file, and retries for a day.
          </p>
          <div class="state-actions"><button type="button" class="btn btn-primary" onClick={create}><PlusIcon /><span>Create webhook</span></button></div>
        </div>
      </div>
    );
  } else {
    content = (
      <div class="hooks" data-testid="webhooks">
        {state.hooks.map((w) => <WebhookCard key={w.webhook_id} hook={w} now={now} onDelete={(hook) => setDialog({ type: 'delete', hook })} />)}
      </div>
    );
  }

  return (
    <SidePage
      page="webhooks" title="Webhooks" lead="Events sent to your application as they happen, signed with a secret only it knows." onSignOut={props.onSignOut}
      actions={
        <button type="button" class="btn btn-primary" onClick={create} data-focus-home data-testid="create-webhook">
          <PlusIcon /><span>Create webhook</span>
        </button>
      }
      summary={state.status === 'ready' && state.hooks.length > 0 ? plural(state.hooks.length, 'webhook') : ''}
      summaryTestId="webhooks-summary"
      over={<>
        {dialog?.type === 'create' && (
          <CreateWebhookDialog onClose={() => setDialog(null)} onCreated={(created) => {
            added(created);
            setDialog({ type: 'created', created });
          }} />
        )}
        {/* Closing drops the answer: the secret is referred to from nowhere after this. */}
        {dialog?.type === 'created' && <WebhookCreatedDialog created={dialog.created} onClose={() => setDialog(null)} />}
        {dialog?.type === 'delete' && (
          <DeleteWebhookDialog hook={dialog.hook} onClose={() => setDialog(null)} onDeleted={() => {
            const url = dialog.hook.url;
            removed(dialog.hook.webhook_id);
            setDialog(null);
            toastSuccess(`Deleted the webhook for “${middleEllipsis(url, 48)}”`);
          }} />
        )}
      </>}
    >
      {content}
    </SidePage>
  );
}
