/**
 * The one rule for the file of the empty name (FOLDER_KEY_NAME: S3's object `a/` is the file of
 * that name in the folder `a`; docs/s3.md, "Keys and folders"): it never stands at the root or
 * at a bucket's top (directly in a top-level folder), where its key would be "", which no client
 * can name. A file move there is refused (files.ts), and so is a folder move that would make a
 * folder holding one a bucket (tree.ts); the S3 listing skips one that got there anyway
 * (paths.ts), and DeleteBucket says what it is (paths.ts).
 */
import { errors, fail, type CofferError } from '../core/errors.js';
import { FOLDER_KEY_NAME } from '../core/names.js';
import type { MetadataTx, StoredFolder } from '../core/ports.js';

/** Whether a file of this name in this folder (null: the root) would be the key "". */
export const isEmptyKey = (name: string, folder: Pick<StoredFolder, 'parent_id'> | null): boolean =>
  name === FOLDER_KEY_NAME && (folder === null || folder.parent_id === null);

/** A file of the empty name moved to the root or to a bucket's top. */
export const fileToTop = (): CofferError =>
  errors.invalidField('invalid_name', 'folder_id', 'A file with the empty name (an S3 object under a key ending in "/") moves only into a folder inside a top-level folder; rename it first.');

/**
 * 400 invalid_name (field parent_id) when the folder directly holds a ready file of the empty
 * name: moved to the top, it would be a bucket whose object `<name>/` became the key "".
 */
export async function refuseFolderToTop(tx: MetadataTx, folder: StoredFolder): Promise<void> {
  // Locked as a file move into it locks it (files.ts): none comes in between the look and the move.
  await tx.lockFolders([folder.id]);
  const held = await tx.s3.filesNamed(folder.id, FOLDER_KEY_NAME);
  if (held.length === 0) return;
  throw errors.invalidField('invalid_name', 'parent_id',
    `The folder holds a file with the empty name (the S3 object "${folder.name}/"), which at the top would be the key "" that no client can name; rename that file, or move it out, first.`,
    { file_id: held[0]!.id });
}

/**
 * 409 folder_not_empty for DeleteBucket when all the bucket holds (`files` at its top, none
 * below) are ready files of the empty name at its top: from before the moves above were
 * refused, or an upload that finished after its folder became a bucket. S3 lists no key for
 * them, so the answer says what is there and what to do; they are never deleted unseen.
 */
export async function refuseHiddenAtTop(tx: MetadataTx, bucket: StoredFolder, files: number): Promise<void> {
  const held = await tx.s3.filesNamed(bucket.id, FOLDER_KEY_NAME);
  if (held.length === 0 || held.length < files) return;
  throw fail('folder_not_empty',
    `The bucket lists empty, but its top holds ${held.length} file(s) with the empty name, which no S3 key names; rename, move or delete them through the programmatic interface (file ${held[0]!.id}), then delete the bucket.`,
    { folder_id: bucket.id, files: held.length, folders: 0, file_id: held[0]!.id, hidden: true });
}
