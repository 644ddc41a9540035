// Delivery benchmark: one Coffer origin + one edge against nginx serving the
// same bytes from disk and a bare Node `http` server answering them from memory,
// loaded with wrk. The goals are CPU per request of each server process (utime +
// stime from /proc over the wrk run ÷ the requests wrk reports), not its rate.
//
// Run with `npm run bench:delivery -- [options]` (builds first) or
// `npx tsx bench/delivery.ts [options]`. See bench/README.md and `--help`.
//
// Scenarios, each measured edge, bare Node (small and signed only) then nginx, round after round:
//   small    a 4 KiB Public file at its delivery URL (a cache hit at the edge)
//   signed   the same file through a signed link (create-link, expiry 3600); nginx and bare Node serve it plain
//   private  a Private file with the same bytes through a signed link (edge only)
//   large    a 64 MiB Public file, throughput with few connections
//   logged   the 4 KiB file at a second edge that writes an access log (COFFER_EDGE_ACCESS_LOG),
//            loaded at the same time as the plain edge, both on the servers' core: each round's
//            ratio compares the two under the same conditions, so a cost of a few percent shows
//            through the machine's noise
// With two or more CPUs and taskset available, wrk (and this process) run on
// one CPU and the servers on another, so each side gets a whole core.

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import {
  DEFAULT_ENTRY,
  KiB,
  MiB,
  OriginApi,
  UsageError,
  allowedCpus,
  armDeadline,
  bounded,
  Child,
  ChildFailure,
  commandExists,
  commandPath,
  cpuTicks,
  createLink,
  errorMessage,
  fmt,
  header,
  installExitHandlers,
  loadAverage,
  log,
  makeWorkDir,
  median,
  parseEnvPairs,
  positiveNumber,
  releaseWatchdog,
  renderTable,
  request,
  round2,
  runCommand,
  sha256,
  sleep,
  stopAll,
  uploadFile,
  verdict,
} from "./common.js";
import { answerHeaders, startBareNode } from "./delivery/bare-node.js";

const STARTUP_TIMEOUT_MS = 60_000;
const HIT_TIMEOUT_MS = 60_000;
const LINK_EXPIRY_S = 3600;
const TARGET_HIT_VS_NGINX = 0.5;
const TARGET_SIGNED_VS_PUBLIC = 0.9;
const TARGET_LARGE_VS_NGINX = 0.5;
/** An edge writing its access log keeps at least this share of a plain edge's req/s (contract §11: at most 5% cost). */
const TARGET_LOGGED_VS_PLAIN = 0.95;
/** Issue 26: an edge hit's CPU per request at most this multiple of the bare Node server's. */
const TARGET_CPU_HIT_VS_BARE = 1.25;
/** Issue 26: a signed hit's CPU per request at most this multiple of a public hit's. */
const TARGET_CPU_SIGNED_VS_PUBLIC = 1.1;

type ScenarioId = "small" | "signed" | "private" | "large" | "logged";
const SCENARIO_IDS: readonly ScenarioId[] = ["small", "signed", "private", "large", "logged"];
type Server = "edge" | "node" | "nginx";

// ---------------------------------------------------------------------------
// Options

interface Options {
  rounds: number;
  durationS: number;
  warmupS: number;
  connections: number;
  largeConnections: number;
  smallBytes: number;
  largeBytes: number;
  scenarios: ScenarioId[];
  pin: boolean;
  install: boolean;
  maxTimeS: number;
  json: boolean;
  label: string | null;
  cofferEntry: string;
  tmpBase: string;
  keepData: boolean;
  envOrigin: Record<string, string>;
  envEdge: Record<string, string>;
}

const USAGE = `Usage: tsx bench/delivery.ts [options]

Compares a Coffer edge (with its origin) with nginx and a bare Node http server serving the
same bytes, under wrk: requests per second, and the server process's CPU per request.

Options:
  --rounds R              measured rounds per scenario and server, alternating (default 3)
  --duration SECONDS      length of each measured wrk run (default 10)
  --warmup SECONDS        unrecorded wrk run per scenario and server first; 0 = none (default 3)
  --connections C         wrk connections for the 4 KiB scenarios (default 50)
  --large-connections C   wrk connections for the large file (default 4)
  --small-kib K           size of the small file in KiB (default 4)
  --large-mib M           size of the large file in MiB (default 64)
  --scenarios LIST        comma-separated subset of small,signed,private,large,logged (default all)
  --no-pin                do not pin wrk and the servers to separate CPUs
  --no-install            fail instead of installing missing nginx/wrk with apt-get
  --max-time SECONDS      limit for the whole run (default 1200)
  --label NAME            label for this configuration (shown in the output)
  --env-origin K=V        extra environment for the origin (repeatable)
  --env-edge K=V          extra environment for the edge (repeatable)
  --coffer-entry PATH     Coffer CLI entry point (default dist/cli/main.js)
  --tmp-dir DIR           where the work directory is created (default OS tmp)
  --keep-data             do not delete the work directory at the end
  --json                  print a JSON summary on stdout (the table goes to stderr)
  -h, --help              show this help
`;

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      rounds: { type: "string" },
      duration: { type: "string" },
      warmup: { type: "string" },
      connections: { type: "string" },
      "large-connections": { type: "string" },
      "small-kib": { type: "string" },
      "large-mib": { type: "string" },
      scenarios: { type: "string" },
      "no-pin": { type: "boolean" },
      "no-install": { type: "boolean" },
      "max-time": { type: "string" },
      label: { type: "string" },
      "env-origin": { type: "string", multiple: true },
      "env-edge": { type: "string", multiple: true },
      "coffer-entry": { type: "string" },
      "tmp-dir": { type: "string" },
      "keep-data": { type: "boolean" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return null;

  let scenarios: ScenarioId[] = [...SCENARIO_IDS];
  if (values.scenarios !== undefined) {
    const wanted = values.scenarios.split(",").map((s) => s.trim()).filter(Boolean);
    for (const s of wanted) {
      if (!SCENARIO_IDS.includes(s as ScenarioId)) throw new UsageError(`--scenarios: unknown scenario ${JSON.stringify(s)}`);
    }
    scenarios = SCENARIO_IDS.filter((s) => wanted.includes(s));
    if (scenarios.length === 0) throw new UsageError(`--scenarios must name at least one scenario`);
  }
  const warmupS = values.warmup === undefined ? 3 : Number(values.warmup);
  if (!Number.isInteger(warmupS) || warmupS < 0) throw new UsageError(`--warmup must be a whole number of seconds`);
  const largeMiB = positiveNumber(values["large-mib"], 64, "--large-mib");
  if (largeMiB * MiB > 2 ** 31 - 1) throw new UsageError(`--large-mib is too large for one in-memory Buffer`);

  return {
    rounds: positiveNumber(values.rounds, 3, "--rounds", true),
    durationS: positiveNumber(values.duration, 10, "--duration", true),
    warmupS,
    connections: positiveNumber(values.connections, 50, "--connections", true),
    largeConnections: positiveNumber(values["large-connections"], 4, "--large-connections", true),
    smallBytes: Math.round(positiveNumber(values["small-kib"], 4, "--small-kib") * KiB),
    largeBytes: Math.round(largeMiB * MiB),
    scenarios,
    pin: !(values["no-pin"] ?? false),
    install: !(values["no-install"] ?? false),
    maxTimeS: positiveNumber(values["max-time"], 1200, "--max-time"),
    json: values.json ?? false,
    label: values.label ?? null,
    cofferEntry: path.resolve(values["coffer-entry"] ?? DEFAULT_ENTRY),
    tmpBase: path.resolve(values["tmp-dir"] ?? os.tmpdir()),
    keepData: values["keep-data"] ?? false,
    envOrigin: parseEnvPairs(values["env-origin"], "--env-origin"),
    envEdge: parseEnvPairs(values["env-edge"], "--env-edge"),
  };
}

