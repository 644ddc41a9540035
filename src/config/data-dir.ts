/**
 * Data at rest: the directories Coffer keeps credentials, metadata, bytes and edge caches
 * in are the owner's alone. A directory Coffer creates is made 0700; one that already
 * exists is the operator's and is never changed, but a start says so when others may enter it.
 */
import { chmod, mkdir, stat } from 'node:fs/promises';
import { resolve } from 'node:path';

/** Files the service writes are the owner's alone, whatever creates them (SQLite, the blob store, the cache). */
export const SERVICE_UMASK = 0o077;

export interface PreparedDir {
  path: string;
  created: boolean;
  /** Set when an existing directory lets group or others in: the warning to log. */
  warning?: string;
}

/** Creates `dir` 0700 when absent (parents too, each 0700); reports a looser existing one. */
export async function prepareDataDir(dir: string, what = 'data directory'): Promise<PreparedDir> {
  const path = resolve(dir);
  const before = await stat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (!before) {
    await mkdir(path, { recursive: true, mode: 0o700 });
    // The mode given to mkdir passes through the process umask: set it exactly.
    await chmod(path, 0o700);
    return { path, created: true };
  }
  if (!before.isDirectory()) throw new Error(`The ${what} ${path} exists and is not a directory.`);
  const mode = before.mode & 0o777;
  if ((mode & 0o077) === 0) return { path, created: false };
  return {
    path,
    created: false,
    warning: `The ${what} ${path} has mode 0${mode.toString(8)}: other users of this machine may be able to enter it. Coffer leaves an existing directory as it is; run \`chmod 700 ${path}\` unless it is shared on purpose.`,
  };
}

/** Sets `paths` to 0600 where they exist (the SQLite file and its -wal and -shm companions). */
export async function restrictFiles(paths: string[]): Promise<void> {
  await Promise.all(paths.map((p) => chmod(p, 0o600).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  })));
}
