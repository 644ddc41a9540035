// Upload throughput benchmark: Coffer's chunked "seed flow" against a
// reference tus server (@tus/server + @tus/file-store fed by tus-js-client).
//
// Run with `npm run bench:upload -- [options]` (builds first) or
// `npx tsx bench/upload.ts [options]`. See bench/README.md and `--help`.
//
// Both servers run as child processes spawned directly with `node`, so the
// child pid is the server process and its /proc/<pid>/status is the server's
// memory. Rounds alternate between the contestants; every round is bounded by
// a timeout and the children are killed whenever this process exits.
//
// Coffer runs in one or two storage configurations in the same run
// (`--storage embedded,postgres-s3`): embedded (SQLite + data dir), and
// PostgreSQL + S3, for which a throwaway PostgreSQL cluster
// (test/helpers/postgres.ts) and an s3rver (test/helpers/s3.ts, in a child
// process: bench/s3rver-server.ts) are started first and stopped at the end.

import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Upload } from "tus-js-client";
import { createDatabaseOn, launchCluster, type ClusterHandle } from "../test/helpers/postgres.js";

// ---------------------------------------------------------------------------
// Constants

const MiB = 1024 * 1024;
const MB = 1_000_000;
const PART_CONCURRENCY = 4;
const RSS_SAMPLE_INTERVAL_MS = 50;
const STARTUP_TIMEOUT_MS = 30_000;
const TAIL_LIMIT = 64 * 1024;
const TARGET_RATIO = 0.8;
const TARGET_COFFER_RSS_MB = 200;

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** "coffer" is the embedded configuration (its name predates the others, and --json keeps it). */
type Contestant = "coffer" | "coffer-pg-s3" | "tus";
const CONTESTANTS: readonly Contestant[] = ["coffer", "coffer-pg-s3", "tus"];

type Storage = "embedded" | "postgres-s3";
const STORAGES: readonly Storage[] = ["embedded", "postgres-s3"];
const CONTESTANT_OF_STORAGE: Record<Storage, Contestant> = { embedded: "coffer", "postgres-s3": "coffer-pg-s3" };
const DISPLAY: Record<Contestant, string> = { coffer: "coffer embedded", "coffer-pg-s3": "coffer postgres-s3", tus: "tus" };

// The tus peer, run as `node --input-type=module -e <this>` with cwd at the
// repository root so the bare imports resolve from ./node_modules. Plain JS
// on purpose: running it through tsx would add the loader's memory (~25 MB)
// to the peer's RSS figures.
const TUS_SERVER_SCRIPT = `
import http from "node:http";
import { FileStore } from "@tus/file-store";
import { Server } from "@tus/server";

const directory = process.env.BENCH_TUS_DIR;
if (!directory) {
  console.error("BENCH_TUS_DIR is not set");
  process.exit(2);
}
const tus = new Server({ path: "/files", datastore: new FileStore({ directory }) });
const server = http.createServer((req, res) => {
  tus.handle(req, res).catch((err) => {
    console.error("tus handler error:", err);
    if (!res.headersSent) res.statusCode = 500;
    res.end();
  });
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  process.stdout.write("tus listening on http://127.0.0.1:" + port + "/files/\\n");
});
// Exit when the benchmark process goes away (our stdin is its pipe).
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
`;

// A tiny process that SIGKILLs the servers (and removes the work directory)
// if this process dies without running its exit handlers, e.g. on SIGKILL. It
// learns pids from "+pid" / "-pid" lines and directories from "dPATH"
// lines on stdin ("d" alone forgets them), and acts when stdin reaches EOF, which happens when we die.
const WATCHDOG_SCRIPT = `
const fs = require("node:fs");
const pids = new Set();
const dirs = new Set();
let buf = "";
process.on("SIGINT", () => {});
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf("\\n")) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (line[0] === "d") { const d = line.slice(1); if (d) dirs.add(d); else dirs.clear(); continue; }
    const pid = Number(line.slice(1));
    if (!Number.isInteger(pid) || pid <= 0) continue;
    if (line[0] === "+") pids.add(pid);
    else pids.delete(pid);
  }
});
process.stdin.on("end", () => {
  for (const pid of pids) {
    try { process.kill(pid, "SIGKILL"); } catch {}
  }
  if (dirs.size === 0) process.exit(0);
  setTimeout(() => {
    for (const dir of dirs) {
      try { fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 }); } catch {}
    }
    process.exit(0);
  }, 500);
});
`;

// ---------------------------------------------------------------------------
// Options

type ClientKind = "http" | "fetch";

interface Options {
  sizeMiB: number;
  bytes: number;
  rounds: number;
  warmup: number;
  only: Array<"coffer" | "tus">;
  storage: Storage[];
  json: boolean;
  label: string | null;
  envCoffer: Record<string, string>;
  timeoutMs: number;
  client: ClientKind;
  cofferEntry: string;
  tmpBase: string;
  keepData: boolean;
}

const USAGE = `Usage: tsx bench/upload.ts [options]

Compares Coffer's chunked upload flow with @tus/server + tus-js-client.

Options:
  --size MiB            upload size in MiB (default 256)
  --rounds R            rounds per contestant, alternating (default 5)
  --warmup W            untimed rounds per contestant first (default 1)
  --only coffer|tus     run a single contestant (coffer: every --storage configuration)
  --storage LIST        Coffer configurations, comma-separated: embedded, postgres-s3
                        (default embedded,postgres-s3; postgres-s3 starts a throwaway
                        PostgreSQL cluster and an s3rver for the run)
  --label NAME          label for this configuration (shown in the output)
  --env-coffer K=V      extra environment for the Coffer origin (repeatable)
  --timeout SECONDS     per-round timeout (default 120)
  --client http|fetch   Coffer client: node:http keep-alive agent or fetch (default http)
  --coffer-entry PATH   Coffer CLI entry point (default dist/cli/main.js)
  --tmp-dir DIR         where the servers' data directories are created (default OS tmp)
  --keep-data           do not delete the data directories at the end
  --json                print a JSON summary on stdout (the table goes to stderr)
  -h, --help            show this help
`;