// ---------------------------------------------------------------------------
// Tools: nginx and wrk from Debian's packages when missing

function findNginx(): string | null {
  return commandPath("nginx") ?? (fs.existsSync("/usr/sbin/nginx") ? "/usr/sbin/nginx" : null);
}

function ensureTools(install: boolean): { nginx: string; wrk: string } {
  const missing: string[] = [];
  if (findNginx() === null) missing.push("nginx");
  if (!commandExists("wrk")) missing.push("wrk");
  if (missing.length > 0) {
    const cmd = `apt-get update -qq && apt-get install -y -qq ${missing.join(" ")}`;
    if (!install) throw new Error(`${missing.join(" and ")} not found (--no-install given); install with: ${cmd}`);
    if (process.getuid?.() !== 0) throw new Error(`${missing.join(" and ")} not found and this is not root; install with: sudo sh -c '${cmd}'`);
    if (!commandExists("apt-get")) throw new Error(`${missing.join(" and ")} not found and there is no apt-get to install them`);
    log(`${missing.join(" and ")} not found: installing from Debian's packages with \`${cmd}\``);
    const r = spawnSync("sh", ["-c", cmd], {
      stdio: ["ignore", process.stderr, process.stderr],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      timeout: 600_000,
    });
    if (r.status !== 0) throw new Error(`\`${cmd}\` failed (exit ${r.status}${r.error ? `: ${r.error.message}` : ""})`);
  }
  const nginx = findNginx();
  const wrk = commandPath("wrk");
  if (nginx === null || wrk === null) throw new Error(`nginx or wrk still not found after installing`);
  return { nginx, wrk };
}

function versionOf(cmd: string, args: string[], re: RegExp): string | null {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 5000 });
  const m = re.exec(`${r.stdout ?? ""}\n${r.stderr ?? ""}`);
  return m?.[1] ?? null;
}

// ---------------------------------------------------------------------------
// CPU pinning

interface Pinning {
  loadCpu: number;
  serverCpu: number;
}

function planPinning(enabled: boolean): { pinning: Pinning | null; note: string } {
  if (!enabled) return { pinning: null, note: "not pinned (--no-pin): wrk and the servers share all CPUs" };
  if (!commandExists("taskset")) return { pinning: null, note: "not pinned: taskset (util-linux) not found; wrk and the servers share all CPUs" };
  const cpus = allowedCpus() ?? Array.from({ length: os.availableParallelism() }, (_, i) => i);
  if (cpus.length < 2) return { pinning: null, note: `not pinned: only ${cpus.length} CPU available; wrk and the servers share it` };
  const [loadCpu, serverCpu] = cpus as [number, number];
  // This process and wrk share the load CPU; the servers get the other one to themselves.
  const r = spawnSync("taskset", ["-a", "-p", "-c", String(loadCpu), String(process.pid)], { stdio: "ignore" });
  const self = r.status === 0 ? "wrk and this process" : "wrk";
  return {
    pinning: { loadCpu, serverCpu },
    note: `pinned with taskset: ${self} on CPU ${loadCpu}; edge, origin, bare Node and nginx on CPU ${serverCpu} (of ${cpus.length} allowed)`,
  };
}

function pinned(pin: Pinning | null, cpu: "load" | "server", command: string, args: string[]): { command: string; args: string[] } {
  if (pin === null) return { command, args };
  return { command: "taskset", args: ["-c", String(cpu === "load" ? pin.loadCpu : pin.serverCpu), command, ...args] };
}

// ---------------------------------------------------------------------------
// Servers

/** Environment without any COFFER_* setting of the caller, so that only ours apply. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("COFFER_")) env[k] = v;
  return env;
}

interface Coffer {
  origin: Child;
  edge: Child;
  originUrl: string;
  edgeUrl: string;
  /** A second edge following the same origin that writes an access log (COFFER_EDGE_ACCESS_LOG). */
  logged: { child: Child; url: string } | null;
  api: OriginApi;
}

