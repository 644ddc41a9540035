/**
 * A real modal dialog: `<dialog>` opened with showModal (the page behind is inert and
 * focus stays inside), closed by Escape, its close button or the backdrop; focus returns
 * to where it was when the dialog opened.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useLayoutEffect, useRef } from 'preact/hooks';
import { CloseIcon } from '../icons.js';

let counter = 0;

export interface ModalProps {
  title: string;
  /** A sentence under the title; also the dialog's description. */
  description?: ComponentChildren;
  onClose: () => void;
  children?: ComponentChildren;
  /** Buttons at the bottom, right-aligned. */
  footer?: ComponentChildren;
  /** A submit handler makes the body a form (Enter submits). */
  onSubmit?: () => void;
  size?: 'small' | 'medium' | 'large';
  /** data-testid for tests. */
  testId?: string;
  icon?: ComponentChildren;
  tone?: 'danger';
}

export function Modal(props: ModalProps): JSX.Element {
  const ref = useRef<HTMLDialogElement>(null);
  const ids = useRef<{ title: string; desc: string } | null>(null);
  if (!ids.current) {
    const n = ++counter;
    ids.current = { title: `dialog-title-${n}`, desc: `dialog-desc-${n}` };
  }
  const onClose = useRef(props.onClose);
  onClose.current = props.onClose;

  useLayoutEffect(() => {
    const dialog = ref.current!;
    const opener = document.activeElement as HTMLElement | null;
    // Listening before showModal: an Escape pressed at once must reach onClose, not close
    // the element behind the component's back.
    let mounted = true;
    const cancel = (e: Event) => {
      e.preventDefault();
      onClose.current();
    };
    // A cancel the browser refuses to let us prevent still closes the element: show it again
    // and let the owner decide, so what is on screen matches the component.
    const closed = () => {
      if (!mounted) return;
      dialog.showModal();
      onClose.current();
    };
    dialog.addEventListener('cancel', cancel);
    dialog.addEventListener('close', closed);
    if (!dialog.open) dialog.showModal();
    // The first field, else the first button that is not the close button.
    const first = dialog.querySelector<HTMLElement>('[data-autofocus]') ?? dialog.querySelector<HTMLElement>('input:not([type=hidden]):not([disabled]), select, textarea');
    first?.focus();
    if (first instanceof HTMLInputElement && first.type === 'text' && first.dataset.select !== 'none') {
      const end = first.dataset.selectEnd ? Number(first.dataset.selectEnd) : first.value.length;
      first.setSelectionRange(0, end);
    }
    return () => {
      mounted = false;
      dialog.removeEventListener('cancel', cancel);
      dialog.removeEventListener('close', closed);
      if (dialog.open) dialog.close();
      // Back to the opener, or to the file view when the opener is gone (a deleted row).
      const target = opener && opener.isConnected ? opener : document.querySelector<HTMLElement>('[data-focus-home]');
      requestAnimationFrame(() => target?.focus({ preventScroll: true }));
    };
  }, []);

  const body = (
    <>
      <header class="dialog-header">
        {props.icon && <span class={'dialog-icon' + (props.tone ? ' tone-' + props.tone : '')}>{props.icon}</span>}
        <div class="dialog-titles">
          <h2 id={ids.current.title} class="dialog-title">{props.title}</h2>
          {props.description && <div id={ids.current.desc} class="dialog-desc">{props.description}</div>}
        </div>
        <button type="button" class="icon-btn dialog-close" aria-label="Close dialog" onClick={() => onClose.current()}>
          <CloseIcon />
        </button>
      </header>
      {props.children && <div class="dialog-body">{props.children}</div>}
      {props.footer && <footer class="dialog-footer">{props.footer}</footer>}
    </>
  );

  return (
    <dialog
      ref={ref}
      class={`dialog dialog-${props.size ?? 'medium'}`}
      aria-labelledby={ids.current.title}
      aria-describedby={props.description ? ids.current.desc : undefined}
      data-testid={props.testId}
      onMouseDown={(e) => {
        // A press on the backdrop (the dialog element itself, outside its box) closes it.
        const el = ref.current;
        if (el && e.target === el) {
          const r = el.getBoundingClientRect();
          const inside = e.clientX >= r.left && e.clientX <= r.right && e.clientY >= r.top && e.clientY <= r.bottom;
          if (!inside) onClose.current();
        }
      }}
    >
      {props.onSubmit ? (
        <form method="dialog" class="dialog-form" onSubmit={(e) => { e.preventDefault(); props.onSubmit!(); }}>
          {body}
        </form>
      ) : (
        <div class="dialog-form">{body}</div>
      )}
    </dialog>
  );
}
