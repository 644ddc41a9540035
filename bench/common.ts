// Shared pieces of the benchmarks: child processes with a watchdog, time bounds,
// a small HTTP client, Coffer's upload flow, statistics and table output.
//
// Every child is spawned without a shell, so its pid is the process itself
// (`taskset -c N prog` execs prog, keeping the pid). Children are SIGKILLed
// when this process exits for any reason; a watchdog process does it (and
// removes the work directories) even when this process is SIGKILLed.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { setMaxListeners } from "node:events";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

export const KiB = 1024;
export const MiB = 1024 * 1024;
export const MB = 1_000_000;
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const DEFAULT_ENTRY = path.join(REPO_ROOT, "dist", "cli", "main.js");

const TAIL_LIMIT = 32 * 1024;

// ---------------------------------------------------------------------------
// Logging: progress goes to stderr so that --json output on stdout stays clean.

export function log(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class UsageError extends Error {}

/** Parses repeated KEY=VALUE options. */
export function parseEnvPairs(pairs: string[] | undefined, option: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const kv of pairs ?? []) {
    const eq = kv.indexOf("=");
    if (eq <= 0) throw new UsageError(`${option} expects KEY=VALUE, got ${JSON.stringify(kv)}`);
    env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return env;
}

export function positiveNumber(value: string | undefined, fallback: number, option: string, integer = false): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new UsageError(`${option} must be a positive ${integer ? "integer" : "number"}, got ${JSON.stringify(value)}`);
  }
  return n;
}

// ---------------------------------------------------------------------------
// Watchdog

// Reads "+pid" / "-pid" and "Dpath" / "dpath" lines on stdin; when stdin ends
// (this process died, or released it) it SIGKILLs the pids still listed and
// removes the directories still listed.
const WATCHDOG_SCRIPT = `
const fs = require("node:fs");
const pids = new Set();
const dirs = new Set();
let buf = "";
process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf("\\n")) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    const op = line[0];
    const arg = line.slice(1);
    if (op === "D") dirs.add(arg);
    else if (op === "d") dirs.delete(arg);
    else {
      const pid = Number(arg);
      if (!Number.isInteger(pid) || pid <= 0) continue;
      if (op === "+") pids.add(pid);
      else if (op === "-") pids.delete(pid);
    }
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
  }, pids.size > 0 ? 500 : 0);
});
`;

let watchdog: ChildProcess | null = null;
let watchdogReleased = false;

function watchdogSend(line: string): void {
  if (watchdogReleased) return;
  if (watchdog === null) {
    watchdog = spawn(process.execPath, ["-e", WATCHDOG_SCRIPT], { stdio: ["pipe", "ignore", "inherit"], detached: true });
    watchdog.on("error", () => {}); // best effort
    watchdog.stdin?.on("error", () => {});
    watchdog.unref();
  }
  watchdog.stdin?.write(`${line}\n`);
}

/** Has the watchdog kill `pid` (a process this one did not spawn as a Child) if this one dies. */
export function watchPid(pid: number, watch = true): void {
  watchdogSend(`${watch ? "+" : "-"}${pid}`);
}

/** Has the watchdog remove `dir` if this one dies (or no longer, with watch = false). */
export function watchDir(dir: string, watch = true): void {
  watchdogSend(`${watch ? "D" : "d"}${dir}`);
}

// ---------------------------------------------------------------------------
// Work directories

const workDirs = new Set<string>();
let keepDirs = false;

/** Creates a temporary directory that is removed at exit (unless keep is set). */
export function makeWorkDir(base: string, prefix: string, keep: boolean): string {
  fs.mkdirSync(base, { recursive: true });
  const dir = fs.mkdtempSync(path.join(base, prefix));
  keepDirs = keep;
  if (!keep) {
    workDirs.add(dir);
    watchdogSend(`D${dir}`);
  }
  return dir;
}

function removeWorkDirsSync(): void {
  if (keepDirs) return;
  for (const dir of workDirs) {
    try {
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // best effort
    }
    watchdogSend(`d${dir}`);
  }
  workDirs.clear();
}

