/**
 * Preferences kept across visits: the view and the sort, and nothing else (never the key).
 */
import type { View } from './url.js';

export type SortField = 'name' | 'size' | 'updated_at' | 'created_at';
export type SortOrder = 'asc' | 'desc';
export interface Sort { field: SortField; order: SortOrder }

const KEY = 'coffer.playground.prefs';

interface Prefs { view: View; sort: Sort }

const DEFAULTS: Prefs = { view: 'grid', sort: { field: 'name', order: 'asc' } };

function read(): Prefs {
  try {
    const raw = localStorage.getItem(KEY);
    if (!raw) return DEFAULTS;
    const v = JSON.parse(raw) as Partial<Prefs>;
    const view = v.view === 'list' || v.view === 'grid' ? v.view : DEFAULTS.view;
    const f = v.sort?.field;
    const o = v.sort?.order;
    const sort: Sort = {
      field: f === 'name' || f === 'size' || f === 'updated_at' || f === 'created_at' ? f : DEFAULTS.sort.field,
      order: o === 'asc' || o === 'desc' ? o : DEFAULTS.sort.order,
    };
    return { view, sort };
  } catch {
    return DEFAULTS;
  }
}

function write(p: Prefs): void {
  try {
    localStorage.setItem(KEY, JSON.stringify({ view: p.view, sort: p.sort }));
  } catch {
    // Storage may be full or disabled: preferences are a convenience.
  }
}

export const loadPrefs = (): Prefs => read();
export const saveView = (view: View): void => write({ ...read(), view });
export const saveSort = (sort: Sort): void => write({ ...read(), sort });

/** The order a column starts in when first chosen: names A–Z, the biggest and newest first. */
export const defaultOrder = (field: SortField): SortOrder => (field === 'name' ? 'asc' : 'desc');
