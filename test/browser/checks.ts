/** Checks the browser tests share: an axe-core scan, and what a page keeps beyond its memory. */
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const require = createRequire(import.meta.url);
const AXE = require.resolve('axe-core/axe.min.js');

export type AxeFinding = { id: string; impact: string; nodes: string[] };

/** Waits for every finite animation (a dialog fading in, a toast sliding up) to end. */
export async function settled(page: Page): Promise<void> {
  await page.evaluate(() => Promise.all(document.getAnimations()
    .filter((a) => a.effect?.getTiming().iterations !== Infinity) // spinners never finish
    .map((a) => a.finished.catch(() => undefined))));
}

/** Serious and critical axe-core findings on the page as it is. */
export async function axeScan(page: Page): Promise<AxeFinding[]> {
  await page.addScriptTag({ path: AXE });
  // Colours are judged once transitions (a dialog fading in) have settled, not midway.
  await settled(page);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) }));
  });
}

/**
 * Everything the page has put where it outlives the page's memory, as one text: the
 * address, the cookies scripts can read, localStorage, sessionStorage, and every key and
 * value of every IndexedDB store.
 */
export function persistedText(page: Page): Promise<string> {
  return page.evaluate(async () => {
    const dump: string[] = [location.href, document.cookie];
    for (const s of [localStorage, sessionStorage]) for (let i = 0; i < s.length; i++) dump.push(s.key(i)!, s.getItem(s.key(i)!)!);
    const all = <T>(r: IDBRequest<T>) => new Promise<T>((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
    for (const info of await indexedDB.databases()) {
      const db = await new Promise<IDBDatabase>((res, rej) => { const r = indexedDB.open(info.name!); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
      for (const name of Array.from(db.objectStoreNames)) {
        const store = db.transaction(name).objectStore(name);
        dump.push(name, JSON.stringify(await all(store.getAllKeys())), JSON.stringify(await all(store.getAll())));
      }
      db.close();
    }
    return dump.join('\n');
  });
}
