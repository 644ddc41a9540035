/**
 * Memory of an origin process (docs/operations.md, "Memory"). V8 lets its young generation
 * grow to 16 MiB semi-spaces while the modules load, and keeps them; an origin's garbage is
 * mostly short-lived buffers whose bytes live outside that heap, so small semi-spaces cost
 * it little time and keep both its idle and its busy memory lower. For a process that runs
 * an origin, not for one that only embeds it (tests): called before the origin's modules load.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * Keeps the young generation at its initial size, and compiles nothing beyond bytecode while
 * the origin starts: its startup code runs once, and the optimizing compilers' working memory
 * stays with the process's allocator after they finish (about 7 MB of an idle origin's RSS).
 */
export function keepYoungGenerationSmall(): void {
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  v8.setFlagsFromString('--no-opt');
  v8.setFlagsFromString('--no-sparkplug');
}

/**
 * Once started: the compilers are back for the code that serves requests, and one
 * compacting collection gives what loading left behind back to the system.
 */
export function compactAfterStart(): void {
  v8.setFlagsFromString('--opt');
  v8.setFlagsFromString('--sparkplug');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as (() => void) | undefined;
  if (typeof gc !== 'function') return;
  v8.setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc();
  } finally {
    v8.setFlagsFromString('--no-compact-on-every-full-gc');
  }
}