// ---------------------------------------------------------------------------
// Child processes

/** Keeps the last `limit` characters written to it. */
export class Tail {
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

const liveChildren = new Set<Child>();

export interface SpawnSpec {
  /** Shown in messages. */
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** A long-running server process. */
export class Child {
  readonly pid: number;
  readonly stdoutTail = new Tail(TAIL_LIMIT);
  readonly stderrTail = new Tail(TAIL_LIMIT);
  /** Rejects when the process exits, unless it was stopped on purpose. */
  readonly died: Promise<never>;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private stopping = false;
  private readonly exitWaiters: Array<() => void> = [];

  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    if (proc.pid === undefined) throw new Error(`${name}: failed to spawn`);
    this.pid = proc.pid;
    proc.stdout?.setEncoding("utf8");
    proc.stderr?.setEncoding("utf8");
    proc.stdout?.on("data", (c: string) => this.stdoutTail.push(c));
    proc.stderr?.on("data", (c: string) => this.stderrTail.push(c));
    proc.stdin?.on("error", () => {}); // EPIPE once the child is gone
    this.died = new Promise<never>((_, reject) => {
      proc.once("close", (code, signal) => {
        this.exitInfo = { code, signal };
        liveChildren.delete(this);
        watchdogSend(`-${this.pid}`);
        for (const w of this.exitWaiters.splice(0)) w();
        if (!this.stopping) reject(new ChildFailure(`${this.name} (pid ${this.pid}) exited unexpectedly (code ${code}, signal ${signal})`, [this]));
      });
    });
    this.died.catch(() => {}); // observed through Promise.race where it matters
    liveChildren.add(this);
    watchdogSend(`+${this.pid}`);
  }

