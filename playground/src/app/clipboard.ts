/** Copies text: the Clipboard API where allowed, a selected text field otherwise. */
export async function copyText(text: string): Promise<void> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return;
    }
  } catch {
    // Fall through to the older way (e.g. the page lost focus).
  }
  const host = document.querySelector('dialog[open]') ?? document.body;
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'clipboard-helper';
  host.appendChild(area);
  const previous = document.activeElement as HTMLElement | null;
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  previous?.focus({ preventScroll: true });
  if (!ok) throw new Error('The browser did not allow copying. Select the text and copy it yourself.');
}
