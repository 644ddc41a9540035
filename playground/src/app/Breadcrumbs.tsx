/** Where the user is: All files › photos › 2026, each step a link (the last is the page). */
import type { JSX } from 'preact';
import type { FolderRecord } from '../../../src/sdk/index.js';
import { ChevronRightIcon, HomeIcon } from './icons.js';

export function Breadcrumbs(props: {
  crumbs: FolderRecord[]; href: (folderId: string | null) => string; go: (folderId: string | null) => void;
}): JSX.Element {
  const click = (id: string | null) => (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
    e.preventDefault();
    props.go(id);
  };
  const atRoot = props.crumbs.length === 0;
  return (
    <nav class="crumbs" aria-label="Breadcrumb" data-testid="breadcrumbs">
      <ol>
        <li>
          {atRoot ? (
            <span class="crumb current" aria-current="page"><HomeIcon size={16} /><span>All files</span></span>
          ) : (
            <a class="crumb" href={props.href(null)} onClick={click(null)}><HomeIcon size={16} /><span>All files</span></a>
          )}
        </li>
        {props.crumbs.map((c, i) => {
          const last = i === props.crumbs.length - 1;
          return (
            <li key={c.folder_id}>
              <ChevronRightIcon size={14} class="crumb-sep" />
              {last ? (
                <span class="crumb current" aria-current="page" title={c.name}><span class="crumb-text">{c.name}</span></span>
              ) : (
                <a class="crumb" href={props.href(c.folder_id)} onClick={click(c.folder_id)} title={c.name}><span class="crumb-text">{c.name}</span></a>
              )}
            </li>
          );
        })}
      </ol>
    </nav>
  );
}