  static async spawn(spec: SpawnSpec): Promise<Child> {
    const proc = spawn(spec.command, spec.args, {
      cwd: spec.cwd ?? REPO_ROOT,
      env: spec.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const spawnError = await new Promise<Error | null>((resolve) => {
      proc.once("spawn", () => resolve(null));
      proc.once("error", (err) => resolve(err));
    });
    if (spawnError) throw new Error(`${spec.name}: cannot spawn ${spec.command}: ${spawnError.message}`);
    return new Child(spec.name, proc);
  }

  /** Spawns and waits for a line matching `ready`; resolves with its first group. */
  static async start(spec: SpawnSpec, ready: RegExp, timeoutMs: number): Promise<{ child: Child; match: string }> {
    const child = await Child.spawn(spec);
    try {
      const match = await child.waitForLine(ready, timeoutMs);
      return { child, match };
    } catch (err) {
      child.kill();
      throw new ChildFailure(errorMessage(err), [child]);
    }
  }

  waitForLine(re: RegExp, timeoutMs: number): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      let buffered = this.stdoutTail.toString();
      const check = (): boolean => {
        const m = re.exec(buffered);
        if (!m) return false;
        cleanup();
        resolve(m[1] ?? m[0]);
        return true;
      };
      const onData = (chunk: string): void => {
        buffered += chunk;
        if (!check() && buffered.length > TAIL_LIMIT) buffered = buffered.slice(-1024);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`${this.name} did not print ${re} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.proc.stdout?.off("data", onData);
      };
      if (check()) return;
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

  /** A field of /proc/<pid>/status in kB, or null. */
  statusKb(field: "VmRSS" | "VmHWM"): number | null {
    if (!this.alive) return null;
    try {
      const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(fs.readFileSync(`/proc/${this.pid}/status`, "utf8"));
      return m?.[1] !== undefined ? Number(m[1]) : null;
    } catch {
      return null;
    }
  }

  /** User + system CPU time in ms, or null. */
  cpuMs(): number | null {
    return this.alive ? procCpuMs(this.pid) : null;
  }

  /** Immediate SIGKILL; safe in an 'exit' handler. */
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

  /** `signal` (SIGTERM by default), then SIGKILL after a grace period. */
  async stop(graceMs = 3000, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    this.stopping = true;
    if (!this.alive) return;
    const exited = new Promise<void>((resolve) => this.exitWaiters.push(resolve));
    this.proc.stdin?.end();
    try {
      this.proc.kill(signal);
    } catch {
      // gone meanwhile
    }
    const timer = setTimeout(() => this.kill(), graceMs);
    await exited;
    clearTimeout(timer);
  }

  diagnostics(): string {
    const parts: string[] = [];
    const err = this.stderrTail.toString().trimEnd();
    const out = this.stdoutTail.toString().trimEnd();
    const exit = this.exitInfo === null ? "running" : `exited: code ${this.exitInfo.code}, signal ${this.exitInfo.signal}`;
    parts.push(`----- ${this.name} (pid ${this.pid}, ${exit}) stderr -----`);
    parts.push(err === "" ? "(empty)" : err.split("\n").slice(-40).join("\n"));
    if (out !== "") {
      parts.push(`----- ${this.name} (pid ${this.pid}) stdout (tail) -----`);
      parts.push(out.split("\n").slice(-20).join("\n"));
    }
    return parts.join("\n");
  }
}

/** User + system CPU time of a process in ms (from /proc/<pid>/stat), or null. */
export function procCpuMs(pid: number): number | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // utime and stime are fields 14 and 15, in clock ticks (USER_HZ = 100 on Linux).
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) * 10 : null;
}

/** An error whose report should include the output of these children. */
export class ChildFailure extends Error {
  constructor(
    message: string,
    readonly children: Child[],
  ) {
    super(message);
  }
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a short-lived command to its end (SIGKILL after timeoutMs), collecting its output. */
export function runCommand(command: string, args: string[], timeoutMs: number, env?: NodeJS.ProcessEnv): Promise<RunResult> {
  return new Promise<RunResult>((resolve, reject) => {
    const proc = spawn(command, args, { cwd: REPO_ROOT, env: env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    proc.stdout.setEncoding("utf8");
    proc.stderr.setEncoding("utf8");
    proc.stdout.on("data", (c: string) => (stdout += c));
    proc.stderr.on("data", (c: string) => (stderr += c));
    proc.once("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${command}: ${err.message}`));
    });
    proc.once("spawn", () => {
      if (proc.pid !== undefined) watchdogSend(`+${proc.pid}`);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill("SIGKILL");
    }, timeoutMs);
    proc.once("close", (code, signal) => {
      clearTimeout(timer);
      if (proc.pid !== undefined) watchdogSend(`-${proc.pid}`);
      if (timedOut) reject(new Error(`${command} ${args.join(" ")} did not finish within ${timeoutMs / 1000} s`));
      else resolve({ code, signal, stdout, stderr });
    });
  });
}

export function commandExists(name: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" }).status === 0;
}

export function commandPath(name: string): string | null {
  const r = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() || null : null;
}

// ---------------------------------------------------------------------------
// Exit handling and time bounds

let exitHooks: Array<() => void> = [];

function killEverything(): void {
  for (const hook of exitHooks) {
    try {
      hook();
    } catch {
      // best effort
    }
  }
  exitHooks = [];
  for (const child of [...liveChildren]) child.kill();
  removeWorkDirsSync();
}

/** Kills children and removes work directories on exit, SIGINT, SIGTERM and SIGHUP. */
export function installExitHandlers(): void {
  process.on("exit", killEverything);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => {
      log(`\n${sig}: stopping all servers`);
      killEverything();
      process.exit(sig === "SIGINT" ? 130 : sig === "SIGTERM" ? 143 : 129);
    });
  }
}

/** Runs `hook` when the process exits (before children are killed). */
export function onExit(hook: () => void): void {
  exitHooks.push(hook);
}

