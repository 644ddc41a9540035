/**
 * The file manager's page-wide keys: Mod+F searches, Escape ends a selection of several or
 * clears the search, and arrow keys
 * pressed with nothing focused start in the files. Dialogs and menus keep their own keys.
 */
import type { RefObject } from 'preact';
import { useEffect } from 'preact/hooks';
import { navigate } from './state/url.js';

const isMod = (e: KeyboardEvent) => e.metaKey || e.ctrlKey;
const ARROWS = ['ArrowDown', 'ArrowUp', 'ArrowLeft', 'ArrowRight', 'Home', 'End'];

export function usePageKeys(
  state: RefObject<{ dialog: unknown; menu: unknown; q: string; selecting: boolean }>,
  searchRef: RefObject<HTMLInputElement>,
  closeMenu: () => void,
  clearSelection: () => void,
): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const s = state.current!;
      if (isMod(e) && !e.altKey && (e.key === 'f' || e.key === 'F')) {
        if (s.dialog) return;
        e.preventDefault();
        closeMenu();
        searchRef.current?.focus();
        searchRef.current?.select();
        return;
      }
      if (s.dialog || s.menu || e.defaultPrevented) return;
      if (e.key === 'Escape' && s.selecting) {
        e.preventDefault();
        clearSelection();
        return;
      }
      if (e.key === 'Escape' && s.q) {
        e.preventDefault();
        navigate({ q: '' }, 'replace');
        document.querySelector<HTMLElement>('[data-focus-home]')?.focus();
        return;
      }
      if (document.activeElement === document.body && ARROWS.includes(e.key)) {
        const home = document.querySelector<HTMLElement>('[data-focus-home]');
        if (home) {
          e.preventDefault();
          home.focus();
        }
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
}
