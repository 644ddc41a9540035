/** The top bar of the pages beside the files (Keys, Webhooks): the brand leading home, the pages, sign out. */
import type { JSX } from 'preact';
import { LogoIcon, SignOutIcon } from './icons.js';
import { PageNav } from './Nav.js';
import { navigate, routeHref, type Page } from './state/url.js';

export function PageTopBar(props: { current: Page; onSignOut: () => void }): JSX.Element {
  return (
    <header class="topbar">
      <a class="brand" href={routeHref({ folder: null, view: null, q: '' })}
        onClick={(e) => { if (e.button === 0 && !e.metaKey && !e.ctrlKey) { e.preventDefault(); navigate({ page: 'files', folder: null, q: '' }); } }}>
        <span class="brand-mark"><LogoIcon size={20} /></span>
        <span class="brand-name">Coffer</span>
      </a>
      <PageNav current={props.current} />
      <span class="topbar-spacer" />
      <button type="button" class="btn btn-ghost signout" onClick={props.onSignOut} aria-label="Sign out" title="Sign out">
        <SignOutIcon /><span class="hide-narrow">Sign out</span>
      </button>
    </header>
  );
}
