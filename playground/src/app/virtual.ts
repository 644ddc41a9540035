/**
 * Windowing for big folders: only the rows in view (plus a few either side) are in the
 * page. Rows have one fixed height, so the window is arithmetic.
 */
import { useEffect, useLayoutEffect, useState, type MutableRef } from 'preact/hooks';

export interface Viewport {
  scrollTop: number;
  height: number;
  width: number;
}

/**
 * The scroll position and size of a scrolling element. Browsers fire scroll events once per
 * frame, just before drawing it, so reading them at once renders the new rows in that frame.
 */
export function useViewport(ref: MutableRef<HTMLElement | null>): Viewport {
  const [vp, setVp] = useState<Viewport>({ scrollTop: 0, height: 600, width: 800 });
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => {
      setVp((old) => {
        const next = { scrollTop: el.scrollTop, height: el.clientHeight, width: el.clientWidth };
        return old.scrollTop === next.scrollTop && old.height === next.height && old.width === next.width ? old : next;
      });
    };
    measure();
    el.addEventListener('scroll', measure, { passive: true });
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => {
      el.removeEventListener('scroll', measure);
      ro.disconnect();
    };
  }, [ref.current]);
  return vp;
}

export interface Window {
  start: number;
  end: number;
  total: number;
}

/** Which rows to render: [start, end) of `count` rows of `rowHeight` below `offset` pixels. */
export function windowOf(vp: Viewport, count: number, rowHeight: number, offset = 0, overscan = 6): Window {
  const top = Math.max(0, vp.scrollTop - offset);
  const first = Math.floor(top / rowHeight);
  const visible = Math.ceil(vp.height / rowHeight) + 1;
  const start = Math.max(0, first - overscan);
  const end = Math.min(count, first + visible + overscan);
  return { start, end, total: count * rowHeight };
}

/** Scrolls so row `index` is fully in view, below a sticky header of `offset` pixels. */
export function scrollRowIntoView(el: HTMLElement, index: number, rowHeight: number, offset = 0, padTop = 0): void {
  const top = padTop + index * rowHeight;
  const bottom = top + rowHeight;
  const viewTop = el.scrollTop + offset;
  const viewBottom = el.scrollTop + el.clientHeight;
  if (top < viewTop) el.scrollTop = top - offset;
  else if (bottom > viewBottom) el.scrollTop = bottom - el.clientHeight;
}

/** Calls `load` when the window nears the end of what is loaded. */
export function useNearEnd(win: Window, count: number, hasMore: boolean, busy: boolean, load: () => void, threshold = 30): void {
  useEffect(() => {
    if (hasMore && !busy && win.end >= count - threshold) load();
  }, [win.end, count, hasMore, busy]);
}