/** Ends the whole benchmark (children killed, directories removed) after `ms`. */
export function armDeadline(ms: number): void {
  const timer = setTimeout(() => {
    log(`\nBENCHMARK FAILED: the whole run exceeded its limit of ${ms / 1000} s (--max-time)`);
    for (const child of liveChildren) {
      if (child.stderrTail.toString().trim() !== "") log(child.diagnostics());
    }
    process.exit(1);
  }, ms);
  timer.unref();
}

/** Stops the children gracefully (in parallel), then lets the watchdog go. */
export async function stopAll(children: Iterable<Child>, graceMs = 3000): Promise<void> {
  await Promise.all([...children].map((c) => c.stop(graceMs)));
}

/** Lets the watchdog exit without acting: call once everything is stopped and removed. */
export function releaseWatchdog(): void {
  removeWorkDirsSync();
  watchdogReleased = true;
  watchdog?.stdin?.end();
  watchdog = null;
}

export class TimeoutError extends Error {}

/**
 * Runs `fn` with a signal that fires after `ms`, or when one of `children`
 * dies; rejects with whichever comes first.
 */
export async function bounded<T>(what: string, ms: number, children: Child[], fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal); // many concurrent requests and sleeps may listen to it
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new TimeoutError(`${what} timed out after ${ms / 1000} s`);
      controller.abort(err);
      reject(err);
    }, ms);
  });
  try {
    return await Promise.race([fn(controller.signal), timeout, ...children.map((c) => c.died)]);
  } finally {
    clearTimeout(timer);
    if (!controller.signal.aborted) controller.abort(new Error(`${what} finished`));
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

// ---------------------------------------------------------------------------
// HTTP

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string | number>;
  /** Written in order, so a large base64 string is never concatenated. */
  body?: Array<string | Buffer>;
  agent?: http.Agent;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** One HTTP/1.1 request with node:http; the whole body is collected. */
export function request(url: string | URL, opts: RequestOptions = {}): Promise<HttpResponse> {
  const u = typeof url === "string" ? new URL(url) : url;
  return new Promise<HttpResponse>((resolve, reject) => {
    const req = http.request(
      {
        agent: opts.agent,
        hostname: u.hostname,
        port: u.port,
        method: opts.method ?? "GET",
        path: `${u.pathname}${u.search}`,
        headers: opts.headers,
        signal: opts.signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    let timer: NodeJS.Timeout | undefined;
    if (opts.timeoutMs !== undefined) {
      timer = setTimeout(() => req.destroy(new TimeoutError(`${opts.method ?? "GET"} ${u.href} timed out after ${opts.timeoutMs} ms`)), opts.timeoutMs);
    }
    req.on("close", () => clearTimeout(timer));
    req.on("error", (err) => reject(opts.signal?.aborted && opts.signal.reason instanceof Error ? opts.signal.reason : err));
    for (const piece of opts.body ?? []) {
      if (typeof piece === "string") req.write(piece, "utf8");
      else req.write(piece);
    }
    req.end();
  });
}

export function header(res: HttpResponse, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(", ") : v;
}

/** The `error.code` of a contract error body, or null. */
export function errorCode(res: HttpResponse): string | null {
  try {
    const parsed = JSON.parse(res.body.toString("utf8")) as unknown;
    if (isRecord(parsed) && isRecord(parsed.error) && typeof parsed.error.code === "string") return parsed.error.code;
  } catch {
    // not JSON
  }
  return null;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export class HttpError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The programmatic interface of an origin: POST with JSON bodies and the Bearer key. */
export class OriginApi {
  readonly agent: http.Agent;
  private readonly authorization: string;

  constructor(
    readonly baseUrl: string,
    accessKey: string,
    sockets = 8,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
    this.authorization = `Bearer ${accessKey}`;
  }

  /** POSTs `body` (an object, or raw JSON text pieces) and returns the parsed JSON; throws HttpError on a non-2xx answer. */
  async post(pathname: string, body: object | string[], signal?: AbortSignal, timeoutMs = 120_000): Promise<Record<string, unknown>> {
    const pieces = Array.isArray(body) ? body : [JSON.stringify(body)];
    const length = pieces.reduce((n, p) => n + Buffer.byteLength(p, "utf8"), 0);
    const res = await request(new URL(pathname, this.baseUrl), {
      method: "POST",
      agent: this.agent,
      headers: { "Content-Type": "application/json", "Content-Length": length, Authorization: this.authorization },
      body: pieces,
      signal,
      timeoutMs,
    });
    const text = res.body.toString("utf8");
    if (res.status < 200 || res.status >= 300) throw new HttpError(`POST ${pathname} -> HTTP ${res.status}: ${text.slice(0, 500)}`, res.status);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text) as unknown;
    } catch {
      throw new HttpError(`POST ${pathname} -> HTTP ${res.status} with a non-JSON body: ${text.slice(0, 200)}`, res.status);
    }
    if (!isRecord(parsed)) throw new HttpError(`POST ${pathname} -> expected a JSON object, got ${text.slice(0, 200)}`, res.status);
    return parsed;
  }

  close(): void {
    this.agent.destroy();
  }
}

export function requireString(obj: Record<string, unknown>, field: string, where: string): string {
  const v = obj[field];
  if (typeof v !== "string" || v === "") throw new Error(`${where}: expected a non-empty string "${field}", got ${JSON.stringify(v)}`);
  return v;
}

export function requirePositiveInt(obj: Record<string, unknown>, field: string, where: string): number {
  const v = obj[field];
  if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) throw new Error(`${where}: expected a positive integer "${field}", got ${JSON.stringify(v)}`);
  return v;
}

/** Path and query of a delivery or signed URL: links do not depend on the host, so this works at every edge. */
export function pathAndQuery(url: string): string {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
}

export function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

export interface Uploaded {
  fileId: string;
  /** The file record answered by complete-upload. */
  record: Record<string, unknown>;
  /** Path of delivery_url (no host). */
  deliveryPath: string;
  /** How long complete-upload took to answer (it waits for every live edge). */
  completeMs: number;
  /** performance.now() when complete-upload answered. */
  completedAt: number;
}

/** Coffer's seed flow: initiate, every 5 MiB part base64 in JSON (4 in flight), complete. */
export async function uploadFile(
  api: OriginApi,
  data: Buffer,
  opts: { name: string; visibility: "Public" | "Private"; signal?: AbortSignal; concurrency?: number },
): Promise<Uploaded> {
  const where = "POST /collections/upload/file";
  const init = await api.post(
    "/collections/upload/file",
    { name: opts.name, visibility: opts.visibility, size: data.length, file_type: "other" },
    opts.signal,
  );
  const fileId = requireString(init, "fileId", where);
  const bucket = requireString(init, "bucket", where);
  const key = requireString(init, "key", where);
  const uploadId = requireString(init, "uploadId", where);
  const chunkSize = requirePositiveInt(init, "chunk_size", where);
  const partCount = requirePositiveInt(init, "part_count", where);
  if (partCount !== Math.max(1, Math.ceil(data.length / chunkSize))) {
    throw new Error(`${where}: part_count ${partCount} does not fit size ${data.length} and chunk_size ${chunkSize}`);
  }
  const prefix =
    `{"bucket":${JSON.stringify(bucket)},"key":${JSON.stringify(key)},` +
    `"uploadId":${JSON.stringify(uploadId)},"fileId":${JSON.stringify(fileId)},"partNumber":`;
  let next = 1;
  const worker = async (): Promise<void> => {
    for (;;) {
      const part = next++;
      if (part > partCount) return;
      const start = (part - 1) * chunkSize;
      const b64 = data.toString("base64", start, Math.min(start + chunkSize, data.length));
      await api.post("/collections/upload/file-progress", [`${prefix}${part},"body":"`, b64, `"}`], opts.signal);
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 4, partCount) }, () => worker()));

  const t0 = performance.now();
  const record = await api.post("/collections/upload/complete-upload", { file_id: fileId }, opts.signal);
  const completedAt = performance.now();
  const got = record.sha256;
  if (typeof got !== "string" || got.toLowerCase() !== sha256(data)) {
    throw new Error(`complete-upload: sha256 ${JSON.stringify(got)} does not match the uploaded bytes`);
  }
  const deliveryUrl = requireString(record, "delivery_url", "complete-upload");
  return { fileId, record, deliveryPath: pathAndQuery(deliveryUrl), completeMs: completedAt - t0, completedAt };
}

