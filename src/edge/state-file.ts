/**
 * `edge-state.json` in the edge's data directory: the origin it follows and the last event it
 * applied, for operators (a starting edge takes the origin's snapshot instead). Written to a
 * temporary file and renamed, so a crash leaves the old version or the new one, never half.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';

/**
 * A saver to call periodically (the edge's beat): it writes the file when the applied sequence
 * moved since the last save. The two calls are synchronous on purpose: writing 40 bytes
 * without a sync takes microseconds, while the asynchronous versions wake a worker thread and
 * then the event loop for each, every second of a busy edge.
 */
export function seqSaver(path: string, origin: string, state: { readonly seq: number }): () => void {
  let saved = -1;
  return () => {
    if (state.seq === saved) return;
    const seq = state.seq;
    const tmp = `${path}.tmp`;
    try {
      // A name left in place (a crash between the two calls, or planted as a symlink) is removed,
      // and the new one made exclusively: the write never follows a link to another file.
      rmSync(tmp, { force: true });
      writeFileSync(tmp, JSON.stringify({ origin, seq }) + '\n', { flag: 'wx' });
      renameSync(tmp, path);
      saved = seq;
    } catch {
      // A full or read-only disk: the file is for operators, the edge serves on.
    }
  };
}
