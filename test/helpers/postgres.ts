/**
 * A real, throwaway PostgreSQL for tests: Debian's server binaries, a cluster initialised in a
 * temp dir (trust auth, user `coffer`, no fsync), listening on 127.0.0.1 at a free port with its
 * socket inside that dir, and removed at the end.
 *
 * One cluster serves the whole run: test/helpers/postgres-setup.ts (vitest globalSetup) starts it
 * and provides its admin URL; each suite calls `createDatabase()` for a fresh database of its own.
 * Set COFFER_TEST_POSTGRES_URL (a URL whose user may create databases) to use a server of your own.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';

const PG_ROOT = '/usr/lib/postgresql';
const USER = 'coffer';

export const MISSING_BINARIES =
  'PostgreSQL server binaries were not found in /usr/lib/postgresql/*/bin: install the Debian package "postgresql" ' +
  '(apt-get install postgresql; npm test does this when run as root), or set COFFER_TEST_POSTGRES_URL to a server the tests may create databases on.';

/** The newest installed server's bin directory. */
export function findPostgresBin(): string {
  let versions: string[] = [];
  try {
    versions = readdirSync(PG_ROOT);
  } catch {
    // No PostgreSQL at all.
  }
  const usable = versions
    .filter((v) => ['initdb', 'postgres'].every((b) => existsSync(join(PG_ROOT, v, 'bin', b))))
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  if (usable.length === 0) throw new Error(MISSING_BINARIES);
  return join(PG_ROOT, usable[0]!, 'bin');
}

/** initdb and postgres refuse to run as root: then they run as Debian's `postgres` user. */
function serverUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    throw new Error('PostgreSQL cannot run as root and there is no "postgres" user: install the Debian package "postgresql", which creates it.');
  }
}

