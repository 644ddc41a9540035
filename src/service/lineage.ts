/**
 * Key lineage (contract §10, docs/security.md "Key lineage"): a key or grant is worth no more
 * than the keys that made it. One walk up the chain of makers, used by every way in (Bearer
 * keys, S3 signatures, upload grants), and the bounds a new key or grant must keep within:
 * no scope its maker lacks, no expiry past its maker's, no deeper than MAX_KEY_DEPTH.
 */
import { errors } from '../core/errors.js';
import { isoTime } from '../core/records.js';
import type { Caller, Scope, StoredGrant, StoredKey } from '../core/access.js';
import type { KeyRows } from '../core/ports.js';

/** How many keys a chain may hold, the root-made one included; a longer chain is refused. */
export const MAX_KEY_DEPTH = 8;

/**
 * Whether a key or grant works now. `depth` counts the keys of its chain (0 for a root-made
 * grant); `expiresAt` is the earliest expiry along it. When it does not work, `own` tells
 * whether the reason is its own or that of a key above it; `rotated`: made by a root key
 * that is no longer the origin's.
 */
export type Standing =
  | { ok: true; depth: number; expiresAt: number | null }
  | { ok: false; reason: 'revoked' | 'expired' | 'broken' | 'rotated'; own: boolean };

type KeyReader = Pick<KeyRows, 'get'>;

const earliest = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.min(a, b));

/**
 * Walks from a key up through its makers to the root key: every key on the way must be
 * unrevoked and unexpired at `now`. A missing maker, a cycle or a chain longer than
 * MAX_KEY_DEPTH is `broken`: refused rather than trusted.
 */
export async function keyStanding(keys: KeyReader, key: StoredKey, now: number): Promise<Standing> {
  let row = key;
  let expiresAt: number | null = null;
  const seen = new Set<string>();
  for (let depth = 1; ; depth++) {
    const own = depth === 1;
    if (row.revoked_at !== null) return { ok: false, reason: 'revoked', own };
    if (row.expires_at !== null && row.expires_at <= now) return { ok: false, reason: 'expired', own };
    expiresAt = earliest(expiresAt, row.expires_at);
    if (row.created_by === 'root') return { ok: true, depth, expiresAt };
    seen.add(row.id);
    if (depth >= MAX_KEY_DEPTH || seen.has(row.created_by)) return { ok: false, reason: 'broken', own: false };
    const maker = await keys.get(row.created_by);
    if (!maker) return { ok: false, reason: 'broken', own: false };
    row = maker;
  }
}

/**
 * A grant works until its own expiry, while the chain of the key that made it works; a
 * root-made grant, while the root key is the one it was made with (`rootPrint`, null when
 * the origin has none).
 */
export async function grantStanding(keys: KeyReader, grant: StoredGrant, now: number, rootPrint: string | null): Promise<Standing> {
  if (grant.expires_at <= now) return { ok: false, reason: 'expired', own: true };
  if (grant.created_by === 'root') {
    const same = rootPrint !== null && grant.root_fingerprint === rootPrint;
    return same ? { ok: true, depth: 0, expiresAt: grant.expires_at } : { ok: false, reason: 'rotated', own: false };
  }
  const maker = await keys.get(grant.created_by);
  if (!maker) return { ok: false, reason: 'broken', own: false };
  const standing = await keyStanding(keys, maker, now);
  return standing.ok ? { ...standing, expiresAt: earliest(standing.expiresAt, grant.expires_at) } : { ...standing, own: false };
}

/** What a new key or grant inherits from the caller making it. `scopes` null: every scope (the root key). */
export interface Maker {
  createdBy: string;
  depth: number;
  scopes: ReadonlySet<Scope> | null;
  expiresAt: number | null;
}

const ROOT_MAKER: Maker = { createdBy: 'root', depth: 0, scopes: null, expiresAt: null };

/** The maker of a new key or grant, its chain read again now; 401 when it stopped working since the request began. */
export async function makerOf(keys: KeyReader, caller: Caller, now: number): Promise<Maker> {
  if (caller.kind === 'root') return ROOT_MAKER;
  if (caller.kind !== 'key') throw errors.forbidden('Only keys make keys and grants.');
  const row = await keys.get(caller.keyId);
  const standing = row ? await keyStanding(keys, row, now) : null;
  if (!row || !standing?.ok) throw errors.unauthorized('This key no longer works.');
  return { createdBy: row.id, depth: standing.depth, scopes: caller.scopes, expiresAt: standing.expiresAt };
}

/** A new key's scopes: only the root key gives `admin`; a key gives only scopes it holds; and a chain is bounded. */
export function checkChildKey(maker: Maker, scopes: readonly Scope[]): void {
  if (maker.scopes === null) return;
  if (scopes.includes('admin')) throw errors.forbidden('Only the root key makes keys with the "admin" scope.', { field: 'scopes' });
  const lacking = scopes.find((s) => !maker.scopes!.has(s));
  if (lacking !== undefined) {
    throw errors.forbidden(`This key cannot give the "${lacking}" scope: it does not hold it.`, { field: 'scopes', scope: lacking });
  }
  if (maker.depth + 1 > MAX_KEY_DEPTH) {
    throw errors.forbidden(`Keys are made at most ${MAX_KEY_DEPTH} deep from the root key; make this one with a key nearer the root.`);
  }
}

/**
 * When a new key or grant expires: `asked` seconds from now, refused (400) when that is past
 * its maker's expiry; not asked, `fallback` seconds (null: never) cut to the maker's expiry.
 * An explicit ask is never shortened silently; an absent one lives as long as it may.
 */
export function expiryWithin(maker: Maker, asked: number | null, fallback: number | null, now: number): number | null {
  const limit = maker.expiresAt;
  if (asked !== null) {
    const at = now + asked * 1000;
    if (limit !== null && at > limit) {
      const most = Math.max(0, Math.floor((limit - now) / 1000));
      throw errors.invalidField('invalid_expiry', 'expires_in',
        `"expires_in" may be at most ${most} seconds: the key making it expires at ${isoTime(limit)}. Leave it out to expire with that key.`,
        { max_expires_in: most, maker_expires_at: isoTime(limit) });
    }
    return at;
  }
  return earliest(fallback === null ? null : now + fallback * 1000, limit);
}
