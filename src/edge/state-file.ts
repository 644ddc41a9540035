/**
 * `edge-state.json` in the edge's data directory: the origin it follows and the last event it
 * applied, for operators (a starting edge takes the origin's snapshot instead). Written to a
 * temporary file and renamed, so a crash leaves the old version or the new one, never half.
 */
import { rename, rm, writeFile } from 'node:fs/promises';

export interface SeqSaver {
  /** Starts a save when the applied sequence moved since the last one and none is under way. */
  (): void;
  /** Resolves once the save under way, if any, is done. */
  settled(): Promise<void>;
  /** Saves the newest sequence, after any save under way with an older one (start and close). */
  flush(): Promise<void>;
}

/**
 * A saver to call periodically (the edge's tick). The writes stay off the event loop: a disk
 * that stalls (writeback throttling during a fill, a frozen file system) holds this file, not
 * the answers.
 */
export function seqSaver(path: string, origin: string, state: { readonly seq: number }): SeqSaver {
  let saved = -1;
  let saving: Promise<void> | null = null;
  const tmp = `${path}.tmp`;
  const save = async (seq: number): Promise<void> => {
    // A name left in place (a crash between the two steps, or planted as a symlink) is removed,
    // and the new one made exclusively: the write never follows a link to another file.
    await rm(tmp, { force: true });
    await writeFile(tmp, JSON.stringify({ origin, seq }) + '\n', { flag: 'wx' });
    await rename(tmp, path);
    saved = seq;
  };
  const saver = (() => {
    if (saving !== null || state.seq === saved) return;
    saving = save(state.seq)
      // A full or read-only disk: the file is for operators, the edge serves on.
      .catch(() => {})
      .finally(() => {
        saving = null;
      });
  }) as SeqSaver;
  saver.settled = async () => {
    await saving;
  };
  saver.flush = async () => {
    await saver.settled();
    saver();
    await saver.settled();
  };
  return saver;
}