/** POST /collections/create-link; returns the path and query of presigned_url. */
export async function createLink(api: OriginApi, fileId: string, expiry: number, signal?: AbortSignal): Promise<string> {
  const res = await api.post("/collections/create-link", { file_id: fileId, file_type: "other", expiry }, signal);
  return pathAndQuery(requireString(res, "presigned_url", "create-link"));
}

// ---------------------------------------------------------------------------
// CPUs

/** The CPUs this process may run on (Cpus_allowed_list), or null if unknown. */
export function allowedCpus(): number[] | null {
  let text: string;
  try {
    text = fs.readFileSync("/proc/self/status", "utf8");
  } catch {
    return null;
  }
  const m = /^Cpus_allowed_list:\s*(\S+)/m.exec(text);
  if (!m?.[1]) return null;
  const cpus: number[] = [];
  for (const range of m[1].split(",")) {
    const [a, b] = range.split("-").map(Number);
    if (a === undefined || !Number.isInteger(a)) return null;
    const end = b === undefined ? a : b;
    for (let c = a; c <= end; c++) cpus.push(c);
  }
  return cpus;
}

export interface CpuTicks {
  /**
   * user + nice + system, in clock ticks: time charged to processes. Interrupt and
   * softirq time (loopback networking, much of it) is left out because no process
   * is charged for it, so it would look like a neighbour's.
   */
  busy: number;
  /** All time, including idle, iowait, irq, softirq and steal. */
  total: number;
}

