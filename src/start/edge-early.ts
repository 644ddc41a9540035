/**
 * Imported first by the `coffer` command (src/cli/main.ts), before commander and the
 * settings load. For `coffer edge`, V8 keeps its young generation small and compiles nothing
 * beyond bytecode from the first module on (start/memory.ts): the optimizing compiler, once
 * it has run (commander's option handling and module resolution get hot while the command
 * loads), keeps about 3.5 MB of the node binary's code resident for the life of the process.
 * settleEdgeAfterStart gives the compilers back once the edge listens.
 */
import { keepYoungGenerationSmall } from './memory.js';

if (process.argv[2] === 'edge') keepYoungGenerationSmall();