/** A temp dir the unprivileged server user can reach: the configured one if every folder above it lets others through. */
function reachableTmp(): string {
  const base = resolve(tmpdir());
  let dir = base;
  for (;;) {
    try {
      if ((statSync(dir).mode & 0o001) === 0) return '/tmp';
    } catch {
      return '/tmp';
    }
    const up = dirname(dir);
    if (up === dir) return base;
    dir = up;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function run(cmd: string, args: string[], user: { uid: number; gid: number } | null): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...(user ?? {}), env: { ...process.env, LC_ALL: 'C.UTF-8' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited with ${code}:\n${out}`))));
  });
}

export interface PostgresCluster {
  /** A URL to the `postgres` database as the superuser `coffer`. */
  adminUrl: string;
  createDatabase(): Promise<string>;
  stop(): Promise<void>;
}

/** Where a cluster started in the background reports how its start ended. */
const STATUS_FILE = 'status.json';

export interface ClusterHandle {
  adminUrl: string;
  dir: string;
  /** Resolves once the server accepts connections (rejects with why it did not). */
  ready: Promise<void>;
  /** Ends the server as a crash does (SIGQUIT: no checkpoint, WAL not yet written is lost). */
  crash(): Promise<void>;
  /** Starts the server again on the same data, after a crash: it recovers from its WAL. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** More `name=value` server settings (`wal_writer_delay=10s`, …). */
  settings?: string[];
}

/**
 * Starts a cluster. The URL is known at once; `ready` resolves once it accepts connections, and
 * the outcome is also written to the dir, so other processes given the URL and dir can wait too.
 */
export async function launchCluster(opts: ClusterOptions = {}): Promise<ClusterHandle> {
  const bin = findPostgresBin();
  const user = serverUser();
  const dir = await mkdtemp(join(user ? reachableTmp() : tmpdir(), 'coffer-pg-'));
  if (user) await chown(dir, user.uid, user.gid);
  const port = await freePort();
  const adminUrl = `postgres://${USER}@127.0.0.1:${port}/postgres`;
  const data = join(dir, 'data');
  let child: ChildProcess | null = null;
  let stopped = false;

  /** Starts the server on the data dir and waits until it accepts connections. */
  const serve = async (): Promise<void> => {
    let log = '';
    const settings = [
      'listen_addresses=127.0.0.1', 'fsync=off', 'full_page_writes=off', 'max_connections=400', 'shared_buffers=64MB',
      'log_min_messages=warning', 'log_min_error_statement=panic', ...(opts.settings ?? []),
    ];
    const server = spawn(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, ...settings.flatMap((x) => ['-c', x])],
      { ...(user ?? {}), env: { ...process.env, LC_ALL: 'C.UTF-8' }, stdio: ['ignore', 'ignore', 'pipe'] });
    child = server;
    // Should this process end without stopping it, the server ends too (its dir stays in tmp).
    const orphan = () => server.kill('SIGQUIT');
    process.once('exit', orphan);
    server.once('exit', () => process.off('exit', orphan));
    server.stderr!.on('data', (d) => {
      log = (log + d).slice(-20_000);
    });
    const exited = new Promise<never>((_, reject) => {
      server.once('exit', (code) => reject(new Error(`postgres exited with ${code} while starting:\n${log}`)));
      server.once('error', reject);
    });
    exited.catch(() => {});
    await Promise.race([waitForServer(adminUrl, 30_000), exited]);
  };

  const ready = (async () => {
    // ICU en-US as the default collation, as many production clusters have a linguistic one:
    // anything that relies on byte order must say so (collate "C").
    const icu = ['--locale-provider=icu', '--icu-locale=en-US'];
    const base = ['-D', data, '-U', USER, '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync', '--no-instructions'];
    try {
      await run(join(bin, 'initdb'), [...base, ...icu], user);
    } catch {
      await rm(data, { recursive: true, force: true });
      await run(join(bin, 'initdb'), base, user);
    }
    if (stopped) throw new Error('stopped before it started');
    await serve();
  })();
  ready.then(
    () => writeFile(join(dir, STATUS_FILE), JSON.stringify({ ok: true })),
    (err: Error) => writeFile(join(dir, STATUS_FILE), JSON.stringify({ ok: false, error: err.message })),
  ).catch(() => {});

  /** Ends the running server with `signal`, after `graceMs` with SIGQUIT. */
  const end = async (signal: NodeJS.Signals, graceMs: number): Promise<void> => {
    const c = child as ChildProcess | null;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill(signal);
    const timer = setTimeout(() => c.kill('SIGQUIT'), graceMs);
    await gone;
    clearTimeout(timer);
  };

  return {
    adminUrl,
    dir,
    ready,
    crash: () => end('SIGQUIT', 0),
    restart: serve,
    async stop() {
      stopped = true;
      await ready.catch(() => {});
      await end('SIGINT', 10_000); // fast shutdown
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function waitForServer(url: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.end();
      return;
    } catch (err) {
      await client.end().catch(() => {});
      if (Date.now() > until) throw new Error(`PostgreSQL at ${url} did not accept connections in ${ms} ms: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Waits for a cluster another process launched (the globalSetup), via its status file. */
export async function waitForCluster(adminUrl: string, dir: string | undefined, ms = 60_000): Promise<void> {
  if (!dir) return waitForServer(adminUrl, ms);
  const until = Date.now() + ms;
  for (;;) {
    const path = join(dir, STATUS_FILE);
    if (existsSync(path)) {
      let status: { ok: boolean; error?: string } | null = null;
      try {
        status = JSON.parse(readFileSync(path, 'utf8'));
      } catch {
        // Being written.
      }
      if (status?.ok) return;
      if (status) throw new Error(`The test PostgreSQL did not start: ${status.error}`);
    }
    if (Date.now() > until) throw new Error(`The test PostgreSQL did not start in ${ms} ms (${dir}).`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

let counter = 0;

/** Creates a fresh, empty database on the server at `adminUrl`; returns its URL. */
export async function createDatabaseOn(adminUrl: string): Promise<string> {
  const name = `coffer_test_${process.pid}_${Date.now().toString(36)}_${++counter}_${Math.random().toString(36).slice(2, 8)}`;
  const client = new pg.Client({ connectionString: adminUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(`create database "${name}" template template0 encoding 'UTF8'`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Starts a private cluster and waits for it: for scripts and for runs without the globalSetup. */
export async function startPostgres(): Promise<PostgresCluster> {
  const handle = await launchCluster();
  try {
    await handle.ready;
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return { adminUrl: handle.adminUrl, createDatabase: () => createDatabaseOn(handle.adminUrl), stop: () => handle.stop() };
}

/** What the globalSetup provides to test files. */
export type ProvidedPostgres = { adminUrl: string; dir?: string } | { error: string };

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: ProvidedPostgres;
  }
}

/**
 * A fresh database on the run's shared test cluster; returns its postgres:// URL.
 * Fails with the reason when there is no PostgreSQL to test on.
 */
export async function createDatabase(): Promise<string> {
  const { inject } = await import('vitest');
  const provided = inject('postgres');
  if (!provided) throw new Error('No test PostgreSQL: vitest.config.ts must list test/helpers/postgres-setup.ts in globalSetup.');
  if ('error' in provided) throw new Error(provided.error);
  await waitForCluster(provided.adminUrl, provided.dir);
  return createDatabaseOn(provided.adminUrl);
}
