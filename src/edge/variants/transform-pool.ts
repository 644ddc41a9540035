/**
 * Transforms in a helper process (transform-process.ts), started on the first variant and
 * again after it exits. It runs at a lower priority (nice 10): when transforms and deliveries
 * want the same cores, the edge's event loop gets them first.
 */
import { type ChildProcess, fork } from 'node:child_process';
import os from 'node:os';
import type { OutputFormat, VariantParams } from '../../core/variants.js';
import { type TransformInput, VariantError } from './transform.js';

/** Niceness of the helper: the kernel gives it about a tenth of what the edge gets when both want a core. */
export const HELPER_NICE = os.constants.priority.PRIORITY_BELOW_NORMAL;

export interface TransformRequest {
  id: number;
  path?: string;
  memory?: Uint8Array;
  params: VariantParams;
  out: OutputFormat;
  maxPixels: number;
}

export type TransformReply =
  | { id: number; bytes: Uint8Array; error?: undefined }
  | { id: number; error: { status: number; code: string; message: string }; bytes?: undefined };

interface Waiting {
  resolve(bytes: Buffer): void;
  reject(err: Error): void;
  /** The helper it was sent to. */
  child: ChildProcess;
}

/** Where the helper's code is: the built file, or the source run through tsx (tests). */
function helperEntry(): { path: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(`./transform-process.${fromSource ? 'ts' : 'js'}`, import.meta.url);
  return { path: url.pathname, execArgv: fromSource ? ['--import', 'tsx'] : [] };
}

export class TransformProcess {
  private child: ChildProcess | null = null;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private closed = false;

  /** @param threads libuv threads of the helper: one per transform running at once, and one spare. */
  constructor(private readonly threads: number) {}

  /** The helper's process id while it runs (tests, metrics). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  transform(input: TransformInput, params: VariantParams, out: OutputFormat, maxPixels: number): Promise<Buffer> {
    if (this.closed) return Promise.reject(new VariantError(503, 'edge_unavailable', 'This edge is stopping; try again.'));
    const child = this.child ?? this.start();
    const id = this.nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, child });
      const request: TransformRequest = { id, params, out, maxPixels, ...(input.memory ? { memory: input.memory } : { path: input.path }) };
      child.send(request, (err) => {
        if (err) this.settle(id, new VariantError(503, 'edge_unavailable', 'The image could not be handed to the transform process; try again.'));
      });
    });
  }

  private start(): ChildProcess {
    const entry = helperEntry();
    const child = fork(entry.path, [], {
      execArgv: entry.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, UV_THREADPOOL_SIZE: String(this.threads) },
    });
    this.child = child;
    try {
      os.setPriority(child.pid!, HELPER_NICE);
    } catch {
      // Not permitted here (or no pid yet: the fork failed and 'exit' follows): it runs at the edge's priority.
    }
    child.on('message', (m: TransformReply) => {
      if (m.error) this.settle(m.id, new VariantError(m.error.status, m.error.code, m.error.message));
      else this.settle(m.id, Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength));
    });
    child.on('error', () => {});
    child.once('exit', () => {
      if (this.child === child) this.child = null;
      // A transform in flight when it died: perhaps its image's fault, perhaps another's.
      for (const [id, w] of [...this.waiting]) {
        if (w.child === child) this.settle(id, new VariantError(503, 'edge_unavailable', 'The transform stopped before the variant was made; try again.'));
      }
    });
    return child;
  }

  private settle(id: number, result: Buffer | Error): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    if (result instanceof Error) w.reject(result);
    else w.resolve(result);
  }

  /** Stops the helper; transforms in flight are answered 503. */
  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }
}
