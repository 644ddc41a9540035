/**
 * Where the user is: All files › photos › 2026, each step a link (the last is the page).
 * Files and folders dragged onto a step move there.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { FolderRecord } from '../../../src/sdk/index.js';
import type { Item } from './bulk.js';
import { moveDropTarget } from './dragItems.js';
import { ChevronRightIcon, HomeIcon } from './icons.js';

export function Breadcrumbs(props: {
  crumbs: FolderRecord[]; href: (folderId: string | null) => string; go: (folderId: string | null) => void;
  moveInto: (folder: FolderRecord | null, items: Item[]) => void;
}): JSX.Element {
  const [over, setOver] = useState<string | null>(null);
  const click = (id: string | null) => (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
    e.preventDefault();
    props.go(id);
  };
  const target = (f: FolderRecord | null) => {
    const id = f?.folder_id ?? '';
    return moveDropTarget(f?.folder_id ?? null, (on) => setOver((cur) => (on ? id : cur === id ? null : cur)), (items) => props.moveInto(f, items));
  };
  const cls = (id: string) => 'crumb' + (over === id ? ' drop-target' : '');
  const atRoot = props.crumbs.length === 0;
  return (
    <nav class="crumbs" aria-label="Breadcrumb" data-testid="breadcrumbs">
      <ol>
        <li>
          {atRoot ? (
            <span class="crumb current" aria-current="page"><HomeIcon size={16} /><span>All files</span></span>
          ) : (
            <a class={cls('')} href={props.href(null)} onClick={click(null)} {...target(null)}><HomeIcon size={16} /><span>All files</span></a>
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
                <a class={cls(c.folder_id)} href={props.href(c.folder_id)} onClick={click(c.folder_id)} title={c.name} {...target(c)}>
                  <span class="crumb-text">{c.name}</span>
                </a>
              )}
            </li>
          );
        })}
      </ol>
    </nav>
  );
}