async function startCoffer(opts: Options, pin: Pinning | null, workDir: string): Promise<Coffer> {
  if (!fs.existsSync(opts.cofferEntry)) throw new Error(`Coffer entry point ${opts.cofferEntry} does not exist; run \`npm run build\` first`);
  const accessKey = randomBytes(24).toString("hex");
  const secret = randomBytes(32).toString("hex");
  const edgeToken = randomBytes(32).toString("hex");
  const originDir = path.join(workDir, "origin-data");
  const edgeDir = path.join(workDir, "edge-cache");
  fs.mkdirSync(originDir);
  fs.mkdirSync(edgeDir);

  const originCmd = pinned(pin, "server", process.execPath, [opts.cofferEntry, "origin"]);
  const { child: origin, match: originUrl } = await Child.start(
    {
      name: "origin",
      ...originCmd,
      env: {
        ...cleanEnv(),
        COFFER_PORT: "0",
        COFFER_S3_PORT: "0",
        COFFER_HOST: "127.0.0.1",
        COFFER_DATA_DIR: originDir,
        COFFER_ACCESS_KEY: accessKey,
        COFFER_SIGNING_SECRET: secret,
        COFFER_EDGE_TOKEN: edgeToken,
        COFFER_CDN_URL: "http://cdn.invalid",
        ...opts.envOrigin,
      },
    },
    /origin listening on (https?:\/\/[^\s"']+)/,
    STARTUP_TIMEOUT_MS,
  );
  log(`origin: pid ${origin.pid}, ${originUrl}`);

  const edgeCmd = pinned(pin, "server", process.execPath, [opts.cofferEntry, "edge", "--origin", originUrl]);
  const { child: edge, match: edgeUrl } = await Child.start(
    {
      name: "edge",
      ...edgeCmd,
      env: {
        ...cleanEnv(),
        COFFER_EDGE_PORT: "0",
        COFFER_HOST: "127.0.0.1",
        COFFER_DATA_DIR: edgeDir,
        COFFER_SIGNING_SECRET: secret,
        COFFER_EDGE_TOKEN: edgeToken,
        ...opts.envEdge,
      },
    },
    /edge listening on (https?:\/\/[^\s"']+)/,
    STARTUP_TIMEOUT_MS,
  ).catch((err: unknown) => {
    throw err instanceof ChildFailure ? new ChildFailure(err.message, [...err.children, origin]) : err;
  });
  log(`edge: pid ${edge.pid}, ${edgeUrl}`);
  let logged: Coffer["logged"] = null;
  if (opts.scenarios.includes("logged")) {
    const loggedDir = path.join(workDir, "edge-logged-cache");
    fs.mkdirSync(loggedDir);
    const { child, match } = await Child.start(
      {
        name: "edge (access log)",
        ...pinned(pin, "server", process.execPath, [opts.cofferEntry, "edge", "--origin", originUrl]),
        env: {
          ...cleanEnv(), COFFER_EDGE_PORT: "0", COFFER_HOST: "127.0.0.1", COFFER_DATA_DIR: loggedDir, COFFER_SIGNING_SECRET: secret,
          COFFER_EDGE_TOKEN: edgeToken, COFFER_EDGE_ACCESS_LOG: path.join(workDir, "edge-access.log"), ...opts.envEdge,
        },
      },
      /edge listening on (https?:\/\/[^\s"']+)/,
      STARTUP_TIMEOUT_MS,
    );
    log(`edge with an access log: pid ${child.pid}, ${match}`);
    logged = { child, url: match };
  }
  return { origin, edge, originUrl, edgeUrl, logged, api: new OriginApi(originUrl, opts.envOrigin.COFFER_ACCESS_KEY ?? accessKey) };
}

function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error("no free port"))));
    });
  });
}

function nginxConf(prefix: string, root: string, port: number): string {
  const tmp = (name: string): string => path.join(prefix, "tmp", name);
  return `# Generated by bench/delivery.ts: one process serving ${root} from disk.
# master_process off: the process nginx starts is the one that serves
# (the equivalent of worker_processes 1), so its pid is the server's.
master_process off;
daemon off;
worker_processes 1;
pid ${path.join(prefix, "nginx.pid")};
error_log ${path.join(prefix, "error.log")} warn;

events {
    worker_connections 4096;
}

http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path ${tmp("body")};
    proxy_temp_path ${tmp("proxy")};
    fastcgi_temp_path ${tmp("fastcgi")};
    uwsgi_temp_path ${tmp("uwsgi")};
    scgi_temp_path ${tmp("scgi")};

    server {
        listen 127.0.0.1:${port};
        root ${root};
        location / {
        }
    }
}
`;
}

async function startNginx(nginxBin: string, pin: Pinning | null, workDir: string, root: string, probe: string): Promise<{ child: Child; url: string }> {
  const prefix = path.join(workDir, "nginx");
  fs.mkdirSync(path.join(prefix, "tmp"), { recursive: true });
  const port = await freePort();
  const conf = path.join(prefix, "nginx.conf");
  fs.writeFileSync(conf, nginxConf(prefix, root, port));
  const cmd = pinned(pin, "server", nginxBin, ["-p", prefix, "-e", path.join(prefix, "error.log"), "-c", conf]);
  const child = await Child.spawn({ name: "nginx", ...cmd });
  const url = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 15_000;
  for (;;) {
    if (!child.alive) throw new ChildFailure(`nginx exited at startup`, [child]);
    try {
      const res = await request(`${url}${probe}`, { timeoutMs: 2000 });
      if (res.status === 200) break;
      throw new Error(`nginx answered ${res.status} for ${probe}`);
    } catch (err) {
      if (performance.now() > deadline) {
        child.kill();
        throw new ChildFailure(`nginx did not serve ${probe} within 15 s: ${errorMessage(err)}`, [child]);
      }
      await sleep(100);
    }
  }
  log(`nginx: pid ${child.pid}, ${url} (conf ${conf})`);
  return { child, url };
}

// ---------------------------------------------------------------------------
// wrk

interface WrkResult {
  requests: number;
  reqPerSec: number;
  bytesPerSec: number;
  p50Ms: number | null;
  p99Ms: number | null;
  non2xx: number;
  socketErrors: { connect: number; read: number; write: number; timeout: number };
}

const BINARY_UNITS: Record<string, number> = { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };
const TIME_UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function parseWrk(out: string): WrkResult {
  const num = (re: RegExp, what: string): number => {
    const m = re.exec(out);
    if (!m?.[1]) throw new Error(`cannot find ${what} in wrk's output:\n${out}`);
    return Number(m[1]);
  };
  const transfer = /Transfer\/sec:\s*([\d.]+)([KMGT]?)B/.exec(out);
  if (!transfer?.[1]) throw new Error(`cannot find Transfer/sec in wrk's output:\n${out}`);
  const latency = (pct: string): number | null => {
    const m = new RegExp(`^\\s*${pct}%\\s+([\\d.]+)(us|ms|s|m|h)\\s*$`, "m").exec(out);
    return m?.[1] && m[2] ? Number(m[1]) * TIME_UNITS[m[2]]! : null;
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requests: num(/(\d+) requests in/, "the request count"),
    reqPerSec: num(/Requests\/sec:\s*([\d.]+)/, "Requests/sec"),
    bytesPerSec: Number(transfer[1]) * BINARY_UNITS[transfer[2] ?? ""]!,
    p50Ms: latency("50"),
    p99Ms: latency("99"),
    non2xx: /Non-2xx or 3xx responses: (\d+)/.test(out) ? num(/Non-2xx or 3xx responses: (\d+)/, "non-2xx") : 0,
    socketErrors: sock
      ? { connect: Number(sock[1]), read: Number(sock[2]), write: Number(sock[3]), timeout: Number(sock[4]) }
      : { connect: 0, read: 0, write: 0, timeout: 0 },
  };
}