/** Times of one CPU (or of all, when cpu is null) from /proc/stat, or null. */
export function cpuTicks(cpu: number | null): CpuTicks | null {
  let text: string;
  try {
    text = fs.readFileSync("/proc/stat", "utf8");
  } catch {
    return null;
  }
  const name = cpu === null ? "cpu" : `cpu${cpu}`;
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  if (line === undefined) return null;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if ([user, nice, system, idle, iowait, irq, softirq, steal].some((x) => x === undefined || !Number.isFinite(x))) return null;
  const busy = user! + nice! + system!;
  return { busy, total: busy + idle! + iowait! + irq! + softirq! + steal! };
}

/** The 1-minute load average, or null. */
export function loadAverage(): number | null {
  const l = os.loadavg()[0];
  return l === undefined || !Number.isFinite(l) ? null : l;
}

// ---------------------------------------------------------------------------
// Statistics and output

export function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Nearest-rank percentile (p in 0..100): the smallest sample with at least p% of the samples at or below it. */
export function percentile(xs: number[], p: number): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * s.length));
  return s[rank - 1]!;
}

export const round2 = (x: number | null): number | null => (x === null ? null : Math.round(x * 100) / 100);

export function fmt(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || !Number.isFinite(x) ? "n/a" : x.toFixed(digits);
}

export function verdict(pass: boolean | null): string {
  return pass === null ? "SKIP" : pass ? "PASS" : "FAIL";
}

/** Aligns rows in columns: the first `leftColumns` left-aligned, the rest right-aligned. */
export function renderTable(rows: string[][], leftColumns = 1): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, c) => (widths[c] = Math.max(widths[c] ?? 0, cell.length)));
  return rows.map((row) =>
    row
      .map((cell, c) => (c < leftColumns ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join("  ")
      .trimEnd(),
  );
}

/** Picks `n` distinct random elements (all of them when n >= length). */
export function pickRandom<T>(xs: readonly T[], n: number): T[] {
  const copy = [...xs];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, Math.min(n, copy.length));
}
