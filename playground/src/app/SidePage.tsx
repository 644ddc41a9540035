/**
 * The frame of the pages beside the files (Keys, Webhooks, Edges): the top bar, a heading
 * with its lead line and actions, a status line, the content, the uploads still running,
 * and what floats over the page (its dialogs).
 */
import type { ComponentChildren, JSX } from 'preact';
import { PageTopBar } from './PageTopBar.js';
import type { Page } from './state/url.js';
import { UploadPanel } from '../uploads/UploadPanel.js';
import { sessionUploads } from '../uploads/shared.js';
import '../keys/keys.css';

export interface SidePageProps {
  page: Page;
  title: string;
  lead: string;
  onSignOut: () => void;
  /** The toolbar's buttons. */
  actions: ComponentChildren;
  /** The status line under the toolbar. */
  summary: ComponentChildren;
  summaryTestId: string;
  /** Dialogs shown over the page. */
  over?: ComponentChildren;
  children: ComponentChildren;
}

export function SidePage(props: SidePageProps): JSX.Element {
  const titleId = `${props.page}-title`;
  return (
    <div class="app">
      <PageTopBar current={props.page} onSignOut={props.onSignOut} />
      <main class="main" aria-labelledby={titleId}>
        <div class="toolbar">
          <div class="toolbar-crumbs keys-heading">
            <h1 id={titleId} class="keys-title">{props.title}</h1>
            <p class="keys-lead">{props.lead}</p>
          </div>
          <div class="toolbar-actions">{props.actions}</div>
        </div>
        <div class="subbar">
          <p class="subbar-text" role="status" data-testid={props.summaryTestId}>{props.summary}</p>
        </div>
        {props.children}
      </main>
      <UploadPanel manager={sessionUploads()} />
      {props.over}
    </div>
  );
}
