/** Node helpers for the SDK: `import { fileFromPath } from 'coffer/sdk/node'`. */
import { openAsBlob } from 'node:fs';
import { basename } from 'node:path';

/**
 * A File backed by the file on disk: its bytes are read slice by slice as parts are sent,
 * never whole. Its name is the path's last segment unless `name` is given.
 */
export async function fileFromPath(path: string, opts: { name?: string; type?: string } = {}): Promise<File> {
  const blob = await openAsBlob(path, opts.type ? { type: opts.type } : {});
  return new File([blob], opts.name ?? basename(path), { type: blob.type });
}