async function runWrk(wrkBin: string, pin: Pinning | null, url: string, connections: number, durationS: number, timeoutS: number): Promise<WrkResult> {
  const args = ["-t1", `-c${connections}`, `-d${durationS}s`, `--timeout`, `${timeoutS}s`, "--latency", url];
  const cmd = pinned(pin, "load", wrkBin, args);
  const r = await runCommand(cmd.command, cmd.args, (durationS + timeoutS + 15) * 1000);
  if (r.code !== 0) throw new Error(`wrk ${args.join(" ")} exited with ${r.code ?? r.signal}:\n${r.stderr}${r.stdout}`);
  const res = parseWrk(r.stdout);
  if (res.non2xx > 0) throw new Error(`wrk got ${res.non2xx} non-2xx/3xx answers from ${url}; the figures would be meaningless:\n${r.stdout}`);
  if (res.socketErrors.connect > 0) throw new Error(`wrk could not connect to ${url}:\n${r.stdout}`);
  if (res.requests === 0) throw new Error(`wrk completed no request against ${url}:\n${r.stdout}`);
  return res;
}

// ---------------------------------------------------------------------------
// Scenarios

interface Scenario {
  id: ScenarioId;
  label: string;
  /** Path + query at the edge. */
  edgePath: string;
  /** Path at nginx, or null when the scenario is edge-only. */
  nginxPath: string | null;
  /** Also measured at the bare Node server (which answers any path). */
  bare?: boolean;
  bytes: number;
  connections: number;
  timeoutS: number;
  /** Main figure: requests per second, or throughput. */
  unit: "req/s" | "MiB/s";
  /** Measured at the edge that writes an access log instead of the plain one. */
  loggedEdge?: boolean;
}

interface RunRecord {
  /** Requests wrk completed in the run. */
  requests: number;
  reqPerSec: number;
  mibPerSec: number;
  p50Ms: number | null;
  p99Ms: number | null;
  /** CPU used by the server process during the run, as % of one core. */
  serverCpuPct: number | null;
  /** The server process's CPU time over the run ÷ the requests wrk completed, in µs. */
  cpuUsPerReq: number | null;
  /** CPU used by the origin during an edge run, as % of one core. */
  originCpuPct: number | null;
  /**
   * Share of the servers' CPU (when pinned) that went to processes outside this
   * benchmark during the run, in %: a noisy neighbour makes the figures unfair.
   */
  otherCpuPct: number | null;
  socketErrors: number;
}

interface ServerResult {
  runs: RunRecord[];
  medianReqPerSec: number | null;
  medianMiBPerSec: number | null;
  medianP99Ms: number | null;
  medianServerCpuPct: number | null;
  medianCpuUsPerReq: number | null;
  medianOtherCpuPct: number | null;
}

interface ScenarioResult {
  id: ScenarioId;
  label: string;
  bytes: number;
  connections: number;
  unit: "req/s" | "MiB/s";
  edge: ServerResult;
  /** The bare Node http server answering the same bytes from memory. */
  node: ServerResult | null;
  nginx: ServerResult | null;
  /** For the logged scenario: the plain edge, loaded in the same windows as the logging one. */
  plain: ServerResult | null;
  /** Edge answers seen as MISS in the check before a measured run. */
  missesBeforeRuns: number;
}

/** HEAD until the edge answers 200 with X-Cache: HIT; returns the milliseconds it took. */
async function waitForHit(edgeUrl: string, pathQuery: string, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  let last = "no answer";
  while (performance.now() - t0 < timeoutMs) {
    try {
      const res = await request(`${edgeUrl}${pathQuery}`, { method: "HEAD", timeoutMs: 5000 });
      last = `${res.status} X-Cache: ${header(res, "x-cache") ?? "(none)"}`;
      if (res.status === 200 && header(res, "x-cache") === "HIT") return performance.now() - t0;
    } catch (err) {
      last = errorMessage(err);
    }
    await sleep(50);
  }
  throw new Error(`the edge did not report X-Cache: HIT for ${pathQuery} within ${timeoutMs / 1000} s (last: ${last})`);
}

/** GETs a URL and checks the status, the bytes and (at the edge) X-Cache. */
async function verifyGet(what: string, url: string, expected: Buffer, expectCache: "HIT" | null): Promise<void> {
  const agent = new http.Agent({ keepAlive: false });
  const res = await request(url, { agent, timeoutMs: 60_000 });
  if (res.status !== 200) throw new Error(`${what}: GET ${url} -> ${res.status} ${res.body.toString("utf8").slice(0, 300)}`);
  if (res.body.length !== expected.length || sha256(res.body) !== sha256(expected)) {
    throw new Error(`${what}: GET ${url} returned ${res.body.length} bytes that differ from the uploaded ${expected.length}`);
  }
  if (expectCache !== null && header(res, "x-cache") !== expectCache) {
    throw new Error(`${what}: GET ${url} answered X-Cache: ${header(res, "x-cache") ?? "(none)"}, expected ${expectCache}`);
  }
}

// ---------------------------------------------------------------------------
// Main

interface Summary {
  label: string | null;
  node: string;
  nginx: string | null;
  wrk: string | null;
  pinning: string;
  loadAverageAtStart: number | null;
  rounds: number;
  durationS: number;
  warmupS: number;
  scenarios: ScenarioResult[];
  ratios: Record<string, number | null>;
  /** A goal is met when value >= min (rates) or value <= max (CPU per request). */
  targets: Record<string, { description: string; min: number | null; max: number | null; value: number | null; pass: boolean | null }>;
}

/** The median over rounds of round i's CPU per request in `a` ÷ that in `b`. */
function pairedMedian(a: Array<{ cpuUsPerReq: number | null }> | undefined, b: Array<{ cpuUsPerReq: number | null }> | undefined): number | null {
  if (!a || !b) return null;
  const ratios = a.flatMap((r, i) => {
    const x = r.cpuUsPerReq;
    const y = b[i]?.cpuUsPerReq;
    return x === null || y === null || y === undefined || y <= 0 ? [] : [x / y];
  });
  return ratios.length === 0 ? null : median(ratios);
}

