/** `--folder ID|/path`: a folder named by its id, or by its path from the root. */
import type { CofferClient } from '../sdk/index.js';
import { CliError } from './common.js';

export interface FolderChoice {
  /** null: the root. */
  id: string | null;
  /** How to show it: the path when one was given, else the id. */
  shown: string;
}

/**
 * `root` and `/` are the root; a value starting with `/` is a path, found by listing each
 * folder on the way down (ids never hold a `/`); anything else is taken as an id, which the
 * service checks.
 */
export async function resolveFolder(client: CofferClient, value: string | undefined): Promise<FolderChoice> {
  if (value === undefined || value === 'root' || value.trim() === '/') return { id: null, shown: '/ (root)' };
  if (!value.startsWith('/')) return { id: value, shown: value };
  const names = value.split('/').filter((n) => n !== '');
  let parent: string | null = null;
  let path = '';
  for (const name of names) {
    let found: string | null = null;
    for await (const page of client.listPages({ folder_id: parent, limit: 1000 })) {
      found = page.folders.find((f) => f.name === name)?.folder_id ?? null;
      if (found !== null || page.folders.length === 0) break;
    }
    if (found === null) {
      throw new CliError(`No folder at ${value}: ${path || '/'} has no folder named "${name}". Create it with \`coffer mkdir -p ${names.join('/')}\`, or give the folder's id.`);
    }
    parent = found;
    path += `/${name}`;
  }
  return { id: parent, shown: path };
}
