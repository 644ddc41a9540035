/** The Playground's pages (Files, Keys, Webhooks, Edges) as links in the top bar; the current one is marked. */
import type { JSX } from 'preact';
import { FolderIcon, KeyIcon, ServerIcon, WebhookIcon } from './icons.js';
import { navigate, routeHref, type Page } from './state/url.js';
import './nav.css';

const PAGES: { page: Page; label: string; Icon: typeof FolderIcon }[] = [
  { page: 'files', label: 'Files', Icon: FolderIcon },
  { page: 'keys', label: 'Keys', Icon: KeyIcon },
  { page: 'webhooks', label: 'Webhooks', Icon: WebhookIcon },
  { page: 'edges', label: 'Edges', Icon: ServerIcon },
];

export function PageNav(props: { current: Page }): JSX.Element {
  return (
    <nav class="pagenav" aria-label="Pages">
      {PAGES.map(({ page, label, Icon }) => {
        const here = page === props.current;
        return (
          <a
            key={page} class={'pagenav-link' + (here ? ' current' : '')} href={routeHref({ page, folder: null, view: null, q: '' })}
            aria-current={here ? 'page' : undefined} aria-label={label} title={label} data-testid={`nav-${page}`}
            onClick={(e) => {
              if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
              e.preventDefault();
              if (!here) navigate({ page, folder: null, q: '' });
            }}
          >
            <Icon size={17} /><span class="hide-narrow">{label}</span>
          </a>
        );
      })}
    </nav>
  );
}