function summarize(results: ScenarioResult[]): Pick<Summary, "ratios" | "targets"> {
  const by = (id: ScenarioId): ScenarioResult | undefined => results.find((r) => r.id === id);
  const div = (a: number | null | undefined, b: number | null | undefined): number | null =>
    a === null || a === undefined || b === null || b === undefined || b <= 0 ? null : a / b;
  const small = by("small");
  const signed = by("signed");
  const priv = by("private");
  const large = by("large");
  const logged = by("logged");
  const ratios: Record<string, number | null> = {
    logged_edge_vs_edge_public: round2(logged?.plain ? median(logged.edge.runs.map((r, i) => r.reqPerSec / (logged.plain!.runs[i]?.reqPerSec ?? NaN))) : null),
    small_edge_vs_nginx: round2(div(small?.edge.medianReqPerSec, small?.nginx?.medianReqPerSec)),
    signed_edge_vs_edge_public: round2(div(signed?.edge.medianReqPerSec, small?.edge.medianReqPerSec)),
    signed_edge_vs_nginx: round2(div(signed?.edge.medianReqPerSec, signed?.nginx?.medianReqPerSec)),
    private_signed_vs_edge_public: round2(div(priv?.edge.medianReqPerSec, small?.edge.medianReqPerSec)),
    large_edge_vs_nginx: round2(div(large?.edge.medianMiBPerSec, large?.nginx?.medianMiBPerSec)),
    cpu_small_edge_vs_node: round2(div(small?.edge.medianCpuUsPerReq, small?.node?.medianCpuUsPerReq)),
    cpu_small_edge_vs_nginx: round2(div(small?.edge.medianCpuUsPerReq, small?.nginx?.medianCpuUsPerReq)),
    cpu_small_node_vs_nginx: round2(div(small?.node?.medianCpuUsPerReq, small?.nginx?.medianCpuUsPerReq)),
    cpu_signed_edge_vs_edge_public: round2(div(signed?.edge.medianCpuUsPerReq, small?.edge.medianCpuUsPerReq)),
    cpu_signed_edge_vs_node: round2(div(signed?.edge.medianCpuUsPerReq, signed?.node?.medianCpuUsPerReq)),
    // Each round's pair measured minutes apart at most: the machine's drift over a run cancels.
    cpu_small_edge_vs_node_paired: round2(pairedMedian(small?.edge.runs, small?.node?.runs)),
    cpu_signed_edge_vs_edge_public_paired: round2(pairedMedian(signed?.edge.runs, small?.edge.runs)),
  };
  const target = (description: string, min: number, value: number | null) => ({
    description,
    min,
    max: null,
    value,
    pass: value === null ? null : value >= min,
  });
  const cpuTarget = (description: string, max: number, value: number | null) => ({
    description,
    min: null,
    max,
    value,
    pass: value === null ? null : value <= max,
  });
  return {
    ratios,
    targets: {
      cpuSmall: cpuTarget(
        `4 KiB hit: edge CPU/request <= ${TARGET_CPU_HIT_VS_BARE.toFixed(2)} x bare Node CPU/request`,
        TARGET_CPU_HIT_VS_BARE,
        ratios.cpu_small_edge_vs_node ?? null,
      ),
      cpuSigned: cpuTarget(
        `signed link: edge CPU/request <= ${TARGET_CPU_SIGNED_VS_PUBLIC.toFixed(2)} x edge public CPU/request`,
        TARGET_CPU_SIGNED_VS_PUBLIC,
        ratios.cpu_signed_edge_vs_edge_public ?? null,
      ),
      small: target(`4 KiB hit: edge req/s >= ${TARGET_HIT_VS_NGINX.toFixed(2)} x nginx req/s`, TARGET_HIT_VS_NGINX, ratios.small_edge_vs_nginx ?? null),
      signed: target(
        `signed link: edge req/s >= ${TARGET_SIGNED_VS_PUBLIC.toFixed(2)} x edge public req/s`,
        TARGET_SIGNED_VS_PUBLIC,
        ratios.signed_edge_vs_edge_public ?? null,
      ),
      large: target(`large file: edge MiB/s >= ${TARGET_LARGE_VS_NGINX.toFixed(2)} x nginx MiB/s`, TARGET_LARGE_VS_NGINX, ratios.large_edge_vs_nginx ?? null),
      logged: target(
        `access log on: edge req/s >= ${TARGET_LOGGED_VS_PLAIN.toFixed(2)} x edge without it`,
        TARGET_LOGGED_VS_PLAIN,
        ratios.logged_edge_vs_edge_public ?? null,
      ),
      private: target(
        `(extra) Private file, signed: edge req/s >= ${TARGET_SIGNED_VS_PUBLIC.toFixed(2)} x edge public req/s`,
        TARGET_SIGNED_VS_PUBLIC,
        ratios.private_signed_vs_edge_public ?? null,
      ),
    },
  };
}

