/**
 * The keyboard and menu anchoring both file views share: arrows, Page Up/Down, Home/End move
 * the active entry (keeping its row in view), the other commands act on it (views.ts).
 */
import { useEffect, useLayoutEffect, useRef, type MutableRef } from 'preact/hooks';
import { domId } from './entries.js';
import type { MenuAnchor } from './Menu.js';
import { commandKey, moveTarget, moveTo, type ViewProps } from './views.js';
import { scrollRowIntoView } from './virtual.js';

export interface GridShape {
  /** Entries per row: 1 for the list. */
  cols: number;
  rowH: number;
  /** Space above the first row (the list's header), and the margin kept when scrolling a row into view. */
  top: number;
  margin: number;
  /** The scroller's height, for Page Up/Down. */
  height: number;
}

export function useGridKeys(props: ViewProps, scroller: MutableRef<HTMLDivElement | null>, grid: MutableRef<HTMLDivElement | null>, shape: GridShape) {
  const count = props.entries.length;
  const activeIndex = props.activeKey === null ? -1 : props.entries.findIndex((e) => e.key === props.activeKey);
  const show = (index: number) => {
    if (scroller.current) scrollRowIntoView(scroller.current, Math.floor(index / shape.cols), shape.rowH, shape.top, shape.margin);
  };

  useLayoutEffect(() => {
    if (scroller.current) scroller.current.scrollTop = 0;
  }, [props.resetKey]);

  // Keep the active row in view (and in the page, for aria-activedescendant).
  const follow = useRef(false);
  useEffect(() => {
    if (follow.current && activeIndex >= 0) show(activeIndex);
    follow.current = false;
  }, [activeIndex]);

  const anchorFor = (key: string): MenuAnchor => {
    const btn = document.querySelector<HTMLElement>(`#${domId(key)} .more-btn`);
    const r = btn?.getBoundingClientRect();
    return { x: r ? r.right - 4 : 200, y: r ? r.bottom + 4 : 200, returnTo: grid.current };
  };

  const onKeyDown = (e: KeyboardEvent) => {
    const to = moveTarget(e.key, activeIndex, count, shape.cols, Math.floor(shape.height / shape.rowH));
    if (to !== null && !e.altKey) {
      e.preventDefault();
      follow.current = true;
      moveTo(e, to, props);
      if (to === activeIndex) show(to);
      return;
    }
    const entry = activeIndex >= 0 ? props.entries[activeIndex] : undefined;
    if (commandKey(e, entry, props, () => anchorFor(entry!.key))) e.preventDefault();
  };

  return { activeIndex, onKeyDown };
}
