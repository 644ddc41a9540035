/**
 * Short confirmations and failures in the corner, announced to screen readers.
 * Failures stay longer and are announced assertively.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { AlertIcon, CheckIcon, CloseIcon, InfoIcon } from './icons.js';

export interface Toast {
  id: number;
  kind: 'success' | 'info' | 'error';
  message: string;
  detail?: string;
  action?: { label: string; run: () => void };
}

let nextId = 1;
let toasts: Toast[] = [];
const listeners = new Set<(t: Toast[]) => void>();
const timers = new Map<number, ReturnType<typeof setTimeout>>();

function emit(): void {
  for (const fn of listeners) fn(toasts);
}

export function dismissToast(id: number): void {
  clearTimeout(timers.get(id));
  timers.delete(id);
  toasts = toasts.filter((t) => t.id !== id);
  emit();
}

export function toast(t: Omit<Toast, 'id'>): number {
  const id = nextId++;
  toasts = [...toasts.slice(-3), { ...t, id }];
  const ms = t.kind === 'error' ? 9000 : t.action || t.detail ? 7000 : 4000;
  timers.set(id, setTimeout(() => dismissToast(id), ms));
  emit();
  return id;
}

export const toastSuccess = (message: string, more: Partial<Omit<Toast, 'id' | 'kind' | 'message'>> = {}) => toast({ kind: 'success', message, ...more });
export const toastInfo = (message: string, more: Partial<Omit<Toast, 'id' | 'kind' | 'message'>> = {}) => toast({ kind: 'info', message, ...more });
export const toastError = (message: string, more: Partial<Omit<Toast, 'id' | 'kind' | 'message'>> = {}) => toast({ kind: 'error', message, ...more });

export function Toasts(): JSX.Element {
  const [list, setList] = useState(toasts);
  useEffect(() => {
    listeners.add(setList);
    return () => { listeners.delete(setList); };
  }, []);
  const polite = list.filter((t) => t.kind !== 'error');
  const urgent = list.filter((t) => t.kind === 'error');
  return (
    <div class="toasts">
      <div class="toast-stack" role="status" aria-live="polite">
        {polite.map((t) => <ToastView key={t.id} t={t} />)}
      </div>
      <div class="toast-stack" role="alert" aria-live="assertive">
        {urgent.map((t) => <ToastView key={t.id} t={t} />)}
      </div>
    </div>
  );
}

function ToastView({ t }: { t: Toast }): JSX.Element {
  const Icon = t.kind === 'error' ? AlertIcon : t.kind === 'success' ? CheckIcon : InfoIcon;
  return (
    <div class={`toast toast-${t.kind}`} data-testid="toast">
      <span class="toast-icon"><Icon size={18} /></span>
      <div class="toast-body">
        <p class="toast-message">{t.message}</p>
        {t.detail && <p class="toast-detail">{t.detail}</p>}
        {t.action && (
          <button type="button" class="btn btn-link toast-action" onClick={() => { t.action!.run(); dismissToast(t.id); }}>
            {t.action.label}
          </button>
        )}
      </div>
      <button type="button" class="icon-btn toast-close" aria-label="Dismiss notification" onClick={() => dismissToast(t.id)}>
        <CloseIcon size={16} />
      </button>
    </div>
  );
}
