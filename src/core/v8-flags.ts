/**
 * V8 flags a process sets while it runs. Node puts V8's flags back to their defaults while a
 * worker thread starts, so the flags set here are set again once each worker is online.
 */
import v8 from 'node:v8';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** The last value given to each flag, by name: `--no-turbofan` and `--turbofan` are one flag (V8 still takes `--opt` as an alias for now). */
const flags = new Map<string, string>();

function flagName(flag: string): string {
  const bare = flag.replace(/^--/, '').split('=')[0]!.replace(/_/g, '-');
  return bare.startsWith('no-') ? bare.slice(3) : bare;
}

/** Sets a V8 flag (`--name`, `--no-name` or `--name=value`) for the life of the process. */
export function setV8Flag(flag: string): void {
  v8.setFlagsFromString(flag);
  flags.set(flagName(flag), flag);
}

function reapply(): void {
  for (const flag of flags.values()) v8.setFlagsFromString(flag);
}

/** A worker thread that leaves this process's V8 flags as they were. */
export function startWorker(source: string | URL, options?: WorkerOptions): Worker {
  const worker = new Worker(source, options);
  worker.once('online', reapply);
  return worker;
}
