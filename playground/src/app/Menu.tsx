/**
 * A pop-up menu of actions (the ⋮ button of a row, a right-click, Shift+F10): arrow keys
 * move, Enter runs, Escape or Tab closes and returns focus to what opened it.
 */
import { Fragment, type ComponentChildren, type JSX } from 'preact';
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks';

export interface MenuItem {
  id: string;
  label: string;
  icon?: ComponentChildren;
  run: () => void;
  danger?: boolean;
  separatorBefore?: boolean;
  hint?: string;
}

export interface MenuAnchor {
  x: number;
  y: number;
  /** The element that opened the menu: focus returns there. */
  returnTo: HTMLElement | null;
}

export function Menu(props: { label: string; items: MenuItem[]; anchor: MenuAnchor; onClose: () => void }): JSX.Element {
  const ref = useRef<HTMLDivElement>(null);
  const onClose = useRef(props.onClose);
  onClose.current = props.onClose;

  useLayoutEffect(() => {
    const menu = ref.current!;
    const r = menu.getBoundingClientRect();
    const pad = 8;
    let x = props.anchor.x;
    let y = props.anchor.y;
    if (x + r.width > innerWidth - pad) x = Math.max(pad, x - r.width);
    if (y + r.height > innerHeight - pad) y = Math.max(pad, innerHeight - pad - r.height);
    menu.style.left = `${x}px`;
    menu.style.top = `${y}px`;
    menu.querySelector<HTMLElement>('[role=menuitem]')?.focus();
    const returnTo = props.anchor.returnTo;
    return () => {
      // Synchronously, so a dialog opened by the item sees the opener focused and returns there.
      if (returnTo?.isConnected) returnTo.focus({ preventScroll: true });
      else document.querySelector<HTMLElement>('[data-focus-home]')?.focus({ preventScroll: true });
    };
  }, []);

  useEffect(() => {
    const away = (e: Event) => {
      if (!ref.current?.contains(e.target as Node)) onClose.current();
    };
    const close = () => onClose.current();
    document.addEventListener('pointerdown', away, true);
    window.addEventListener('resize', close);
    window.addEventListener('blur', close);
    return () => {
      document.removeEventListener('pointerdown', away, true);
      window.removeEventListener('resize', close);
      window.removeEventListener('blur', close);
    };
  }, []);

  const onKeyDown = (e: KeyboardEvent) => {
    const items = Array.from(ref.current!.querySelectorAll<HTMLElement>('[role=menuitem]'));
    const i = items.indexOf(document.activeElement as HTMLElement);
    const go = (n: number) => items[(n + items.length) % items.length]?.focus();
    if (e.key === 'ArrowDown') go(i + 1);
    else if (e.key === 'ArrowUp') go(i - 1);
    else if (e.key === 'Home') go(0);
    else if (e.key === 'End') go(items.length - 1);
    else if (e.key === 'Escape' || e.key === 'Tab') onClose.current();
    else if (e.key.length === 1 && /\S/.test(e.key)) {
      const k = e.key.toLowerCase();
      const from = i + 1;
      const hit = [...items.slice(from), ...items.slice(0, from)].find((el) => el.textContent?.trim().toLowerCase().startsWith(k));
      hit?.focus();
    } else return;
    e.preventDefault();
    e.stopPropagation();
  };

  return (
    <div ref={ref} class="menu" role="menu" aria-label={props.label} onKeyDown={onKeyDown} data-testid="menu">
      {props.items.map((item) => (
        <Fragment key={item.id}>
          {item.separatorBefore && <div class="menu-sep" role="separator" />}
          <button
            type="button" role="menuitem" tabIndex={-1}
            class={'menu-item' + (item.danger ? ' danger' : '')} data-action={item.id}
            onClick={() => { onClose.current(); item.run(); }}
          >
            <span class="menu-icon">{item.icon}</span>
            <span class="menu-label">{item.label}</span>
            {item.hint && <kbd class="menu-hint">{item.hint}</kbd>}
          </button>
        </Fragment>
      ))}
    </div>
  );
}
