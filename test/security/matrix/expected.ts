/**
 * What each caller may do, written once, apart from the code under test (src/service/policy.ts):
 * the matrix holds every operation of every dialect to this table.
 */
import type { MatrixCaller, Place, Scope } from './callers.js';

/** What an operation is, for the table: a kind of access, and the part of the tree it touches. */
export type Need =
  | { kind: 'public' }
  | { kind: 'edge' }
  | { kind: 'session' }
  /** The root key and its sessions only, whatever a key's scopes. */
  | { kind: 'root' }
  /** A call of the programmatic interface (or S3, or tus) that a key needs all of `scopes` for. */
  | { kind: 'scoped'; scopes: readonly Scope[]; grants?: boolean; wholeTree?: boolean };

/** Where the operation's target lies: in the place given, at the root (above every confined caller), or nowhere. */
export type Target = 'place' | 'root' | 'none';

export const NEEDS = {
  public: { kind: 'public' },
  edge: { kind: 'edge' },
  session: { kind: 'session' },
  'see edges': { kind: 'root' },
  'read files': { kind: 'scoped', scopes: ['read'] },
  'change files': { kind: 'scoped', scopes: ['write'] },
  'read folders': { kind: 'scoped', scopes: ['read'] },
  'change folders': { kind: 'scoped', scopes: ['write'] },
  upload: { kind: 'scoped', scopes: ['write'], grants: true },
  'make grants': { kind: 'scoped', scopes: ['write'] },
  'manage keys': { kind: 'scoped', scopes: ['admin'] },
  'manage webhooks': { kind: 'scoped', scopes: ['admin'] },
  /** Deliveries carry names, sizes and hashes: what `read` shows. */
  'make webhooks': { kind: 'scoped', scopes: ['admin', 'read'] },
  'copy files': { kind: 'scoped', scopes: ['read', 'write'] },
  /** Open uploads' names and their parts' MD5s are what `read` shows. */
  'list uploads': { kind: 'scoped', scopes: ['read', 'write'] },
  'read usage': { kind: 'scoped', scopes: ['read'], wholeTree: true },
} as const satisfies Record<string, Need>;

export type NeedName = keyof typeof NEEDS;

export interface Cell {
  need: NeedName;
  target: Target;
  /** S3 knows keys only: the root key, sessions and grants have no SigV4 form. */
  s3: boolean;
  caller: MatrixCaller;
  place: Place;
}

/** Whether the cell's caller may take the operation: the answer the matrix expects. */
export function allowed(c: Cell): boolean {
  const need: Need = NEEDS[c.need];
  if (need.kind === 'public') return true;
  if (need.kind === 'edge') return false;
  if (need.kind === 'session') return c.caller.kind === 'session';
  if (need.kind === 'root') return c.caller.kind === 'root' || c.caller.kind === 'session';
  const who = c.caller;
  if (who.kind === 'dead') return false;
  if (c.s3 && who.kind !== 'key') return false;
  if (who.kind === 'root' || who.kind === 'session') return true;
  if (who.kind === 'grant') return need.grants === true && c.target === 'place' && c.place === 'in';
  if (!need.scopes.every((s) => who.scopes.includes(s))) return false;
  if (!who.confined) return true;
  if (need.wholeTree) return false;
  if (c.target === 'none') return true;
  return c.target === 'place' && c.place === 'in';
}

/**
 * The answers that count as a refusal: 401 for a dead credential, 403 for a missing scope, 404
 * for a target out of reach (as if it did not exist).
 */
export function refusalStatuses(c: Cell): number[] {
  // S3 refuses an Authorization header that is not SigV4 as malformed (400), as S3 does.
  if (c.s3) return c.caller.s3 ? [403, 404] : [400, 403];
  const need: Need = NEEDS[c.need];
  if (need.kind === 'edge' || need.kind === 'session') return [401, 403];
  const who = c.caller;
  if (who.kind === 'dead') return [401];
  if (need.kind === 'root') return [403];
  if (need.kind === 'scoped' && who.kind === 'key' && need.scopes.every((s) => who.scopes.includes(s)) && !need.wholeTree) return [404];
  return [403, 404];
}
