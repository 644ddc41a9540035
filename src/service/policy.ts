/**
 * The one authorization decision (contract §10, docs/security.md "One decision"): whether a
 * caller may take an action, and on which part of the tree. Every dialect (the JSON interface,
 * raw parts, tus, S3, webhooks, keys, grants, sessions, usage) names its operation's action
 * here; none decides on its own. The rows of RULES are the policy; the matrix test
 * (test/security/authorization-matrix.test.ts) holds every operation of every dialect to them.
 */
import { errors } from '../core/errors.js';
import type { Caller, Scope } from '../core/access.js';
import type { MetadataTx, StoredFile } from '../core/ports.js';
import { fileInReach, reachOf, requireFolderInReach } from './access.js';

/** What an action needs of its caller. */
export interface Rule {
  /** The scope a key must hold; the root key and its sessions hold every scope. */
  scope: Scope;
  /** Upload grants may take it too (their limits are checked at initiate). */
  grants?: boolean;
  /** Only a caller whose reach is the whole tree may take it: it covers every file at once. */
  wholeTree?: boolean;
  /** A second scope a key must hold too (a webhook's deliveries carry what `read` shows). */
  alsoScope?: Scope;
  /** Only the root key and its Playground sessions may take it, whatever a key's scopes: it shows the deployment itself. */
  rootOnly?: boolean;
}

/**
 * Every action, by what it touches. A dialect's operation maps to exactly one of these (the
 * matrix test lists the mapping); adding an action means adding its row here.
 */
export const RULES = {
  'file.read': { scope: 'read' },
  'file.write': { scope: 'write' },
  'file.revoke-links': { scope: 'write' },
  'folder.read': { scope: 'read' },
  'folder.write': { scope: 'write' },
  'upload': { scope: 'write', grants: true },
  /** Open uploads' names and their parts' MD5s are what `read` shows. */
  'upload.list': { scope: 'write', alsoScope: 'read' },
  'grant.create': { scope: 'write' },
  'key.create': { scope: 'admin' },
  'key.read': { scope: 'admin' },
  'key.revoke': { scope: 'admin' },
  'webhook.create': { scope: 'admin', alsoScope: 'read' },
  'webhook.read': { scope: 'admin' },
  'webhook.write': { scope: 'admin' },
  'usage.read': { scope: 'read', wholeTree: true },
  /** The delivery network: edges' names, parents, state and counts. */
  'edges.read': { scope: 'admin', rootOnly: true },
} as const satisfies Record<string, Rule>;

export type Action = keyof typeof RULES;

const ACTIONS = RULES as Record<Action, Rule>;

/**
 * Throws 403 unless the caller may take `action` at all (its scope, its kind). Where the
 * action touches a folder or file, `authorizeFolder`/`authorizeFile` also check the reach.
 */
export function authorize(caller: Caller, action: Action): void {
  const rule = ACTIONS[action];
  switch (caller.kind) {
    case 'root':
      return;
    case 'edge':
      throw errors.forbidden('Edges read the feed only.');
    case 'grant':
      if (rule.grants) return;
      throw errors.forbidden('An upload grant allows uploads only.');
    case 'key':
      if (rule.rootOnly) throw errors.forbidden('Only the root key, or a Playground session, may do this.');
      if (!caller.scopes.has(rule.scope)) throw errors.forbidden(`This key lacks the "${rule.scope}" scope.`, { scope: rule.scope });
      if (rule.alsoScope && !caller.scopes.has(rule.alsoScope)) {
        throw errors.forbidden(`This key lacks the "${rule.alsoScope}" scope.`, { scope: rule.alsoScope });
      }
      if (rule.wholeTree && caller.folderId !== null) {
        throw errors.forbidden('This covers every file; a key confined to a folder cannot do it.');
      }
  }
}

/**
 * `authorize`, then the folder (null: the root) must lie in the caller's reach; outside, 404
 * as if it did not exist. Whether the folder exists is the caller of this to check.
 */
export async function authorizeFolder(tx: MetadataTx, caller: Caller, action: Action, folderId: string | null, field = 'folder_id'): Promise<void> {
  authorize(caller, action);
  await requireFolderInReach(tx, caller, folderId, field);
}

/** `authorize`, then whether the caller reaches this file (its subtree; for a grant, its own upload). */
export async function authorizeFile(tx: MetadataTx, caller: Caller, action: Action, file: StoredFile): Promise<boolean> {
  authorize(caller, action);
  return fileInReach(tx, caller, file);
}

/**
 * A confined caller's own folder is the root of everything it reaches: renaming, moving or
 * deleting it would leave the caller confined to nothing, and a rename would tell it which
 * names its parent holds. Changing its visibility stays allowed.
 */
export function requireNotOwnTop(caller: Caller, folderId: string): void {
  const top = reachOf(caller);
  if (top !== null && top === folderId) {
    throw errors.forbidden('This credential is confined to this folder: it cannot rename, move or delete the folder itself.', { folder_id: folderId });
  }
}

/** Whether the caller holds `scope` (no throw): what a record may show, e.g. a no-op update's answer. */
export function holds(caller: Caller, scope: Scope): boolean {
  if (caller.kind === 'root') return true;
  return caller.kind === 'key' && caller.scopes.has(scope);
}

export { reachOf };
