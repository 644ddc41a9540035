/**
 * Runs the built CLI (`dist/cli/main.js`) as child processes: an origin, edges. Each
 * process is spawned with `node` directly and with only the COFFER_* settings given here
 * (none inherited from the test runner's environment), and is ready once it prints its
 * `… listening on URL` line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built CLI; COFFER_TEST_CLI points the tests at another build. */
export const CLI = process.env.COFFER_TEST_CLI ?? resolve(dirname(fileURLToPath(import.meta.url)), '../../dist/cli/main.js');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface CofferProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Resolves with the URL of its listening line; rejects if it exits first or takes too long. */
  readonly ready: Promise<string>;
  /** Resolves when the process has exited. */
  readonly exited: Promise<Exit>;
  /** Set once it has exited. */
  exit: Exit | null;
  /** Everything it wrote so far. */
  stdout(): string;
  stderr(): string;
  /** Sends `signal` (default SIGTERM) and waits for the exit; SIGKILL after `graceMs`. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<Exit>;
}

const running = new Set<CofferProcess>();

/**
 * The runner's environment without any COFFER_* variable, plus `env`. The S3 interface takes a
 * free port unless a test names one, so origins started side by side never compete for 8082.
 */
function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { COFFER_S3_PORT: '0' };
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('COFFER_')) out[k] = v;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

export interface SpawnOptions {
  /** CLI arguments after `main.js`, e.g. ['edge', '--origin', url]. */
  args: string[];
  env: Record<string, string | undefined>;
  /** A label for messages. */
  name: string;
  /** How long to wait for the listening line (default 15 s). */
  readyTimeoutMs?: number;
  /** Which listening line to wait for: `origin`, `edge` or `s3`. */
  kind: 'origin' | 'edge' | 's3';
  /** Working directory (default: the test runner's). */
  cwd?: string;
}

export function spawnCoffer(opts: SpawnOptions): CofferProcess {
  const child = spawn(process.execPath, [CLI, ...opts.args], { env: childEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'], ...(opts.cwd ? { cwd: opts.cwd } : {}) });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  const proc: CofferProcess = {
    name: opts.name,
    child,
    exit: null,
    exited: new Promise<Exit>((r) => child.once('exit', (code, signal) => {
      proc.exit = { code, signal };
      running.delete(proc);
      r(proc.exit);
    })),
    ready: new Promise<string>((resolvePromise, reject) => {
      const line = new RegExp(`${opts.kind} listening on (http://\\S+)`);
      const timer = setTimeout(() => reject(new Error(`${opts.name} printed no listening line within ${opts.readyTimeoutMs ?? 15_000} ms\nstdout:\n${out}\nstderr:\n${err}`)), opts.readyTimeoutMs ?? 15_000);
      const onData = () => {
        const m = line.exec(out);
        if (m) {
          clearTimeout(timer);
          child.stdout!.off('data', onData);
          resolvePromise(m[1]!);
        }
      };
      child.stdout!.on('data', onData);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${opts.name} exited (code ${code}, signal ${signal}) before it was ready\nstdout:\n${out}\nstderr:\n${err}`));
      });
    }),
    stdout: () => out,
    stderr: () => err,
    async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000) {
      if (proc.exit) return proc.exit;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const exit = await proc.exited;
      clearTimeout(timer);
      return exit;
    },
  };
  // A rejected `ready` that nobody awaits (a process stopped on purpose) is not an error.
  proc.ready.catch(() => undefined);
  running.add(proc);
  return proc;
}

/** Stops every process this module started that is still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop('SIGKILL')));
}
