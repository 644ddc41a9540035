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
}

export interface CliService {
  root: string;
  origin: string;
  edge: string;
  key: string;
  sdk: CofferClient;
  process: CofferProcess;
  /** Starts `coffer ARGS…`; `done` resolves once it has exited. */
  start(args: string[], opts?: RunOptions): { child: ChildProcess; done: Promise<CliResult> };
  run(args: string[], opts?: RunOptions): Promise<CliResult>;
  /** A run that must exit 0; its output is in the message when it does not. */
  ok(args: string[], opts?: RunOptions): Promise<CliResult>;
  close(): Promise<void>;
}

export interface RunOptions {
  cwd?: string;
  /** Added to (or, when undefined, removed from) the CLI's environment. */
  env?: Record<string, string | undefined>;
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

  const envFor = (extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('COFFER_')) env[k] = v;
    Object.assign(env, { COFFER_URL: origin, COFFER_ACCESS_KEY: key, XDG_STATE_HOME: join(root, 'state') });
    for (const [k, v] of Object.entries(extra)) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    return env;
  };
  const start = (args: string[], opts: RunOptions = {}) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd ?? root, env: envFor(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const done = new Promise<CliResult>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    });
    return { child, done };
  };
  const run = (args: string[], opts: RunOptions = {}) => start(args, opts).done;
  return {
    root, origin, edge, key, process: proc, start, run,
    sdk: new CofferClient({ url: origin, accessKey: key }),
    async ok(args, opts = {}) {
      const r = await run(args, opts);
      expect(r.code, `coffer ${args.join(' ')}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(0);
      return r;
    },
    async close() {
      await proc.stop('SIGTERM');
      await rm(root, { recursive: true, force: true });
    },
  };
}
