/**
 * Imported first by the `coffer` command (src/cli/main.ts), before commander and the
 * settings load: for `coffer edge`, V8's young generation stays at its initial size from the
 * first module on (start/memory.ts), and nothing is optimized while the edge loads and
 * starts. settleEdge gives V8's defaults back once the edge listens.
 */
import { setV8Flag } from '../core/v8-flags.js';
import { keepEdgeYoungGenerationSmall, settleEdgeAfterStart } from './memory.js';

if (process.argv[2] === 'edge') {
  keepEdgeYoungGenerationSmall();
  // Loading resolves a few hundred paths, which made V8 optimize Node's own path functions,
  // and compiling them maps in about 3 MB of the optimizing compiler's code that an idle edge
  // never uses again. Functions that ran meanwhile are still optimized once the flag is back
  // and they run hot.
  setV8Flag('--no-opt');
}

/** Once an edge listens: the compilers back (memory.ts turns --opt on), one compaction, V8's young generation defaults. */
export function settleEdge(): void {
  settleEdgeAfterStart();
}