class UsageError extends Error {}

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      size: { type: "string" },
      rounds: { type: "string" },
      warmup: { type: "string" },
      only: { type: "string" },
      storage: { type: "string" },
      json: { type: "boolean" },
      label: { type: "string" },
      "env-coffer": { type: "string", multiple: true },
      timeout: { type: "string" },
      client: { type: "string" },
      "coffer-entry": { type: "string" },
      "tmp-dir": { type: "string" },
      "keep-data": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return null;

  const sizeMiB = values.size === undefined ? 256 : Number(values.size);
  if (!Number.isFinite(sizeMiB) || sizeMiB <= 0) throw new UsageError(`--size must be a positive number of MiB`);
  const bytes = Math.round(sizeMiB * MiB);
  if (bytes > 2 ** 31 - 1) throw new UsageError(`--size is too large for one in-memory Buffer`);

  const rounds = values.rounds === undefined ? 5 : Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) throw new UsageError(`--rounds must be a positive integer`);
  const warmup = values.warmup === undefined ? 1 : Number(values.warmup);
  if (!Number.isInteger(warmup) || warmup < 0) throw new UsageError(`--warmup must be a whole number`);

  let only: Array<"coffer" | "tus"> = ["coffer", "tus"];
  if (values.only !== undefined) {
    if (values.only !== "coffer" && values.only !== "tus") throw new UsageError(`--only must be "coffer" or "tus"`);
    only = [values.only];
  }
  const storage: Storage[] = [];
  for (const s of (values.storage ?? STORAGES.join(",")).split(",").map((x) => x.trim()).filter(Boolean)) {
    if (!(STORAGES as readonly string[]).includes(s)) throw new UsageError(`--storage takes ${STORAGES.join(", ")}; got ${JSON.stringify(s)}`);
    if (!storage.includes(s as Storage)) storage.push(s as Storage);
  }
  if (storage.length === 0) throw new UsageError(`--storage needs at least one configuration`);

  const timeoutSec = values.timeout === undefined ? 120 : Number(values.timeout);
  if (!Number.isFinite(timeoutSec) || timeoutSec <= 0) throw new UsageError(`--timeout must be a positive number of seconds`);

  const client = values.client ?? "http";
  if (client !== "http" && client !== "fetch") throw new UsageError(`--client must be "http" or "fetch"`);

  const envCoffer: Record<string, string> = {};
  for (const kv of values["env-coffer"] ?? []) {
    const eq = kv.indexOf("=");
    if (eq <= 0) throw new UsageError(`--env-coffer expects KEY=VALUE, got ${JSON.stringify(kv)}`);
    envCoffer[kv.slice(0, eq)] = kv.slice(eq + 1);
  }

  return {
    sizeMiB,
    bytes,
    rounds,
    warmup,
    only,
    storage,
    json: values.json ?? false,
    label: values.label ?? null,
    envCoffer,
    timeoutMs: timeoutSec * 1000,
    client,
    cofferEntry: path.resolve(values["coffer-entry"] ?? path.join(REPO_ROOT, "dist", "cli", "main.js")),
    tmpBase: path.resolve(values["tmp-dir"] ?? os.tmpdir()),
    keepData: values["keep-data"] ?? false,
  };
}

// ---------------------------------------------------------------------------
// Logging (progress always goes to stderr so --json output stays clean)

