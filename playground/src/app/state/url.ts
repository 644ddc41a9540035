/**
 * The address holds where the user is: the page, the folder, the view and the search,
 * e.g. `/?folder=ID&view=list&q=term` (`&in=all` searches every folder), `/?page=keys`, `/?page=webhooks` or `/?page=edges`. Reload, back and forward restore it.
 */
import { useEffect, useState } from 'preact/hooks';

export type View = 'grid' | 'list';
export type Page = 'files' | 'keys' | 'webhooks' | 'edges';

/** The pages that stand alone: the folder, view and search belong to the files. */
const STANDALONE: readonly Page[] = ['keys', 'webhooks', 'edges'];

export interface Route {
  /** Absent: the files. */
  page?: Page;
  folder: string | null;
  /** null: not in the address; the saved preference decides. */
  view: View | null;
  q: string;
  /** The search looks in every folder, not only this one. */
  all?: boolean;
}

export function parseRoute(search: string): Route {
  const p = new URLSearchParams(search);
  const view = p.get('view');
  return {
    page: STANDALONE.find((x) => x === p.get('page')) ?? 'files',
    folder: p.get('folder') || null,
    view: view === 'grid' || view === 'list' ? view : null,
    q: p.get('q') ?? '',
    all: p.get('in') === 'all',
  };
}

export function routeHref(r: Route): string {
  const p = new URLSearchParams();
  if (r.page && STANDALONE.includes(r.page)) return `/?page=${r.page}`;
  if (r.folder) p.set('folder', r.folder);
  if (r.view) p.set('view', r.view);
  if (r.q) p.set('q', r.q);
  if (r.q && r.all) p.set('in', 'all');
  const s = p.toString();
  return s ? `/?${s}` : '/';
}

const listeners = new Set<(r: Route) => void>();
let current: Route = parseRoute(location.search);

function emit(): void {
  for (const fn of listeners) fn(current);
}

window.addEventListener('popstate', () => {
  current = parseRoute(location.search);
  emit();
});

/** Goes to a new place: a history entry (`push`) or a change of this one (`replace`). */
export function navigate(change: Partial<Route>, mode: 'push' | 'replace' = 'push'): void {
  const next: Route = { ...current, ...change };
  const href = routeHref(next);
  if (href === routeHref(current) && mode === 'push') return;
  if (mode === 'push') history.pushState(null, '', href);
  else history.replaceState(null, '', href);
  current = next;
  emit();
}

export const currentRoute = (): Route => current;

/** The route, re-rendering on every change (navigate, back, forward). */
export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    listeners.add(setRoute);
    setRoute(current);
    return () => { listeners.delete(setRoute); };
  }, []);
  return route;
}
