/**
 * Transforms in a helper process (transform-process.ts), started on the first variant and
 * again after it exits. It runs at a lower priority (nice 10): when transforms and deliveries
 * want the same cores, the edge's event loop gets them first.
 */
import { type ChildProcess, fork } from 'node:child_process';
import os from 'node:os';
import type { OutputFormat, VariantParams } from '../../core/variants.js';
import { isErrorCode } from '../../core/error-codes.js';
import { TIMEOUT_SECONDS, type TransformInput, VariantError } from './transform.js';

/** Niceness of the helper above the edge's: the kernel gives it about a tenth of what the edge gets when both want a core. */
export const HELPER_NICE = os.constants.priority.PRIORITY_BELOW_NORMAL;

/** The helper's niceness: the edge's plus HELPER_NICE, within the kernel's range. */
function helperNice(): number {
  try {
    return Math.min(os.constants.priority.PRIORITY_LOW, os.getPriority() + HELPER_NICE);
  } catch {
    return HELPER_NICE;
  }
}

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
  /** Replaces a helper that has not answered long after libvips' own timeout. */
  watchdog: NodeJS.Timeout;
}

/** Where the helper's code is: the built file, or the source run through tsx (tests). */
function helperEntry(): { path: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(`./transform-process.${fromSource ? 'ts' : 'js'}`, import.meta.url);
  return { path: url.pathname, execArgv: fromSource ? ['--import', 'tsx'] : [] };
}

/**
 * The helper decodes untrusted images: it gets only the environment it runs with (paths,
 * locale, temporary directory, Node's, libvips' and malloc's tuning), never the edge's
 * settings and secrets (COFFER_EDGE_TOKEN, COFFER_SIGNING_SECRET, ...).
 */
const HELPER_ENV = /^(PATH|HOME|TMPDIR|TMP|TEMP|LANG|LANGUAGE|LC_[A-Z]+|TZ|LD_LIBRARY_PATH|NODE_OPTIONS|NODE_PATH|VIPS_[A-Z0-9_]+|MALLOC_[A-Z0-9_]+|TSX_[A-Z0-9_]+)$/;

export function helperEnv(threads: number, from: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(from)) if (value !== undefined && HELPER_ENV.test(name)) env[name] = value;
  env.UV_THREADPOOL_SIZE = String(threads);
  return env;
}

export class TransformProcess {
  private child: ChildProcess | null = null;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private closed = false;

  /**
   * @param threads libuv threads of the helper: one per transform running at once, and one spare.
   * @param deadlineMs a helper that has not answered a transform this long is stuck (a loop
   *   libvips' timeout does not reach, a stopped process): it is killed, its transforms are
   *   answered 503, and the next variant starts a new one. Without it the limiter's slots
   *   would stay taken and every later variant would wait forever.
   */
  constructor(private readonly threads: number, private readonly deadlineMs = (TIMEOUT_SECONDS + 30) * 1000) {}

  /** The helper's process id while it runs (tests, metrics). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  transform(input: TransformInput, params: VariantParams, out: OutputFormat, maxPixels: number): Promise<Buffer> {
    if (this.closed) return Promise.reject(new VariantError('edge_unavailable', 'This edge is stopping; try again.'));
    const child = this.child ?? this.start();
    const id = this.nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      const watchdog = setTimeout(() => {
        if (this.waiting.get(id)?.child === child) child.kill('SIGKILL');
      }, this.deadlineMs);
      watchdog.unref();
      this.waiting.set(id, { resolve, reject, child, watchdog });
      const request: TransformRequest = { id, params, out, maxPixels, ...(input.memory ? { memory: input.memory } : { path: input.path }) };
      child.send(request, (err) => {
        if (err) this.settle(id, new VariantError('edge_unavailable', 'The image could not be handed to the transform process; try again.'));
      });
    });
  }

  private start(): ChildProcess {
    const entry = helperEntry();
    const nice = helperNice();
    // The helper also lowers every thread it has when it starts (transform-process.ts); this
    // covers its main thread from the first moment.
    const child = fork(entry.path, [String(nice)], {
      execArgv: entry.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: helperEnv(this.threads),
    });
    this.child = child;
    try {
      os.setPriority(child.pid!, nice);
    } catch {
      // Not permitted here (or no pid yet: the fork failed and 'exit' follows): it runs at the edge's priority.
    }
    child.on('message', (m: TransformReply) => {
      if (m.error) this.settle(m.id, new VariantError(isErrorCode(m.error.code) ? m.error.code : 'invalid_image', m.error.message));
      else this.settle(m.id, Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength));
    });
    child.on('error', () => {});
    child.once('exit', () => {
      if (this.child === child) this.child = null;
      // A transform in flight when it died: perhaps its image's fault, perhaps another's.
      for (const [id, w] of [...this.waiting]) {
        if (w.child === child) this.settle(id, new VariantError('edge_unavailable', 'The transform stopped before the variant was made; try again.'));
      }
    });
    return child;
  }

  private settle(id: number, result: Buffer | Error): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    clearTimeout(w.watchdog);
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