function renderReport(opts: Options, s: Summary): string {
  const lines: string[] = [""];
  lines.push(
    `delivery benchmark${opts.label ? ` [${opts.label}]` : ""}: ${opts.rounds} round(s) x ${opts.durationS} s per scenario and server, ` +
      `warm-up ${opts.warmupS} s; node ${process.version}, nginx ${s.nginx ?? "?"}, wrk ${s.wrk ?? "?"}`,
  );
  lines.push(s.pinning);
  lines.push("");
  const rounds = Array.from({ length: opts.rounds }, (_, i) => `round ${i + 1}`);
  const rows: string[][] = [["scenario", "server", ...rounds, "median req/s", "median MiB/s", "p99 ms", "server CPU", "CPU µs/req", "others"]];
  for (const r of s.scenarios) {
    const row = (name: string, res: ServerResult): string[] => [
      name === "edge" ? `${r.label} [${r.unit}, -c${r.connections}]` : "",
      name,
      ...rounds.map((_, i) => {
        const run = res.runs[i];
        return run === undefined ? "n/a" : r.unit === "req/s" ? fmt(run.reqPerSec, 0) : fmt(run.mibPerSec, 1);
      }),
      fmt(res.medianReqPerSec, 0),
      fmt(res.medianMiBPerSec, 1),
      fmt(res.medianP99Ms, 2),
      res.medianServerCpuPct === null ? "n/a" : `${fmt(res.medianServerCpuPct, 0)}%`,
      fmt(res.medianCpuUsPerReq, 1),
      res.medianOtherCpuPct === null ? "n/a" : `${fmt(res.medianOtherCpuPct, 0)}%`,
    ];
    rows.push(row("edge", r.edge));
    if (r.node !== null) rows.push(row(r.id === "signed" ? "bare node (plain)" : "bare node", r.node));
    if (r.nginx !== null) rows.push(row(r.id === "signed" ? "nginx (plain)" : "nginx", r.nginx));
    if (r.plain !== null) rows.push(row("edge without log, same windows", r.plain));
  }
  lines.push(...renderTable(rows, 2));
  lines.push("(req/s and MiB/s from wrk's Requests/sec and Transfer/sec, 1 MiB = 2^20 bytes; medians over rounds;");
  lines.push(" p99 ms = wrk's 99th percentile latency, median over rounds; server CPU = CPU time of the edge, bare");
  lines.push(" Node or nginx process during the run as % of one core; CPU µs/req = that process's utime + stime from");
  lines.push(" /proc/<pid>/stat over the wrk run ÷ the requests wrk completed, median over rounds; others = % of the");
  lines.push(" servers' CPU used by processes outside this benchmark (pinned runs only); the origin's share during");
  lines.push(" edge runs is in --json)");
  const noisy = s.scenarios.some((r) => [r.edge, r.node, r.nginx].some((x) => x !== null && (x.medianOtherCpuPct ?? 0) > 10));
  if (noisy) lines.push("warning: other processes used more than 10% of the servers' CPU in some runs: the figures are unreliable; rerun on a quiet machine");
  if (s.loadAverageAtStart !== null && s.loadAverageAtStart > 0.5) {
    lines.push(`note: the 1-minute load average was ${fmt(s.loadAverageAtStart, 2)} when the benchmark started`);
  }
  const misses = s.scenarios.filter((r) => r.missesBeforeRuns > 0);
  for (const r of misses) lines.push(`warning: ${r.label}: the edge answered X-Cache: MISS before ${r.missesBeforeRuns} measured run(s)`);
  lines.push("");
  const ratioRows: string[][] = [];
  const add = (text: string, v: number | null | undefined): void => {
    if (v !== null && v !== undefined) ratioRows.push([text, fmt(v, 2)]);
  };
  add("ratio 4 KiB public: edge / nginx req/s", s.ratios.small_edge_vs_nginx);
  add("ratio signed link: edge signed / edge public req/s", s.ratios.signed_edge_vs_edge_public);
  add("ratio signed link: edge signed / nginx plain req/s", s.ratios.signed_edge_vs_nginx);
  add("ratio Private signed: edge / edge public req/s", s.ratios.private_signed_vs_edge_public);
  add("ratio large file: edge / nginx MiB/s", s.ratios.large_edge_vs_nginx);
  add("CPU/request 4 KiB public: edge / bare Node", s.ratios.cpu_small_edge_vs_node);
  add("CPU/request 4 KiB public: edge / nginx", s.ratios.cpu_small_edge_vs_nginx);
  add("CPU/request 4 KiB public: bare Node / nginx", s.ratios.cpu_small_node_vs_nginx);
  add("CPU/request signed link: edge signed / edge public", s.ratios.cpu_signed_edge_vs_edge_public);
  add("CPU/request signed link: edge signed / bare Node (plain)", s.ratios.cpu_signed_edge_vs_node);
  add("CPU/request 4 KiB public: edge / bare Node (median of each round's ratio)", s.ratios.cpu_small_edge_vs_node_paired);
  add("CPU/request signed link: edge signed / edge public (median of each round's ratio)", s.ratios.cpu_signed_edge_vs_edge_public_paired);
  add("ratio access log on: logging edge / plain edge req/s (median of same-window ratios)", s.ratios.logged_edge_vs_edge_public);
  lines.push(...renderTable(ratioRows, 1));
  lines.push("");
  const targetRows = Object.values(s.targets).map((t) => [`target: ${t.description}`, t.value === null ? "n/a" : fmt(t.value, 2), verdict(t.pass)]);
  lines.push(...renderTable(targetRows, 1));
  return lines.join("\n");
}