function log(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

// ---------------------------------------------------------------------------
// Child server processes

/** Keeps the last `limit` characters written to it. */
class Tail {
  private text = "";
  constructor(private readonly limit: number) {}
  push(chunk: string): void {
    this.text += chunk;
    if (this.text.length > this.limit * 2) this.text = this.text.slice(-this.limit);
  }
  toString(): string {
    return this.text.length > this.limit ? this.text.slice(-this.limit) : this.text;
  }
}

const liveChildren = new Set<ServerChild>();

let watchdog: ChildProcess | null = null;
let watchdogReleased = false;

function watchdogSend(line: string): void {
  if (watchdogReleased) return;
  if (watchdog === null) {
    watchdog = spawn(process.execPath, ["-e", WATCHDOG_SCRIPT], { stdio: ["pipe", "ignore", "inherit"] });
    watchdog.on("error", () => {}); // best effort
    watchdog.stdin?.on("error", () => {});
  }
  watchdog.stdin?.write(`${line}\n`);
}

/** Lets the watchdog exit without killing anything (its set is empty by then). */
function releaseWatchdog(): void {
  watchdogSend("d"); // forget the directory: main() removes it itself
  watchdogReleased = true;
  watchdog?.stdin?.end();
  watchdog = null;
}

class ServerChild {
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly stdoutTail = new Tail(TAIL_LIMIT);
  readonly stderrTail = new Tail(TAIL_LIMIT);
  /** Rejects when the process exits unless we stopped it on purpose. */
  readonly died: Promise<never>;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private stopping = false;
  private readonly exitWaiters: Array<() => void> = [];

  private constructor(
    readonly name: string,
    proc: ChildProcess,
  ) {
    this.proc = proc;
    if (proc.pid === undefined) throw new Error(`${name}: failed to spawn`);
    this.pid = proc.pid;
    proc.stdout?.setEncoding("utf8");
    proc.stderr?.setEncoding("utf8");
    proc.stdout?.on("data", (c: string) => this.stdoutTail.push(c));
    proc.stderr?.on("data", (c: string) => this.stderrTail.push(c));
    proc.stdin?.on("error", () => {}); // EPIPE when the child is gone
    this.died = new Promise<never>((_, reject) => {
      proc.once("close", (code, signal) => {
        this.exitInfo = { code, signal };
        liveChildren.delete(this);
        watchdogSend(`-${this.pid}`);
        for (const w of this.exitWaiters.splice(0)) w();
        if (!this.stopping) {
          reject(new Error(`${this.name} server (pid ${this.pid}) exited unexpectedly (code ${code}, signal ${signal})`));
        }
      });
    });
    this.died.catch(() => {}); // observed via Promise.race where it matters
    liveChildren.add(this);
    watchdogSend(`+${this.pid}`);
  }

  static async start(
    name: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    ready: RegExp,
  ): Promise<{ child: ServerChild; url: string }> {
    // Spawn node directly (no shell, no npx): the pid is the server itself.
    const proc = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
    const spawnError = await new Promise<Error | null>((resolve) => {
      proc.once("spawn", () => resolve(null));
      proc.once("error", (err) => resolve(err));
    });
    if (spawnError) throw new Error(`${name}: cannot spawn ${process.execPath}: ${spawnError.message}`);
    const child = new ServerChild(name, proc);
    try {
      const url = await child.waitForLine(ready, STARTUP_TIMEOUT_MS);
      return { child, url };
    } catch (err) {
      child.kill();
      throw new ChildFailure(err instanceof Error ? err.message : String(err), [child]);
    }
  }

  private waitForLine(re: RegExp, timeoutMs: number): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      let buffered = "";
      const onData = (chunk: string): void => {
        buffered += chunk;
        const m = re.exec(buffered);
        if (m) {
          cleanup();
          resolve(m[1] ?? m[0]);
        } else if (buffered.length > TAIL_LIMIT) {
          buffered = buffered.slice(-1024);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`${this.name} server did not report readiness within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.proc.stdout?.off("data", onData);
      };
      this.proc.stdout?.on("data", onData);
      this.died.catch((err: unknown) => {
        cleanup();
        reject(err);
      });
    });
  }

  get alive(): boolean {
    return this.exitInfo === null;
  }

  /** Reads one field (in kB) of /proc/<pid>/status, or null if unavailable. */
  readStatusKb(field: "VmRSS" | "VmHWM"): number | null {
    if (!this.alive) return null;
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${this.pid}/status`, "utf8");
    } catch {
      return null;
    }
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(text);
    return m?.[1] !== undefined ? Number(m[1]) : null;
  }

  /** User + system CPU time of the process in ms (from /proc/<pid>/stat), or null if unavailable. */
  cpuMs(): number | null {
    if (!this.alive) return null;
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${this.pid}/stat`, "utf8");
    } catch {
      return null;
    }
    // Fields after the parenthesised command name start at field 3 (state);
    // utime and stime are fields 14 and 15, in clock ticks (USER_HZ, 100 on Linux).
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) * 10 : null;
  }

  /** Samples VmRSS every 50 ms until the returned function is called; it returns the max in kB. */
  sampleRss(): () => number | null {
    let max: number | null = null;
    const sample = (): void => {
      const kb = this.readStatusKb("VmRSS");
      if (kb !== null && (max === null || kb > max)) max = kb;
    };
    sample();
    const timer = setInterval(sample, RSS_SAMPLE_INTERVAL_MS);
    return () => {
      clearInterval(timer);
      sample();
      return max;
    };
  }

  /** Immediate SIGKILL; safe to call from an 'exit' handler. */
  kill(): void {
    this.stopping = true;
    if (this.alive) {
      try {
        this.proc.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  }

  /** SIGTERM, then SIGKILL after a grace period. */
  async stop(graceMs = 3000): Promise<void> {
    this.stopping = true;
    if (!this.alive) return;
    const exited = new Promise<void>((resolve) => this.exitWaiters.push(resolve));
    this.proc.stdin?.end();
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.kill(), graceMs);
    await exited;
    clearTimeout(timer);
  }

  diagnostics(): string {
    const parts: string[] = [];
    const err = this.stderrTail.toString().trimEnd();
    const out = this.stdoutTail.toString().trimEnd();
    parts.push(`----- ${this.name} server (pid ${this.pid}) stderr -----`);
    parts.push(err === "" ? "(empty)" : err);
    if (out !== "") {
      parts.push(`----- ${this.name} server (pid ${this.pid}) stdout (tail) -----`);
      parts.push(out.split("\n").slice(-40).join("\n"));
    }
    return parts.join("\n");
  }
}

/** An error whose report should include the children's output. */
class ChildFailure extends Error {
  constructor(
    message: string,
    readonly children: ServerChild[],
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------
// Timeouts

class TimeoutError extends Error {}

/**
 * Runs `fn` with an AbortSignal that fires after `ms` or when `child` dies;
 * rejects on whichever comes first.
 */
async function bounded<T>(what: string, ms: number, child: ServerChild, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new TimeoutError(`${what} timed out after ${ms / 1000} s`);
      controller.abort(err);
      reject(err);
    }, ms);
  });
  try {
    return await Promise.race([fn(controller.signal), timeout, child.died]);
  } finally {
    clearTimeout(timer);
    if (!controller.signal.aborted) controller.abort(new Error(`${what} finished`));
  }
}

// ---------------------------------------------------------------------------
// HTTP clients for Coffer

/** A JSON request body as pieces: `head` and `tail` are arbitrary UTF-8, `ascii` is pure ASCII (base64). */
interface BodyPieces {
  head: string;
  ascii?: string;
  tail?: string;
}

interface HttpResult {
  status: number;
  text: string;
}

interface JsonClient {
  post(pathname: string, body: BodyPieces, signal: AbortSignal): Promise<HttpResult>;
  close(): void;
}

class NodeHttpClient implements JsonClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: PART_CONCURRENCY });
  private readonly base: URL;
  constructor(
    base: string,
    private readonly authorization: string,
  ) {
    this.base = new URL(base);
  }

  post(pathname: string, body: BodyPieces, signal: AbortSignal): Promise<HttpResult> {
    const length =
      Buffer.byteLength(body.head, "utf8") +
      (body.ascii?.length ?? 0) +
      (body.tail === undefined ? 0 : Buffer.byteLength(body.tail, "utf8"));
    return new Promise<HttpResult>((resolve, reject) => {
      const req = http.request(
        {
          agent: this.agent,
          hostname: this.base.hostname,
          port: this.base.port,
          method: "POST",
          path: pathname,
          signal,
          headers: {
            "Content-Type": "application/json",
            "Content-Length": length,
            Authorization: this.authorization,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        },
      );
      req.on("error", (err) => reject(signal.aborted && signal.reason instanceof Error ? signal.reason : err));
      // Written as separate pieces so the multi-megabyte base64 string is never concatenated.
      req.write(body.head, "utf8");
      if (body.ascii !== undefined) req.write(body.ascii, "latin1");
      if (body.tail !== undefined) req.write(body.tail, "utf8");
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

class FetchClient implements JsonClient {
  constructor(
    private readonly base: string,
    private readonly authorization: string,
  ) {}

  async post(pathname: string, body: BodyPieces, signal: AbortSignal): Promise<HttpResult> {
    const res = await fetch(new URL(pathname, this.base), {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: this.authorization },
      body: body.head + (body.ascii ?? "") + (body.tail ?? ""),
      signal,
    });
    return { status: res.status, text: await res.text() };
  }

  close(): void {}
}

class HttpError extends Error {}

async function postJson(client: JsonClient, pathname: string, body: BodyPieces, signal: AbortSignal): Promise<unknown> {
  const res = await client.post(pathname, body, signal);
  if (res.status < 200 || res.status >= 300) {
    throw new HttpError(`POST ${pathname} -> HTTP ${res.status}: ${res.text.slice(0, 500)}`);
  }
  if (res.text === "") return null;
  try {
    return JSON.parse(res.text) as unknown;
  } catch {
    throw new HttpError(`POST ${pathname} -> HTTP ${res.status} with a non-JSON body: ${res.text.slice(0, 200)}`);
  }
}

// ---------------------------------------------------------------------------
// Contestants

/** Wall time plus CPU time of this process (the client) and of the server between start() and stop(). */
class RoundMeter {
  private t0 = 0;
  private client0: NodeJS.CpuUsage | null = null;
  private server0: number | null = null;
  elapsedMs: number | null = null;
  clientCpuMs: number | null = null;
  serverCpuMs: number | null = null;

  constructor(private readonly child: ServerChild) {}

  start(): void {
    this.server0 = this.child.cpuMs();
    this.client0 = process.cpuUsage();
    this.t0 = performance.now();
  }

  stop(): void {
    this.elapsedMs = performance.now() - this.t0;
    if (this.client0 !== null) {
      const d = process.cpuUsage(this.client0);
      this.clientCpuMs = (d.user + d.system) / 1000;
    }
    const s1 = this.child.cpuMs();
    if (this.server0 !== null && s1 !== null) this.serverCpuMs = s1 - this.server0;
  }
}

interface Source {
  data: Buffer;
  sha256: string;
}

interface Runner {
  readonly name: Contestant;
  readonly child: ServerChild;
  /**
   * Runs one upload, calling meter.start() right before the first request and
   * meter.stop() when the upload is acknowledged; verification may follow.
   */
  run(signal: AbortSignal, meter: RoundMeter): Promise<void>;
  /** Removes what the last round stored. Best effort. */
  cleanup(): Promise<void>;
  close(): void;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function requireString(obj: Record<string, unknown>, field: string, where: string): string {
  const v = obj[field];
  if (typeof v !== "string" || v === "") throw new Error(`${where}: expected a non-empty string "${field}", got ${JSON.stringify(v)}`);
  return v;
}

function requirePositiveInt(obj: Record<string, unknown>, field: string, where: string): number {
  const v = obj[field];
  if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) {
    throw new Error(`${where}: expected a positive integer "${field}", got ${JSON.stringify(v)}`);
  }
  return v;
}

class CofferRunner implements Runner {
  private lastFileId: string | number | null = null;
  private deleteWarned = false;

  private constructor(
    readonly name: Contestant,
    readonly child: ServerChild,
    private readonly client: JsonClient,
    private readonly source: Source,
  ) {}

  /** `storageEnv` selects the storage configuration (empty: embedded); --env-coffer still applies on top. */
  static async start(
    name: Contestant,
    opts: Options,
    source: Source,
    dataDir: string,
    storageEnv: Record<string, string> = {},
  ): Promise<CofferRunner> {
    if (!fs.existsSync(opts.cofferEntry)) {
      throw new Error(`Coffer entry point ${opts.cofferEntry} does not exist; run \`npm run build\` first`);
    }
    const accessKey = randomBytes(24).toString("hex");
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      COFFER_PORT: "0",
      COFFER_S3_PORT: "0",
      COFFER_HOST: "127.0.0.1",
      COFFER_DATA_DIR: dataDir,
      COFFER_ACCESS_KEY: accessKey,
      COFFER_SIGNING_SECRET: randomBytes(32).toString("hex"),
      ...storageEnv,
      ...opts.envCoffer,
    };
    const { child, url } = await ServerChild.start(
      name,
      [opts.cofferEntry, "origin"],
      env,
      /origin listening on (https?:\/\/[^\s"']+)/,
    );
    const base = url.endsWith("/") ? url : `${url}/`;
    const authorization = `Bearer ${env.COFFER_ACCESS_KEY ?? accessKey}`;
    const client = opts.client === "fetch" ? new FetchClient(base, authorization) : new NodeHttpClient(base, authorization);
    log(`${DISPLAY[name]} origin: pid ${child.pid}, ${base} (client: ${opts.client})`);
    return new CofferRunner(name, child, client, source);
  }

  async run(signal: AbortSignal, meter: RoundMeter): Promise<void> {
    const { data, sha256 } = this.source;
    const size = data.length;
    meter.start();

    const initRaw = await postJson(
      this.client,
      "/collections/upload/file",
      { head: JSON.stringify({ name: "bench.bin", visibility: "Private", size, file_type: "other" }) },
      signal,
    );
    const where = "POST /collections/upload/file";
    if (!isRecord(initRaw)) throw new Error(`${where}: expected a JSON object, got ${JSON.stringify(initRaw)}`);
    const fileId = initRaw.fileId;
    if (!((typeof fileId === "string" && fileId !== "") || typeof fileId === "number")) {
      throw new Error(`${where}: expected "fileId", got ${JSON.stringify(fileId)}`);
    }
    this.lastFileId = fileId;
    const bucket = requireString(initRaw, "bucket", where);
    const key = requireString(initRaw, "key", where);
    const uploadId = requireString(initRaw, "uploadId", where);
    const chunkSize = requirePositiveInt(initRaw, "chunk_size", where);
    const partCount = requirePositiveInt(initRaw, "part_count", where);
    if (partCount !== Math.ceil(size / chunkSize)) {
      throw new Error(`${where}: part_count ${partCount} does not match ceil(${size} / ${chunkSize})`);
    }

    // Session fields first, then the body, so the server can stream the body.
    const prefix =
      `{"bucket":${JSON.stringify(bucket)},"key":${JSON.stringify(key)},` +
      `"uploadId":${JSON.stringify(uploadId)},"fileId":${JSON.stringify(fileId)},"partNumber":`;

    // A pool of PART_CONCURRENCY workers; the first failure aborts the rest.
    const local = new AbortController();
    const partSignal = AbortSignal.any([signal, local.signal]);
    let next = 1;
    const worker = async (): Promise<void> => {
      while (!partSignal.aborted) {
        const part = next++;
        if (part > partCount) return;
        const start = (part - 1) * chunkSize;
        const end = Math.min(start + chunkSize, size);
        // Encoded right before sending: a real client pays for this too.
        const b64 = data.toString("base64", start, end);
        await postJson(
          this.client,
          "/collections/upload/file-progress",
          { head: `${prefix}${part},"body":"`, ascii: b64, tail: `"}` },
          partSignal,
        );
      }
      if (signal.aborted) throw signal.reason;
    };
    const workers = Array.from({ length: Math.min(PART_CONCURRENCY, partCount) }, () =>
      worker().catch((err: unknown) => {
        if (!local.signal.aborted) local.abort(err);
        throw err;
      }),
    );
    try {
      await Promise.all(workers);
    } catch (err) {
      // Report the first failure, not a follow-on abort of the others.
      throw local.signal.aborted && local.signal.reason !== undefined ? local.signal.reason : err;
    }

    const record = await postJson(
      this.client,
      "/collections/upload/complete-upload",
      { head: JSON.stringify({ file_id: fileId }) },
      signal,
    );
    meter.stop();

    const got = extractSha256(record);
    if (got === null) {
      throw new Error(`complete-upload response has no sha256: ${JSON.stringify(record).slice(0, 500)}`);
    }
    if (got.toLowerCase() !== sha256) {
      throw new Error(`SHA-256 MISMATCH: coffer reported ${got}, source bytes hash to ${sha256}`);
    }
  }

  async cleanup(): Promise<void> {
    if (this.lastFileId === null || !this.child.alive) return;
    const fileId = this.lastFileId;
    this.lastFileId = null;
    try {
      await bounded("coffer delete", 30_000, this.child, (signal) =>
        postJson(this.client, "/collections/file/delete", { head: JSON.stringify({ file_id: fileId }) }, signal),
      );
    } catch (err) {
      if (!this.child.alive) throw err;
      if (!this.deleteWarned) {
        this.deleteWarned = true;
        log(`warning: coffer file delete failed (ignored from now on): ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }

  close(): void {
    this.client.close();
  }
}

function extractSha256(record: unknown): string | null {
  if (!isRecord(record)) return null;
  if (typeof record.sha256 === "string") return record.sha256;
  for (const k of ["file", "data", "record"]) {
    const inner = record[k];
    if (isRecord(inner) && typeof inner.sha256 === "string") return inner.sha256;
  }
  return null;
}

class TusRunner implements Runner {
  readonly name = "tus" as const;

  private constructor(
    readonly child: ServerChild,
    private readonly endpoint: string,
    private readonly dataDir: string,
    private readonly source: Source,
  ) {}

  static async start(source: Source, dataDir: string): Promise<TusRunner> {
    const { child, url } = await ServerChild.start(
      "tus",
      ["--input-type=module", "-e", TUS_SERVER_SCRIPT],
      { ...process.env, BENCH_TUS_DIR: dataDir },
      /tus listening on (http:\/\/\S+)/,
    );
    log(`tus server: pid ${child.pid}, ${url}`);
    return new TusRunner(child, url, dataDir, source);
  }

  async run(signal: AbortSignal, meter: RoundMeter): Promise<void> {
    const { data, sha256 } = this.source;
    meter.start();
    const uploadUrl = await new Promise<string>((resolve, reject) => {
      const upload = new Upload(data, {
        endpoint: this.endpoint,
        retryDelays: null, // a failure must fail the round, not be papered over
        metadata: { filename: "bench.bin", filetype: "application/octet-stream" },
        onSuccess: () => {
          if (upload.url === null) reject(new Error("tus upload finished without a URL"));
          else resolve(upload.url);
        },
        onError: (err) => reject(err),
      });
      signal.addEventListener(
        "abort",
        () => {
          void upload.abort().catch(() => {});
          reject(signal.reason);
        },
        { once: true },
      );
      upload.start();
    });
    meter.stop();

    // Verify the stored bytes (outside the timed section).
    const id = new URL(uploadUrl).pathname.split("/").filter(Boolean).pop();
    if (id === undefined) throw new Error(`cannot derive the upload id from ${uploadUrl}`);
    const file = path.join(this.dataDir, id);
    const stored = await sha256File(file);
    if (stored !== sha256) throw new Error(`SHA-256 MISMATCH: tus stored ${file} hashing to ${stored}, source is ${sha256}`);
  }

  async cleanup(): Promise<void> {
    for (const entry of await fs.promises.readdir(this.dataDir)) {
      await fs.promises.rm(path.join(this.dataDir, entry), { recursive: true, force: true });
    }
  }

  close(): void {}
}

function sha256File(file: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const hash = createHash("sha256");
    fs.createReadStream(file, { highWaterMark: MiB })
      .on("error", reject)
      .on("data", (c) => hash.update(c))
      .on("end", () => resolve(hash.digest("hex")));
  });
}

// ---------------------------------------------------------------------------
// PostgreSQL + S3 for the postgres-s3 configuration

/** The credentials s3rver accepts (S3RVER_CREDENTIALS in test/helpers/s3.ts). */
const S3RVER_ENV = {
  AWS_ACCESS_KEY_ID: "S3RVER",
  AWS_SECRET_ACCESS_KEY: "S3RVER",
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
};

/** Started by startPostgresS3; the exit handler stops what is still here. */
let pgCluster: ClusterHandle | null = null;
let pgPid: number | null = null;

/** The postmaster's pid (first line of postmaster.pid), or null. */
function postmasterPid(dir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

interface PostgresS3 {
  /** COFFER_DATABASE_URL, COFFER_BLOB_STORE and the AWS variables for the origin. */
  env: Record<string, string>;
  s3: ServerChild;
}

/**
 * A throwaway PostgreSQL cluster (Debian binaries, run as `postgres` when root) with a fresh
 * database, and s3rver with a fresh bucket in a child process whose temp dir is under `workDir`.
 */
async function startPostgresS3(workDir: string): Promise<PostgresS3> {
  log("postgres-s3: starting a throwaway PostgreSQL cluster and s3rver...");
  const cluster = await launchCluster();
  pgCluster = cluster;
  watchdogSend(`d${cluster.dir}`);
  const s3Start = ServerChild.start(
    "s3rver",
    ["--import", "tsx", path.join(REPO_ROOT, "bench", "s3rver-server.ts")],
    { ...process.env, TMPDIR: workDir },
    /s3rver listening on \S+ blob-store (\S+)/,
  );
  s3Start.catch(() => {}); // awaited below
  await cluster.ready;
  pgPid = postmasterPid(cluster.dir);
  if (pgPid !== null) watchdogSend(`+${pgPid}`);
  const databaseUrl = await createDatabaseOn(cluster.adminUrl);
  const { child: s3, url: blobStore } = await s3Start;
  log(`postgres-s3: PostgreSQL pid ${pgPid ?? "?"} at ${new URL(databaseUrl).host}, s3rver pid ${s3.pid}, ${blobStore}`);
  return { env: { COFFER_DATABASE_URL: databaseUrl, COFFER_BLOB_STORE: blobStore, ...S3RVER_ENV }, s3 };
}

/** Stops the cluster (and removes its dir); the s3rver child is stopped with the other children. */
async function stopPostgres(): Promise<void> {
  const cluster = pgCluster;
  if (cluster === null) return;
  await cluster.stop();
  pgCluster = null;
  if (pgPid !== null) watchdogSend(`-${pgPid}`);
  pgPid = null;
}

/** From an exit handler: SIGKILL the postmaster (its backends follow) and remove its dir. */
function killPostgresSync(): void {
  if (pgPid !== null) {
    try {
      process.kill(pgPid, "SIGKILL");
    } catch {
      // already gone
    }
    pgPid = null;
  }
  if (pgCluster !== null) {
    try {
      fs.rmSync(pgCluster.dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // best effort; the watchdog tries again
    }
    pgCluster = null;
  }
}

// ---------------------------------------------------------------------------
// Results

interface ContestantResult {
  roundsMs: number[];
  roundsMiBps: number[];
  roundsMaxSampledRssMB: Array<number | null>;
  /** CPU time of the benchmark process (the client) during each timed upload. */
  roundsClientCpuMs: Array<number | null>;
  /** CPU time of the server process during each timed upload. */
  roundsServerCpuMs: Array<number | null>;
  medianMiBps: number | null;
  medianClientCpuMs: number | null;
  medianServerCpuMs: number | null;
  /** VmRSS of the server right after it reported readiness. */
  idleRssMB: number | null;
  /** VmHWM of the server process at the end of the run. */
  vmHwmMB: number | null;
  /**
   * max(VmHWM, highest sampled VmRSS). The kernel updates VmHWM lazily, so a
   * sample can exceed it by a little.
   */
  peakRssMB: number | null;
  /** Highest VmRSS sampled every 50 ms during uploads. */
  maxSampledRssMB: number | null;
}

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const nonNull = (xs: Array<number | null>): number[] => xs.filter((x): x is number => x !== null);
const ms2s = (ms: number | null): number | null => (ms === null ? null : ms / 1000);
const kbToMB = (kb: number | null): number | null => (kb === null ? null : (kb * 1024) / MB);
const round2 = (x: number | null): number | null => (x === null ? null : Math.round(x * 100) / 100);

function fmt(x: number | null, digits = 1): string {
  return x === null ? "n/a" : x.toFixed(digits);
}

/** Spread of the rounds: (max - min) / median, in %. */
function noisePct(xs: number[]): number | null {
  const m = median(xs);
  if (m === null || m <= 0 || xs.length < 2) return null;
  return ((Math.max(...xs) - Math.min(...xs)) / m) * 100;
}

function renderTable(opts: Options, results: Partial<Record<Contestant, ContestantResult>>, summary: Summary): string {
  const lines: string[] = [];
  lines.push("");
  lines.push(
    `upload benchmark${opts.label ? ` [${opts.label}]` : ""}: ${opts.sizeMiB} MiB x ${opts.rounds} round(s), ` +
      `node ${process.version}, coffer client: ${opts.client}`,
  );
  const roundHeaders = Array.from({ length: opts.rounds }, (_, i) => `round ${i + 1}`);
  const header = ["contestant", ...roundHeaders, "median", "peak RSS", "max sampled RSS", "idle RSS", "cpu client/server"];
  const rows: string[][] = [header];
  for (const name of CONTESTANTS) {
    const r = results[name];
    if (!r) continue;
    rows.push([
      DISPLAY[name],
      ...roundHeaders.map((_, i) => fmt(r.roundsMiBps[i] ?? null)),
      fmt(r.medianMiBps),
      `${fmt(r.peakRssMB)} MB`,
      `${fmt(r.maxSampledRssMB)} MB`,
      `${fmt(r.idleRssMB)} MB`,
      `${fmt(ms2s(r.medianClientCpuMs), 2)} / ${fmt(ms2s(r.medianServerCpuMs), 2)} s`,
    ]);
  }
  const widths = header.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? "").length)));
  for (const row of rows) {
    lines.push(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("  "));
  }
  lines.push("(throughput in MiB/s, 1 MiB = 2^20 bytes; RSS in MB, 1 MB = 10^6 bytes;");
  lines.push(" peak RSS = max(VmHWM of the server at the end, sampled VmRSS); max sampled = VmRSS every 50 ms during uploads;");
  lines.push(" idle RSS = VmRSS after startup; cpu = median CPU seconds per upload of this process / the server)");
  lines.push("");
  const verdict = (p: boolean | null): string => (p === null ? "SKIP" : p ? "PASS" : "FAIL");
  const conf: string[][] = [["configuration", "MiB/s", "ratio to tus", "peak RSS", "noise", "target"]];
  for (const c of summary.configurations) {
    conf.push([
      DISPLAY[c.contestant],
      fmt(c.medianMiBps),
      c.contestant === "tus" ? "1.00" : fmt(c.ratioToTus, 2),
      `${fmt(c.peakRssMB)} MB`,
      c.noisePct === null ? "n/a" : `${c.noisePct.toFixed(0)} %`,
      c.contestant === "coffer"
        ? `ratio >= ${TARGET_RATIO.toFixed(2)} ${verdict(summary.targets.ratio.pass)}, RSS < ${TARGET_COFFER_RSS_MB} MB ${verdict(summary.targets.cofferPeakRss.pass)}`
        : c.contestant === "tus"
          ? "(reference)"
          : "none (s3rver is a functional stand-in)",
    ]);
  }
  const cw = conf[0]!.map((_, c) => Math.max(...conf.map((row) => (row[c] ?? "").length)));
  for (const row of conf) {
    lines.push(row.map((cell, c) => (c === 0 || c === 5 ? cell.padEnd(cw[c]!) : cell.padStart(cw[c]!))).join("  ").trimEnd());
  }
  lines.push("(MiB/s and ratio from the medians; noise = (max - min) / median of the rounds)");
  lines.push("");
  lines.push(`ratio (coffer embedded / tus): ${summary.ratio === null ? "n/a" : summary.ratio.toFixed(2)}`);
  lines.push(`target: ratio >= ${TARGET_RATIO.toFixed(2)}  ${verdict(summary.targets.ratio.pass)}`);
  lines.push(`target: coffer peak RSS < ${TARGET_COFFER_RSS_MB} MB  ${verdict(summary.targets.cofferPeakRss.pass)}`);
  return lines.join("\n");
}

interface Summary {
  label: string | null;
  sizeMiB: number;
  bytes: number;
  rounds: number;
  client: ClientKind;
  node: string;
  envCoffer: string[];
  storage: Storage[];
  contestants: Partial<Record<Contestant, ContestantResult>>;
  /** One entry per configuration run, in table order. */
  configurations: Array<{
    contestant: Contestant;
    medianMiBps: number | null;
    ratioToTus: number | null;
    peakRssMB: number | null;
    noisePct: number | null;
  }>;
  /** coffer embedded / tus: the ratio the target applies to. */
  ratio: number | null;
  targets: {
    ratio: { min: number; value: number | null; pass: boolean | null };
    cofferPeakRss: { maxMB: number; valueMB: number | null; pass: boolean | null };
  };
}

function summarize(opts: Options, results: Partial<Record<Contestant, ContestantResult>>): Summary {
  const c = results.coffer?.medianMiBps ?? null;
  const t = results.tus?.medianMiBps ?? null;
  const ratio = c !== null && t !== null && t > 0 ? c / t : null;
  const cofferRss = results.coffer?.peakRssMB ?? null;
  return {
    label: opts.label,
    sizeMiB: opts.sizeMiB,
    bytes: opts.bytes,
    rounds: opts.rounds,
    client: opts.client,
    node: process.version,
    envCoffer: Object.keys(opts.envCoffer), // keys only: values may be secrets
    storage: opts.storage,
    contestants: results,
    configurations: CONTESTANTS.flatMap((name) => {
      const r = results[name];
      if (!r) return [];
      const ratioToTus = r.medianMiBps !== null && t !== null && t > 0 ? r.medianMiBps / t : null;
      return [{ contestant: name, medianMiBps: r.medianMiBps, ratioToTus: round2(ratioToTus), peakRssMB: r.peakRssMB, noisePct: round2(noisePct(r.roundsMiBps)) }];
    }),
    ratio: round2(ratio),
    targets: {
      ratio: { min: TARGET_RATIO, value: round2(ratio), pass: ratio === null ? null : ratio >= TARGET_RATIO },
      cofferPeakRss: {
        maxMB: TARGET_COFFER_RSS_MB,
        valueMB: round2(cofferRss),
        pass: cofferRss === null ? null : cofferRss < TARGET_COFFER_RSS_MB,
      },
    },
  };
}

// ---------------------------------------------------------------------------
// Main

let workDir: string | null = null;
let keepWorkDir = false;

function killAllChildren(): void {
  for (const child of [...liveChildren]) child.kill();
  watchdog?.kill("SIGKILL");
  watchdog = null;
}

function removeWorkDirSync(): void {
  if (workDir !== null && !keepWorkDir) {
    try {
      fs.rmSync(workDir, { recursive: true, force: true });
    } catch {
      // best effort
    }
    workDir = null;
  }
}

process.on("exit", () => {
  killAllChildren();
  killPostgresSync();
  removeWorkDirSync();
});
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(sig, () => {
    log(`\n${sig}: stopping servers`);
    killAllChildren();
    killPostgresSync();
    removeWorkDirSync();
    process.exit(sig === "SIGINT" ? 130 : sig === "SIGTERM" ? 143 : 129);
  });
}

async function main(): Promise<number> {
  let opts: Options | null;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    log(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
    return 2;
  }
  if (opts === null) {
    process.stdout.write(USAGE);
    return 0;
  }

  fs.mkdirSync(opts.tmpBase, { recursive: true });
  workDir = fs.mkdtempSync(path.join(opts.tmpBase, "coffer-bench-"));
  keepWorkDir = opts.keepData;
  const tusDir = path.join(workDir, "tus-data");
  fs.mkdirSync(tusDir);
  log(`work dir: ${workDir}${opts.keepData ? " (kept)" : ""}`);
  if (!opts.keepData) watchdogSend(`d${workDir}`);

  log(`generating ${opts.sizeMiB} MiB of random data...`);
  const data = randomBytes(opts.bytes);
  const source: Source = { data, sha256: createHash("sha256").update(data).digest("hex") };

  const runners: Runner[] = [];
  let s3: ServerChild | null = null;
  try {
    if (opts.only.includes("coffer")) {
      for (const storage of opts.storage) {
        const name = CONTESTANT_OF_STORAGE[storage];
        let storageEnv: Record<string, string> = {};
        if (storage === "postgres-s3") {
          const infra = await startPostgresS3(workDir);
          s3 = infra.s3;
          storageEnv = infra.env;
        }
        const dir = path.join(workDir, `${name}-data`);
        fs.mkdirSync(dir, { recursive: true });
        runners.push(await CofferRunner.start(name, opts, source, dir, storageEnv));
      }
    }
    if (opts.only.includes("tus")) runners.push(await TusRunner.start(source, tusDir));

    const results: Partial<Record<Contestant, ContestantResult>> = {};
    const sampledKb: Partial<Record<Contestant, number | null>> = {};
    for (const r of runners) {
      results[r.name] = {
        roundsMs: [],
        roundsMiBps: [],
        roundsMaxSampledRssMB: [],
        roundsClientCpuMs: [],
        roundsServerCpuMs: [],
        medianMiBps: null,
        medianClientCpuMs: null,
        medianServerCpuMs: null,
        idleRssMB: round2(kbToMB(r.child.readStatusKb("VmRSS"))),
        vmHwmMB: null,
        peakRssMB: null,
        maxSampledRssMB: null,
      };
      sampledKb[r.name] = null;
    }

    // Untimed rounds first: both servers and the client reach a steady state (JIT, heap, page cache).
    for (let round = 1; round <= opts.warmup; round++) {
      for (const r of runners) {
        process.stderr.write(`warm-up ${round}/${opts.warmup} ${DISPLAY[r.name]}\n`);
        await bounded(`${r.name} warm-up ${round}`, opts.timeoutMs, r.child, (signal) => r.run(signal, new RoundMeter(r.child)));
      }
    }

    for (let round = 1; round <= opts.rounds; round++) {
      for (const r of runners) {
        const res = results[r.name]!;
        const meter = new RoundMeter(r.child);
        const stopSampling = r.child.sampleRss();
        try {
          await bounded(`${r.name} round ${round}`, opts.timeoutMs, r.child, (signal) => r.run(signal, meter));
        } finally {
          const maxKb = stopSampling();
          res.roundsMaxSampledRssMB.push(round2(kbToMB(maxKb)));
          const prev = sampledKb[r.name] ?? null;
          if (maxKb !== null && (prev === null || maxKb > prev)) sampledKb[r.name] = maxKb;
        }
        const ms = meter.elapsedMs;
        if (ms === null) throw new Error(`${r.name} round ${round}: the upload finished without being timed`);
        const mibps = opts.bytes / MiB / (ms / 1000);
        res.roundsMs.push(Math.round(ms));
        res.roundsMiBps.push(round2(mibps)!);
        res.roundsClientCpuMs.push(meter.clientCpuMs === null ? null : Math.round(meter.clientCpuMs));
        res.roundsServerCpuMs.push(meter.serverCpuMs === null ? null : Math.round(meter.serverCpuMs));
        log(
          `round ${round}/${opts.rounds} ${DISPLAY[r.name].padEnd(18)} ${mibps.toFixed(1).padStart(8)} MiB/s  ` +
            `(${(ms / 1000).toFixed(2)} s; cpu client ${fmt(ms2s(meter.clientCpuMs), 2)} s, server ${fmt(ms2s(meter.serverCpuMs), 2)} s)`,
        );
        await r.cleanup();
      }
    }

    for (const r of runners) {
      const res = results[r.name]!;
      res.medianMiBps = round2(median(res.roundsMiBps));
      res.medianClientCpuMs = median(nonNull(res.roundsClientCpuMs));
      res.medianServerCpuMs = median(nonNull(res.roundsServerCpuMs));
      const hwmKb = r.child.readStatusKb("VmHWM");
      const sampled = sampledKb[r.name] ?? null;
      res.vmHwmMB = round2(kbToMB(hwmKb));
      res.maxSampledRssMB = round2(kbToMB(sampled));
      res.peakRssMB = round2(kbToMB(hwmKb === null ? sampled : sampled === null ? hwmKb : Math.max(hwmKb, sampled)));
    }

    const summary = summarize(opts, results);
    const table = renderTable(opts, results, summary);
    if (opts.json) {
      log(table);
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    } else {
      process.stdout.write(`${table}\n`);
    }
    return 0;
  } catch (err) {
    log(`\nBENCHMARK FAILED: ${err instanceof Error ? err.message : String(err)}`);
    const involved = err instanceof ChildFailure ? err.children : [...runners.map((r) => r.child), ...(s3 ? [s3] : [])];
    for (const child of involved) log(child.diagnostics());
    return 1;
  } finally {
    for (const r of runners) r.close();
    // The origins first: they hold connections to PostgreSQL and S3.
    await Promise.all(runners.map((r) => r.child.stop()));
    await Promise.all([s3?.stop(10_000), stopPostgres().catch((err: unknown) => log(`warning: stopping PostgreSQL: ${String(err)}`))]);
    releaseWatchdog();
  }
}

main().then(
  (code) => {
    removeWorkDirSync();
    process.exit(code);
  },
  (err: unknown) => {
    log(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
