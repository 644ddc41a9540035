/**
 * The built CLI as a user runs it, for the CLI tests: one `coffer serve` (origin and edge,
 * SQLite, blob directory, a known key and secret) and `coffer ARGS…` in child processes with
 * only the COFFER_* variables given.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { CofferClient } from '../../src/sdk/index.js';
import { CLI, spawnCoffer, type CofferProcess } from './processes.js';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Standard output as bytes. */
  out: Buffer;
}

export interface CliService extends CliRunner {
  root: string;
  origin: string;
  edge: string;
  key: string;
  sdk: CofferClient;
  process: CofferProcess;
  close(): Promise<void>;
}

export interface RunOptions {
  cwd?: string;
  /** Added to (or, when undefined, removed from) the CLI's environment. */
  env?: Record<string, string | undefined>;
  /** The access key for this run instead of the target's; undefined: none. */
  key?: string | undefined;
}

export interface CliTarget {
  /** The origin's address (COFFER_URL). */
  url: string;
  /** The key runs use unless told otherwise (COFFER_ACCESS_KEY). */
  key: string;
  /** The working directory and XDG_STATE_HOME's parent. */
  root: string;
}

export interface CliRunner {
  /** Starts `coffer ARGS…`; `done` resolves once it has exited. */
  start(args: string[], opts?: RunOptions): { child: ChildProcess; done: Promise<CliResult> };
  run(args: string[], opts?: RunOptions): Promise<CliResult>;
  /** A run that must exit 0 with no terminal escape on standard error; its output is in the message when it does not. */
  ok(args: string[], opts?: RunOptions): Promise<CliResult>;
}

export const shownRun = (args: string[], r: CliResult): string => `coffer ${args.join(' ')}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

/** The runner's environment without any COFFER_* variable, plus the target's address and key and `opts`. */
export function cliEnv(target: CliTarget, opts: RunOptions = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('COFFER_')) env[k] = v;
  Object.assign(env, { COFFER_URL: target.url, XDG_STATE_HOME: join(target.root, 'state') });
  const key = 'key' in opts ? opts.key : target.key;
  if (key !== undefined) env.COFFER_ACCESS_KEY = key;
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** A child's exit and everything it wrote. */
export function collectRun(child: ChildProcess): Promise<CliResult> {
  const out: Buffer[] = [];
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => out.push(d));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      const bytes = Buffer.concat(out);
      resolve({ code, signal, stdout: bytes.toString(), stderr, out: bytes });
    });
  });
}

/** Runs the built CLI against `target` with only the COFFER_* variables given. */
export function cliRunner(target: CliTarget): CliRunner {
  const start = (args: string[], opts: RunOptions = {}) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd ?? target.root, env: cliEnv(target, opts), stdio: ['ignore', 'pipe', 'pipe'] });
    return { child, done: collectRun(child) };
  };
  const run = (args: string[], opts: RunOptions = {}) => start(args, opts).done;
  return {
    start, run,
    async ok(args, opts = {}) {
      const r = await run(args, opts);
      expect(r.code, shownRun(args, r)).toBe(0);
      expect(r.stderr, shownRun(args, r)).not.toMatch(/\x1b/);
      return r;
    },
  };
}

export async function startCliService(name: string): Promise<CliService> {
  const root = await mkdtemp(join(tmpdir(), `coffer-${name}-`));
  const key = `${name}-key`;
  const proc = spawnCoffer({
    name: 'serve', kind: 'edge', args: ['serve'],
    env: { COFFER_PORT: '0', COFFER_EDGE_PORT: '0', COFFER_DATA_DIR: join(root, 'data'), COFFER_ACCESS_KEY: key, COFFER_SIGNING_SECRET: `${name}-secret` },
  });
  const edge = await proc.ready;
  const origin = /origin listening on (http:\/\/\S+)/.exec(proc.stdout())![1]!;

  const cli = cliRunner({ url: origin, key, root });
  return {
    root, origin, edge, key, process: proc, ...cli,
    sdk: new CofferClient({ url: origin, accessKey: key }),
    async close() {
      await proc.stop('SIGTERM');
      await rm(root, { recursive: true, force: true });
    },
  };
}