async function main(): Promise<number> {
  let opts: Options | null;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    log(`${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (opts === null) {
    process.stdout.write(USAGE);
    return 0;
  }
  installExitHandlers();
  armDeadline(opts.maxTimeS * 1000);

  const children: Child[] = [];
  let api: OriginApi | null = null;
  try {
    const tools = ensureTools(opts.install);
    const nginxVersion = versionOf(tools.nginx, ["-v"], /nginx\/(\S+)/);
    const wrkVersion = versionOf(tools.wrk, ["-v"], /wrk (\S+)/);
    // Counted before pinning, which leaves this process a single CPU.
    const cpuCount = os.availableParallelism();
    const { pinning, note } = planPinning(opts.pin);
    log(note);
    const loadAvgStart = loadAverage();
    if (loadAvgStart !== null && loadAvgStart > cpuCount / 4) {
      log(`note: the 1-minute load average is ${fmt(loadAvgStart, 2)} on ${cpuCount} CPUs: other work may disturb the figures`);
    }

    const workDir = makeWorkDir(opts.tmpBase, "coffer-delivery-", opts.keepData);
    // nginx (possibly running as another user) must be able to reach the served files.
    fs.chmodSync(workDir, 0o755);
    const www = path.join(workDir, "www");
    fs.mkdirSync(www, { mode: 0o755 });
    log(`work dir: ${workDir}${opts.keepData ? " (kept)" : ""}`);

    const small = randomBytes(opts.smallBytes);
    const large = randomBytes(opts.largeBytes);
    fs.writeFileSync(path.join(www, "small.bin"), small, { mode: 0o644 });
    fs.writeFileSync(path.join(www, "large.bin"), large, { mode: 0o644 });

    const coffer = await startCoffer(opts, pinning, workDir);
    children.push(coffer.origin, coffer.edge, ...(coffer.logged ? [coffer.logged.child] : []));
    api = coffer.api;
    const setup = <T>(what: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> =>
      bounded(what, 300_000, [coffer.origin, coffer.edge], fn);

    const need = new Set(opts.scenarios);
    log(`uploading the test files to the origin...`);
    const smallPublic = await setup("upload small", (signal) => uploadFile(coffer.api, small, { name: "small.bin", visibility: "Public", signal }));
    const signedPath = await setup("create-link", (signal) => createLink(coffer.api, smallPublic.fileId, LINK_EXPIRY_S, signal));
    let privatePath: string | null = null;
    let privateUnsigned: string | null = null;
    if (need.has("private")) {
      const up = await setup("upload private", (signal) => uploadFile(coffer.api, small, { name: "small-private.bin", visibility: "Private", signal }));
      privatePath = await setup("create-link private", (signal) => createLink(coffer.api, up.fileId, LINK_EXPIRY_S, signal));
      privateUnsigned = up.deliveryPath;
    }
    let largePath: string | null = null;
    if (need.has("large")) {
      const up = await setup("upload large", (signal) => uploadFile(coffer.api, large, { name: "large.bin", visibility: "Public", signal }));
      largePath = up.deliveryPath;
      log(`large file: complete-upload answered in ${fmt(up.completeMs, 0)} ms`);
    }

    // The edge prefetches after complete-upload; wait until it serves everything from its cache.
    const edge = coffer.edgeUrl;
    for (const [what, p] of [
      ["small public", smallPublic.deliveryPath],
      ["small signed", signedPath],
      ["private signed", privatePath],
      ["large", largePath],
    ] as const) {
      if (p === null) continue;
      const ms = await waitForHit(edge, p, HIT_TIMEOUT_MS);
      log(`edge: ${what} is a cache hit (${fmt(ms, 0)} ms after checking began)`);
    }
    await verifyGet("edge small public", `${edge}${smallPublic.deliveryPath}`, small, "HIT");
    await verifyGet("edge small signed", `${edge}${signedPath}`, small, "HIT");
    if (privatePath !== null && privateUnsigned !== null) {
      await verifyGet("edge private signed", `${edge}${privatePath}`, small, "HIT");
      const res = await request(`${edge}${privateUnsigned}`, { timeoutMs: 10_000 });
      if (res.status !== 403) throw new Error(`edge served the Private file unsigned: GET ${privateUnsigned} -> ${res.status} (expected 403)`);
    }
    if (largePath !== null) await verifyGet("edge large", `${edge}${largePath}`, large, "HIT");

    const nginx = await startNginx(tools.nginx, pinning, workDir, www, "/small.bin");
    children.push(nginx.child);
    await verifyGet("nginx small", `${nginx.url}/small.bin`, small, null);
    if (largePath !== null) await verifyGet("nginx large", `${nginx.url}/large.bin`, large, null);

    let bare: { child: Child; url: string } | null = null;
    if (need.has("small") || need.has("signed")) {
      // The headers of the public hit as the edge sends them, so both write the same answer.
      const hit = await request(`${edge}${smallPublic.deliveryPath}`, { timeoutMs: 10_000 });
      const headers = answerHeaders(hit);
      bare = await startBareNode((c, a) => pinned(pinning, "server", c, a), cleanEnv(), workDir, small, headers, STARTUP_TIMEOUT_MS);
      children.push(bare.child);
      log(`bare node: pid ${bare.child.pid}, ${bare.url}, headers ${headers.filter((_, i) => i % 2 === 0).join(", ")}`);
      await verifyGet("bare node small", `${bare.url}/small.bin`, small, "HIT");
    }

    if (coffer.logged) {
      const ms = await waitForHit(coffer.logged.url, smallPublic.deliveryPath, HIT_TIMEOUT_MS);
      log(`edge with an access log: small public is a cache hit (${fmt(ms, 0)} ms)`);
    }

    const scenarios: Scenario[] = [];
    const smallLabel = `${fmt(opts.smallBytes / KiB, 0)} KiB`;
    if (need.has("small")) {
      scenarios.push({ id: "small", label: `${smallLabel} public (hit)`, edgePath: smallPublic.deliveryPath, nginxPath: "/small.bin", bare: true, bytes: small.length, connections: opts.connections, timeoutS: 5, unit: "req/s" });
    }
    if (need.has("signed")) {
      scenarios.push({ id: "signed", label: `${smallLabel} signed link`, edgePath: signedPath, nginxPath: "/small.bin", bare: true, bytes: small.length, connections: opts.connections, timeoutS: 5, unit: "req/s" });
    }
    if (privatePath !== null) {
      scenarios.push({ id: "private", label: `${smallLabel} Private, signed`, edgePath: privatePath, nginxPath: null, bytes: small.length, connections: opts.connections, timeoutS: 5, unit: "req/s" });
    }
    if (coffer.logged) {
      scenarios.push({ id: "logged", label: `${smallLabel} public, access log on`, edgePath: smallPublic.deliveryPath, nginxPath: null, bytes: small.length, connections: opts.connections, timeoutS: 5, unit: "req/s", loggedEdge: true });
    }
    if (largePath !== null) {
      const label = `${fmt(opts.largeBytes / MiB, 0)} MiB public`;
      scenarios.push({ id: "large", label, edgePath: largePath, nginxPath: "/large.bin", bytes: large.length, connections: opts.largeConnections, timeoutS: 60, unit: "MiB/s" });
    }

    const empty = (): ServerResult => ({
      runs: [], medianReqPerSec: null, medianMiBPerSec: null, medianP99Ms: null, medianServerCpuPct: null, medianCpuUsPerReq: null, medianOtherCpuPct: null,
    });
    const results: ScenarioResult[] = scenarios.map((s) => ({
      id: s.id,
      label: s.label,
      bytes: s.bytes,
      connections: s.connections,
      unit: s.unit,
      edge: empty(),
      node: s.bare && bare !== null ? empty() : null,
      nginx: s.nginxPath === null ? null : empty(),
      plain: s.loggedEdge ? empty() : null,
      missesBeforeRuns: 0,
    }));

    const measure = async (s: Scenario, server: Server, durationS: number): Promise<RunRecord> => {
      const edgeBase = s.loggedEdge && coffer.logged ? coffer.logged.url : edge;
      // The bare server answers any path: it gets the edge's, query and all, so wrk sends the same request line.
      const url =
        server === "edge" ? `${edgeBase}${s.edgePath}` : server === "node" ? `${bare!.url}${s.edgePath}` : `${nginx.url}${s.nginxPath ?? ""}`;
      const target = server === "edge" ? (s.loggedEdge && coffer.logged ? coffer.logged.child : coffer.edge) : server === "node" ? bare!.child : nginx.child;
      const servers = [coffer.origin, coffer.edge, nginx.child, ...(bare ? [bare.child] : []), ...(coffer.logged ? [coffer.logged.child] : [])];
      const ours = (): number => servers.reduce((n, c) => n + (c.cpuMs() ?? 0), 0);
      const cpu0 = target.cpuMs();
      const origin0 = server === "edge" ? coffer.origin.cpuMs() : null;
      const ours0 = ours();
      const core0 = pinning === null ? null : cpuTicks(pinning.serverCpu);
      const t0 = performance.now();
      const res = await bounded(`wrk ${s.id} ${server}`, (durationS + s.timeoutS + 30) * 1000, [target, coffer.origin], () =>
        runWrk(tools.wrk, pinning, url, s.connections, durationS, s.timeoutS),
      );
      const wallMs = performance.now() - t0;
      const cpu1 = target.cpuMs();
      const origin1 = server === "edge" ? coffer.origin.cpuMs() : null;
      const core1 = pinning === null ? null : cpuTicks(pinning.serverCpu);
      let otherCpuPct: number | null = null;
      if (core0 !== null && core1 !== null && core1.total > core0.total) {
        const busyPct = ((core1.busy - core0.busy) / (core1.total - core0.total)) * 100;
        otherCpuPct = Math.max(0, busyPct - ((ours() - ours0) / wallMs) * 100);
      }
      return {
        requests: res.requests,
        reqPerSec: res.reqPerSec,
        mibPerSec: res.bytesPerSec / MiB,
        p50Ms: res.p50Ms,
        p99Ms: res.p99Ms,
        serverCpuPct: cpu0 === null || cpu1 === null ? null : ((cpu1 - cpu0) / wallMs) * 100,
        cpuUsPerReq: cpu0 === null || cpu1 === null ? null : ((cpu1 - cpu0) * 1000) / res.requests,
        originCpuPct: origin0 === null || origin1 === null ? null : ((origin1 - origin0) / wallMs) * 100,
        otherCpuPct,
        socketErrors: res.socketErrors.read + res.socketErrors.write + res.socketErrors.timeout,
      };
    };
    const serversOf = (s: Scenario): Server[] => [
      "edge",
      ...(s.bare && bare !== null ? (["node"] as const) : []),
      ...(s.nginxPath === null ? [] : (["nginx"] as const)),
    ];

    if (opts.warmupS > 0) {
      for (const s of scenarios) {
        for (const server of serversOf(s)) {
          log(`warm-up ${s.id} ${server} (${opts.warmupS} s)`);
          await measure(s, server, opts.warmupS);
        }
      }
    }

    for (let round = 1; round <= opts.rounds; round++) {
      for (const [i, s] of scenarios.entries()) {
        const res = results[i]!;
        for (const server of serversOf(s)) {
          if (server === "edge") {
            const head = await request(`${s.loggedEdge && coffer.logged ? coffer.logged.url : edge}${s.edgePath}`, { method: "HEAD", timeoutMs: 5000 });
            if (head.status !== 200) throw new Error(`edge answered ${head.status} to HEAD ${s.edgePath} before round ${round}`);
            if (header(head, "x-cache") !== "HIT") res.missesBeforeRuns++;
          }
          // The logging edge and the plain one under load together: the same conditions for both.
          const [run, plain] = await Promise.all([
            measure(s, server, opts.durationS),
            s.loggedEdge && server === "edge" ? measure({ ...s, loggedEdge: false }, "edge", opts.durationS) : null,
          ]);
          (server === "edge" ? res.edge : server === "node" ? res.node! : res.nginx!).runs.push(run);
          if (plain) res.plain!.runs.push(plain);
          const main = s.unit === "req/s" ? `${fmt(run.reqPerSec, 0)} req/s` : `${fmt(run.mibPerSec, 1)} MiB/s`;
          log(
            `round ${round}/${opts.rounds} ${s.id.padEnd(7)} ${server.padEnd(5)} ${main.padStart(14)}  ` +
              `(p99 ${fmt(run.p99Ms, 2)} ms, server CPU ${fmt(run.serverCpuPct, 0)}%, ${fmt(run.cpuUsPerReq, 1)} µs/req` +
              `${run.originCpuPct === null ? "" : `, origin CPU ${fmt(run.originCpuPct, 0)}%`}` +
              `${run.otherCpuPct === null ? "" : `, others on its CPU ${fmt(run.otherCpuPct, 0)}%`}` +
              `${run.socketErrors > 0 ? `, ${run.socketErrors} socket errors` : ""})`,
          );
        }
      }
    }

    for (const r of results) {
      for (const res of [r.edge, r.node, r.nginx, r.plain]) {
        if (res === null) continue;
        res.medianReqPerSec = round2(median(res.runs.map((x) => x.reqPerSec)));
        res.medianMiBPerSec = round2(median(res.runs.map((x) => x.mibPerSec)));
        res.medianP99Ms = round2(median(res.runs.flatMap((x) => (x.p99Ms === null ? [] : [x.p99Ms]))));
        res.medianServerCpuPct = round2(median(res.runs.flatMap((x) => (x.serverCpuPct === null ? [] : [x.serverCpuPct]))));
        res.medianCpuUsPerReq = round2(median(res.runs.flatMap((x) => (x.cpuUsPerReq === null ? [] : [x.cpuUsPerReq]))));
        res.medianOtherCpuPct = round2(median(res.runs.flatMap((x) => (x.otherCpuPct === null ? [] : [x.otherCpuPct]))));
        for (const run of res.runs) {
          run.reqPerSec = round2(run.reqPerSec)!;
          run.mibPerSec = round2(run.mibPerSec)!;
          run.serverCpuPct = round2(run.serverCpuPct);
          run.cpuUsPerReq = round2(run.cpuUsPerReq);
          run.originCpuPct = round2(run.originCpuPct);
          run.otherCpuPct = round2(run.otherCpuPct);
        }
      }
    }

    const summary: Summary = {
      label: opts.label,
      node: process.version,
      nginx: nginxVersion,
      wrk: wrkVersion,
      pinning: note,
      loadAverageAtStart: round2(loadAvgStart),
      rounds: opts.rounds,
      durationS: opts.durationS,
      warmupS: opts.warmupS,
      scenarios: results,
      ...summarize(results),
    };
    const report = renderReport(opts, summary);
    if (opts.json) {
      log(report);
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    } else {
      process.stdout.write(`${report}\n`);
    }
    return 0;
  } catch (err) {
    log(`\nBENCHMARK FAILED: ${errorMessage(err)}`);
    const involved = err instanceof ChildFailure ? err.children : children;
    for (const child of involved) log(child.diagnostics());
    return 1;
  } finally {
    api?.close();
    await stopAll(children.reverse());
    releaseWatchdog();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
