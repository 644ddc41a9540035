/**
 * The reach of a caller (contract §10): the folder a key or grant is confined to, what lies
 * in it, and what a grant may upload. The decision itself is policy.ts's, which builds on this.
 */
import { errors } from '../core/errors.js';
import { contentTypeAllowed, type Caller } from '../core/access.js';
import type { MetadataTx, StoredFile } from '../core/ports.js';
import { chainIsComplete } from './records.js';

/** The folder whose subtree bounds what the caller reaches, or null for the whole tree. */
export function reachOf(caller: Caller): string | null {
  if (caller.kind === 'key') return caller.folderId;
  if (caller.kind === 'grant') return caller.grant.folder_id;
  return null;
}

/** Whether `folderId` (null: the root) lies in the subtree of `top` (the folder itself included). */
async function inSubtree(tx: MetadataTx, top: string, folderId: string | null): Promise<boolean> {
  if (folderId === null) return false;
  if (folderId === top) return true;
  const chain = await tx.folderChain(folderId);
  // A chain cut short has ancestors unseen: fail closed.
  return chainIsComplete(chain) && chain.some((f) => f.id === top);
}

/**
 * Throws 404, as if it did not exist, when a confined caller names a folder outside its
 * subtree (null: the root). Whether the folder exists is the caller of this to check.
 */
export async function requireFolderInReach(tx: MetadataTx, caller: Caller, folderId: string | null, field = 'folder_id'): Promise<void> {
  const top = reachOf(caller);
  if (top === null || (await inSubtree(tx, top, folderId))) return;
  if (folderId === null) {
    throw errors.outOfReach(`This credential reaches only folder "${top}" and what is inside it: give "${field}" inside it.`);
  }
  throw errors.folderNotFound(folderId, field);
}

/** Whether the caller may see this file: inside its subtree, and for a grant, its own upload. */
export async function fileInReach(tx: MetadataTx, caller: Caller, file: StoredFile): Promise<boolean> {
  if (caller.kind === 'grant' && file.grant_id !== caller.grant.id) return false;
  const top = reachOf(caller);
  return top === null || inSubtree(tx, top, file.folder_id);
}

/** What an upload asks for, checked against a grant's limits at initiate. */
export interface UploadAsk {
  folderId: string | null;
  visibility: string;
  size: number;
  contentType: string;
}

/** Where an upload goes when it names no folder: the caller's own folder (a confined key's, a grant's), else the root. */
export const defaultUploadFolder = (caller: Caller): string | null => reachOf(caller);

/** Throws 403 (413 for the size) unless a grant allows this upload; the count is taken in the initiate's transaction. */
export function checkGrantLimits(caller: Caller, ask: UploadAsk, now: number): void {
  if (caller.kind !== 'grant') return;
  const g = caller.grant;
  if (g.expires_at <= now) throw errors.unauthorized('The upload grant has expired; ask the application for a new one.');
  if (g.visibility !== null && ask.visibility !== g.visibility) {
    throw errors.forbidden(`This grant uploads ${g.visibility} files only.`, { field: 'visibility', allowed: g.visibility });
  }
  if (ask.size > g.max_size) throw errors.fileTooLarge(g.max_size);
  if (g.content_types !== null) {
    const allowed = JSON.parse(g.content_types) as string[];
    if (!contentTypeAllowed(allowed, ask.contentType)) {
      throw errors.forbidden(`This grant allows ${allowed.join(', ')} only, not ${ask.contentType}.`, { field: 'content_type', allowed });
    }
  }
}

/** Counts the upload against its grant, in the initiate's transaction. */
export async function takeGrantFile(tx: MetadataTx, caller: Caller): Promise<void> {
  if (caller.kind !== 'grant') return;
  if (!(await tx.grants.use(caller.grant.id))) {
    throw errors.forbidden(`This grant allows ${caller.grant.max_files} file(s) and all have been started.`, { max_files: caller.grant.max_files });
  }
}

/**
 * What a caller sees of the tree by path (the S3 interface, contract §12): everything, or its
 * own folder's subtree plus the folders on the way down to it, which it must name to get there
 * (their names only: no file and no other folder of theirs).
 */
export type Sight = { top: string; above: ReadonlySet<string> } | null;

/** Where a folder stands in a caller's sight: in its reach, on the way to it. */
export type Place = 'inside' | 'above';

export async function sightOf(tx: MetadataTx, caller: Caller): Promise<Sight> {
  const top = reachOf(caller);
  if (top === null) return null;
  const chain = await tx.folderChain(top);
  // A chain cut short has ancestors unseen: the caller sees its subtree alone.
  const above = chainIsComplete(chain) ? chain.slice(1).map((f) => f.id) : [];
  return { top, above: new Set(above) };
}

/** The root's place: above a confined caller's folder, inside an unconfined caller's reach. */
export const rootPlace = (sight: Sight): Place => (sight === null ? 'inside' : 'above');

/** The place of a folder under a parent of known place; null when the caller does not see it. */
export function childPlace(sight: Sight, parent: Place, folderId: string): Place | null {
  if (parent === 'inside' || sight === null) return 'inside';
  if (folderId === sight.top) return 'inside';
  return sight.above.has(folderId) ? 'above' : null;
}
