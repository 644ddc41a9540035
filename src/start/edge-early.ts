/**
 * Imported first by the `coffer` command (src/cli/main.ts), before commander and the
 * settings load: for `coffer edge`, V8's young generation stays at its initial size from the
 * first module on (start/memory.ts); settleEdgeAfterStart gives V8's defaults back once the
 * edge listens.
 */
import { keepEdgeYoungGenerationSmall } from './memory.js';

if (process.argv[2] === 'edge') keepEdgeYoungGenerationSmall();
