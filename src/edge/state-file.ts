/**
 * `edge-state.json` in the edge's data directory: the origin it follows and the last event it
 * applied, for operators (a starting edge takes the origin's snapshot instead). Written to a
 * temporary file and renamed, so a crash leaves the old version or the new one, never half.
 */
import { rename, writeFile } from 'node:fs/promises';

/** Saves the sequence every `ms` while it changes; `stop()` ends it. */
export function saveSeqEvery(ms: number, path: string, origin: string, state: { readonly seq: number }): { stop(): void } {
  let saved = -1;
  const timer = setInterval(() => {
    if (state.seq === saved) return;
    const seq = state.seq;
    const tmp = `${path}.tmp`;
    writeFile(tmp, JSON.stringify({ origin, seq }) + '\n').then(() => rename(tmp, path)).then(() => {
      saved = seq;
    }, () => {});
  }, ms);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
