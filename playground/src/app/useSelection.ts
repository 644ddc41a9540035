/**
 * Which entries are selected, and which one has the keyboard (the active one). A plain click
 * or arrow selects one; Ctrl/⌘-click and the check boxes toggle; Shift-click and Shift-arrow
 * select a range from the anchor; Ctrl/⌘-A selects everything shown. Uploads in progress are
 * never selected.
 */
import { useCallback, useMemo, useRef, useState } from 'preact/hooks';
import type { Entry } from './entries.js';

export interface Selection {
  active: string | null;
  selected: ReadonlySet<string>;
  /** The user is choosing several (check boxes, Ctrl/⌘, Shift): the bulk actions show. */
  multi: boolean;
}

export interface SelectionApi extends Selection {
  /** Makes one entry active and the only one selected (null: none). */
  setActive(key: string | null): void;
  /** A click with its modifiers, or a movement with Shift. */
  pick(key: string, how: { toggle?: boolean; range?: boolean }): void;
  selectAll(): void;
  clear(): void;
  /** The selected entries among those shown, in their order. */
  chosen: Entry[];
}

const EMPTY: Selection = { active: null, selected: new Set(), multi: false };

export function useSelection(entries: Entry[]): SelectionApi {
  const [sel, setSel] = useState<Selection>(EMPTY);
  const anchor = useRef<string | null>(null);
  const list = useRef(entries);
  list.current = entries;

  const setActive = useCallback((key: string | null) => {
    anchor.current = key;
    setSel({ active: key, selected: new Set(key ? [key] : []), multi: false });
  }, []);

  const pick = useCallback((key: string, how: { toggle?: boolean; range?: boolean }) => {
    const keys = list.current.filter((e) => e.kind !== 'upload').map((e) => e.key);
    setSel((cur) => {
      if (how.range) {
        const from = keys.indexOf(anchor.current ?? key);
        const to = keys.indexOf(key);
        if (from < 0 || to < 0) return { active: key, selected: new Set([key]), multi: false };
        const [a, b] = from < to ? [from, to] : [to, from];
        const range = keys.slice(a, b + 1);
        const selected = new Set(how.toggle ? [...cur.selected, ...range] : range);
        return { active: key, selected, multi: true };
      }
      anchor.current = key;
      if (how.toggle) {
        const selected = new Set(cur.selected);
        if (selected.has(key)) selected.delete(key);
        else selected.add(key);
        return { active: key, selected, multi: true };
      }
      return { active: key, selected: new Set([key]), multi: false };
    });
  }, []);

  const selectAll = useCallback(() => {
    const keys = list.current.filter((e) => e.kind !== 'upload').map((e) => e.key);
    setSel((cur) => ({ active: cur.active ?? keys[0] ?? null, selected: new Set(keys), multi: keys.length > 0 }));
  }, []);

  const clear = useCallback(() => setSel((cur) => ({ active: cur.active, selected: new Set(), multi: false })), []);

  // What left the view (deleted, moved away) is no longer selected.
  const chosen = useMemo(() => entries.filter((e) => e.kind !== 'upload' && sel.selected.has(e.key)), [entries, sel.selected]);

  return { ...sel, setActive, pick, selectAll, clear, chosen };
}
