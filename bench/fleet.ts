// Fleet benchmark: one Coffer origin and many edge processes (50 by default).
//
// Run with `npm run bench:fleet -- [options]` (builds first) or
// `npx tsx bench/fleet.ts [options]`. See bench/README.md and `--help`.
//
// It measures what the origin promises about its edges:
//   prewarm     after complete-upload answers, how long until every edge
//               serves the new file from its own cache (HEAD, X-Cache: HIT);
//   delete      how long /collections/file/delete takes when every edge must
//               acknowledge, and whether any edge still serves the file after;
//   visibility  the same for /collections/file/update switching Public and
//               Private, and whether an edge still serves it unsigned.
// Every phase is bounded in time; all processes and the work directory are
// removed on exit, failure, Ctrl-C and (through a watchdog) SIGKILL.

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import {
  DEFAULT_ENTRY,
  KiB,
  MB,
  MiB,
  OriginApi,
  armDeadline,
  bounded,
  Child,
  ChildFailure,
  createLink,
  errorCode,
  errorMessage,
  fmt,
  header,
  installExitHandlers,
  loadAverage,
  log,
  makeWorkDir,
  median,
  parseEnvPairs,
  percentile,
  pickRandom,
  positiveNumber,
  releaseWatchdog,
  renderTable,
  request,
  round2,
  sha256,
  sleep,
  stopAll,
  uploadFile,
  verdict,
  type HttpResponse,
} from "./common.js";

const TARGET_PREWARM_MS = 2000;
const TARGET_DELETE_P99_MS = 250;
const TARGET_SWITCH_P99_MS = 250;
const SMALL_BYTES = 4 * KiB;
const LINK_EXPIRY_S = 3600;

// ---------------------------------------------------------------------------
// Options

interface Options {
  edges: number;
  batch: number;
  rounds: number;
  prewarmBytes: number;
  count: number;
  verify: number;
  cacheBytes: number;
  pollMs: number;
  phaseTimeoutMs: number;
  startupTimeoutMs: number;
  maxTimeS: number;
  json: boolean;
  label: string | null;
  cofferEntry: string;
  tmpBase: string;
  keepData: boolean;
  envOrigin: Record<string, string>;
  envEdge: Record<string, string>;
}

const USAGE = `Usage: tsx bench/fleet.ts [options]

Runs one Coffer origin and N edges; measures prewarm, delete and visibility-switch latency.

Options:
  --edges N               edge processes (default 50)
  --batch B               edges starting at once (default 10)
  --rounds R              prewarm rounds (default 3)
  --prewarm-mib M         size of the prewarm file in MiB (default 10)
  --count K               files deleted, and visibility switches each way (default 20)
  --verify V              random edges checked after each delete or switch (default 3)
  --cache-mib M           COFFER_EDGE_CACHE_BYTES of each edge, in MiB (default 64)
  --poll-ms MS            interval between HEADs to one edge while waiting for HIT (default 50)
  --phase-timeout S       limit for one prewarm round or one wait for the edges (default 30)
  --startup-timeout S     limit for all edges to report listening (default 180)
  --max-time SECONDS      limit for the whole run (default 1200)
  --label NAME            label for this configuration (shown in the output)
  --env-origin K=V        extra environment for the origin (repeatable)
  --env-edge K=V          extra environment for every edge (repeatable)
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
      edges: { type: "string" },
      batch: { type: "string" },
      rounds: { type: "string" },
      "prewarm-mib": { type: "string" },
      count: { type: "string" },
      verify: { type: "string" },
      "cache-mib": { type: "string" },
      "poll-ms": { type: "string" },
      "phase-timeout": { type: "string" },
      "startup-timeout": { type: "string" },
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
  return {
    edges: positiveNumber(values.edges, 50, "--edges", true),
    batch: positiveNumber(values.batch, 10, "--batch", true),
    rounds: positiveNumber(values.rounds, 3, "--rounds", true),
    prewarmBytes: Math.round(positiveNumber(values["prewarm-mib"], 10, "--prewarm-mib") * MiB),
    count: positiveNumber(values.count, 20, "--count", true),
    verify: positiveNumber(values.verify, 3, "--verify", true),
    cacheBytes: Math.round(positiveNumber(values["cache-mib"], 64, "--cache-mib") * MiB),
    pollMs: positiveNumber(values["poll-ms"], 50, "--poll-ms"),
    phaseTimeoutMs: positiveNumber(values["phase-timeout"], 30, "--phase-timeout") * 1000,
    startupTimeoutMs: positiveNumber(values["startup-timeout"], 180, "--startup-timeout") * 1000,
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
// Processes

/** Environment without any COFFER_* setting of the caller, so that only ours apply. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("COFFER_")) env[k] = v;
  return env;
}

interface Edge {
  index: number;
  child: Child;
  url: string;
}

interface Fleet {
  origin: Child;
  api: OriginApi;
  edges: Edge[];
  startupMs: number;
}

/** Children started so far, for cleanup and diagnostics even when startup fails half-way. */
const started: Child[] = [];

async function startFleet(opts: Options, workDir: string): Promise<Fleet> {
  if (!fs.existsSync(opts.cofferEntry)) throw new Error(`Coffer entry point ${opts.cofferEntry} does not exist; run \`npm run build\` first`);
  const accessKey = randomBytes(24).toString("hex");
  const secret = randomBytes(32).toString("hex");
  const edgeToken = randomBytes(32).toString("hex");
  const originDir = path.join(workDir, "origin-data");
  fs.mkdirSync(originDir);
  const { child: origin, match: originUrl } = await Child.start(
    {
      name: "origin",
      command: process.execPath,
      args: [opts.cofferEntry, "origin"],
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
    60_000,
  );
  started.push(origin);
  log(`origin: pid ${origin.pid}, ${originUrl}`);

  const edgesDir = path.join(workDir, "edges");
  fs.mkdirSync(edgesDir);
  const edges: Edge[] = new Array<Edge>(opts.edges);
  const t0 = performance.now();
  const deadline = t0 + opts.startupTimeoutMs;
  let next = 0;
  let ready = 0;
  let failed: unknown = null;
  const startOne = async (index: number): Promise<void> => {
    const dataDir = path.join(edgesDir, `edge-${String(index + 1).padStart(3, "0")}`);
    fs.mkdirSync(dataDir);
    const child = await Child.spawn({
      name: `edge ${index + 1}`,
      command: process.execPath,
      args: [opts.cofferEntry, "edge", "--origin", originUrl],
      env: {
        ...cleanEnv(),
        COFFER_EDGE_PORT: "0",
        COFFER_HOST: "127.0.0.1",
        COFFER_DATA_DIR: dataDir,
        COFFER_SIGNING_SECRET: secret,
        COFFER_EDGE_TOKEN: edgeToken,
        COFFER_EDGE_CACHE_BYTES: String(opts.cacheBytes),
        ...opts.envEdge,
      },
    });
    started.push(child);
    try {
      const url = await child.waitForLine(/edge listening on (https?:\/\/[^\s"']+)/, Math.max(1000, deadline - performance.now()));
      edges[index] = { index, child, url };
    } catch (err) {
      throw new ChildFailure(errorMessage(err), [child, origin]);
    }
    ready++;
    if (ready % 10 === 0 || ready === opts.edges) log(`edges listening: ${ready}/${opts.edges} (${fmt((performance.now() - t0) / 1000, 1)} s)`);
  };
  // Up to `batch` edges start at once; the next one starts as soon as one is listening.
  const worker = async (): Promise<void> => {
    while (failed === null) {
      const i = next++;
      if (i >= opts.edges) return;
      try {
        await startOne(i);
      } catch (err) {
        failed ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.batch, opts.edges) }, () => worker()));
  if (failed !== null) throw failed;
  const startupMs = performance.now() - t0;
  return { origin, api: new OriginApi(originUrl, opts.envOrigin.COFFER_ACCESS_KEY ?? accessKey, 8), edges, startupMs };
}

// ---------------------------------------------------------------------------
// Edge requests

/** Keep-alive connections to the edges, at most 2 per edge. */
const edgeAgent = new http.Agent({ keepAlive: true, maxSockets: 2 });

function edgeGet(edge: Edge, pathQuery: string, method: "GET" | "HEAD" = "GET"): Promise<HttpResponse> {
  return request(`${edge.url}${pathQuery}`, { method, agent: edgeAgent, timeoutMs: 15_000 });
}

interface HitWait {
  /** Per edge: ms from `t0` until its first HIT, or null if none within the limit. */
  hitMs: Array<number | null>;
  /** Answers other than 200 seen while waiting, by status (e.g. 404 before the edge heard of the file). */
  otherStatuses: Record<string, number>;
  /** Edges whose first answer was 200 MISS, 200 HIT, or something else. */
  firstAnswer: Record<string, number>;
}

/** HEADs every edge every pollMs until each answers 200 with X-Cache: HIT. */
async function waitAllHit(edges: Edge[], pathQuery: string, t0: number, opts: Options, signal: AbortSignal): Promise<HitWait> {
  const result: HitWait = { hitMs: edges.map(() => null), otherStatuses: {}, firstAnswer: {} };
  const deadline = t0 + opts.phaseTimeoutMs;
  await Promise.all(
    edges.map(async (edge, i) => {
      let first = true;
      while (!signal.aborted && performance.now() < deadline) {
        let res: HttpResponse | null = null;
        try {
          res = await edgeGet(edge, pathQuery, "HEAD");
        } catch (err) {
          result.otherStatuses[errorMessage(err).slice(0, 60)] = (result.otherStatuses[errorMessage(err).slice(0, 60)] ?? 0) + 1;
        }
        const now = performance.now();
        if (res !== null) {
          const cache = header(res, "x-cache") ?? "none";
          if (first) {
            const key = res.status === 200 ? `200 ${cache}` : String(res.status);
            result.firstAnswer[key] = (result.firstAnswer[key] ?? 0) + 1;
            first = false;
          }
          if (res.status === 200 && cache === "HIT") {
            result.hitMs[i] = now - t0;
            return;
          }
          if (res.status !== 200) result.otherStatuses[String(res.status)] = (result.otherStatuses[String(res.status)] ?? 0) + 1;
        }
        await sleep(opts.pollMs, signal).catch(() => {});
      }
    }),
  );
  return result;
}

// ---------------------------------------------------------------------------
// Checks: what the contract promises once the origin has answered

interface Check {
  description: string;
  passed: number;
  total: number;
  /** The first few failures, as text. */
  failures: string[];
}

class Checks {
  readonly list: Check[] = [];

  private get(description: string): Check {
    let c = this.list.find((x) => x.description === description);
    if (c === undefined) {
      c = { description, passed: 0, total: 0, failures: [] };
      this.list.push(c);
    }
    return c;
  }

  /** Declares a check so it is listed even with no sample. */
  declare(description: string): void {
    this.get(description);
  }

  record(description: string, ok: boolean, failure: () => string): void {
    const c = this.get(description);
    c.total++;
    if (ok) c.passed++;
    else {
      const text = failure();
      if (c.failures.length < 5) c.failures.push(text);
      log(`CHECK FAILED: ${description}: ${text}`);
    }
  }

  get allPassed(): boolean {
    return this.list.every((c) => c.passed === c.total);
  }
}

function describe(res: HttpResponse): string {
  const code = errorCode(res);
  return `${res.status}${code ? ` ${code}` : ""}${header(res, "x-cache") ? ` X-Cache: ${header(res, "x-cache")}` : ""}`;
}

const CHECK_PREWARM_BYTES = "prewarm: GET at random edges is 200, X-Cache: HIT, same bytes";
const CHECK_DELETED_UNSIGNED = "after delete: unsigned GET at random edges is 404";
const CHECK_DELETED_SIGNED = "after delete: signed GET at a random edge is 404";
const CHECK_PRIVATE_UNSIGNED = "after switch to Private: unsigned GET at random edges is 403";
const CHECK_PRIVATE_SIGNED = "after switch to Private: signed GET at a random edge is 200";
const CHECK_PUBLIC_UNSIGNED = "after switch to Public: unsigned GET at random edges is 200";

// ---------------------------------------------------------------------------
// Phases

interface PrewarmRound {
  completeMs: number;
  firstHitMs: number | null;
  medianHitMs: number | null;
  /** Until the last edge reported HIT; null when some edge did not within the limit. */
  allHitMs: number | null;
  edgesHit: number;
  firstAnswer: Record<string, number>;
  otherStatuses: Record<string, number>;
  deleteMs: number;
  /** CPU used from complete-upload's answer until all HITs (or the limit), in ms. */
  originCpuMs: number | null;
  edgesCpuMs: number | null;
  waitMs: number;
}

async function prewarmRound(fleet: Fleet, opts: Options, round: number, checks: Checks, signal: AbortSignal): Promise<PrewarmRound> {
  const data = randomBytes(opts.prewarmBytes);
  const up = await uploadFile(fleet.api, data, { name: `prewarm-${round}.bin`, visibility: "Public", signal });
  const edgesCpu = (): number => fleet.edges.reduce((n, e) => n + (e.child.cpuMs() ?? 0), 0);
  const origin0 = fleet.origin.cpuMs();
  const edges0 = edgesCpu();
  const wait = await waitAllHit(fleet.edges, up.deliveryPath, up.completedAt, opts, signal);
  const waitMs = performance.now() - up.completedAt;
  const origin1 = fleet.origin.cpuMs();
  const edges1 = edgesCpu();
  const hits = wait.hitMs.filter((x): x is number => x !== null);
  const allHitMs = hits.length === fleet.edges.length ? Math.max(...hits) : null;
  for (const edge of pickRandom(fleet.edges, opts.verify)) {
    const res = await edgeGet(edge, up.deliveryPath);
    const ok = res.status === 200 && header(res, "x-cache") === "HIT" && res.body.length === data.length && sha256(res.body) === sha256(data);
    checks.record(CHECK_PREWARM_BYTES, ok, () => `edge ${edge.index + 1}: ${describe(res)}, ${res.body.length} bytes`);
  }
  // Keep the caches small: the prewarm file goes away after the round (not counted in the delete figures).
  const t = performance.now();
  await fleet.api.post("/collections/file/delete", { file_id: up.fileId }, signal, 60_000);
  return {
    completeMs: up.completeMs,
    firstHitMs: hits.length > 0 ? Math.min(...hits) : null,
    medianHitMs: median(hits),
    allHitMs,
    edgesHit: hits.length,
    firstAnswer: wait.firstAnswer,
    otherStatuses: wait.otherStatuses,
    deleteMs: performance.now() - t,
    originCpuMs: origin0 === null || origin1 === null ? null : origin1 - origin0,
    edgesCpuMs: edges1 - edges0,
    waitMs,
  };
}

interface SmallFile {
  fileId: string;
  deliveryPath: string;
  signedPath: string;
  data: Buffer;
}

async function uploadSmall(fleet: Fleet, name: string, signal: AbortSignal): Promise<SmallFile> {
  const data = randomBytes(SMALL_BYTES);
  const up = await uploadFile(fleet.api, data, { name, visibility: "Public", signal });
  const signedPath = await createLink(fleet.api, up.fileId, LINK_EXPIRY_S, signal);
  return { fileId: up.fileId, deliveryPath: up.deliveryPath, signedPath, data };
}

/** Waits until every edge has every file as a HIT; returns ms, or null with a warning when the limit passed first. */
async function waitFilesCached(fleet: Fleet, files: SmallFile[], opts: Options, signal: AbortSignal): Promise<number | null> {
  const t0 = performance.now();
  const results = await Promise.all(files.map((f) => waitAllHit(fleet.edges, f.deliveryPath, t0, opts, signal)));
  const missing = results.reduce((n, r) => n + r.hitMs.filter((x) => x === null).length, 0);
  if (missing > 0) {
    log(`warning: ${missing} of ${files.length * fleet.edges.length} (edge, file) pairs were not HITs within ${opts.phaseTimeoutMs / 1000} s; measuring anyway`);
    return null;
  }
  return performance.now() - t0;
}

async function deletePhase(fleet: Fleet, opts: Options, checks: Checks, signal: AbortSignal): Promise<{ ms: number[]; cachedAfterMs: number | null }> {
  const files: SmallFile[] = [];
  for (let i = 0; i < opts.count; i++) files.push(await uploadSmall(fleet, `delete-${i + 1}.bin`, signal));
  const cachedAfterMs = await waitFilesCached(fleet, files, opts, signal);
  if (cachedAfterMs !== null) log(`delete: ${files.length} files are HITs at all ${fleet.edges.length} edges (${fmt(cachedAfterMs, 0)} ms)`);
  const ms: number[] = [];
  for (const [i, f] of files.entries()) {
    const t0 = performance.now();
    const res = await fleet.api.post("/collections/file/delete", { file_id: f.fileId }, signal, 60_000);
    ms.push(performance.now() - t0);
    if (res.deleted !== true) throw new Error(`file/delete answered ${JSON.stringify(res)}, expected deleted: true`);
    const sample = pickRandom(fleet.edges, opts.verify);
    for (const edge of sample) {
      const r = await edgeGet(edge, f.deliveryPath);
      checks.record(CHECK_DELETED_UNSIGNED, r.status === 404, () => `file ${i + 1}, edge ${edge.index + 1}: ${describe(r)}`);
    }
    const edge = sample[0]!;
    const r = await edgeGet(edge, f.signedPath);
    checks.record(CHECK_DELETED_SIGNED, r.status === 404, () => `file ${i + 1}, edge ${edge.index + 1}: ${describe(r)}`);
  }
  return { ms, cachedAfterMs };
}

async function visibilityPhase(
  fleet: Fleet,
  opts: Options,
  checks: Checks,
  signal: AbortSignal,
): Promise<{ toPrivateMs: number[]; toPublicMs: number[]; publicAgainHits: number; publicAgainAnswers: number }> {
  const f = await uploadSmall(fleet, "visibility.bin", signal);
  const cachedMs = await waitFilesCached(fleet, [f], opts, signal);
  if (cachedMs !== null) log(`visibility: the file is a HIT at all ${fleet.edges.length} edges (${fmt(cachedMs, 0)} ms)`);
  const toPrivateMs: number[] = [];
  const toPublicMs: number[] = [];
  let publicAgainHits = 0;
  let publicAgainAnswers = 0;
  const update = async (visibility: "Public" | "Private"): Promise<number> => {
    const t0 = performance.now();
    const res = await fleet.api.post("/collections/file/update", { file_id: f.fileId, visibility }, signal, 60_000);
    const ms = performance.now() - t0;
    if (res.visibility !== visibility) throw new Error(`file/update answered visibility ${JSON.stringify(res.visibility)}, expected ${visibility}`);
    return ms;
  };
  const sameBytes = (r: HttpResponse): boolean => r.status === 200 && r.body.length === f.data.length && sha256(r.body) === sha256(f.data);
  for (let i = 1; i <= opts.count; i++) {
    toPrivateMs.push(await update("Private"));
    const sample = pickRandom(fleet.edges, opts.verify);
    for (const edge of sample) {
      const r = await edgeGet(edge, f.deliveryPath);
      checks.record(CHECK_PRIVATE_UNSIGNED, r.status === 403, () => `switch ${i}, edge ${edge.index + 1}: ${describe(r)}`);
    }
    const edge = sample[0]!;
    const signed = await edgeGet(edge, f.signedPath);
    checks.record(CHECK_PRIVATE_SIGNED, sameBytes(signed), () => `switch ${i}, edge ${edge.index + 1}: ${describe(signed)}`);

    toPublicMs.push(await update("Public"));
    for (const e of pickRandom(fleet.edges, opts.verify)) {
      const r = await edgeGet(e, f.deliveryPath);
      checks.record(CHECK_PUBLIC_UNSIGNED, sameBytes(r), () => `switch ${i}, edge ${e.index + 1}: ${describe(r)}`);
      if (r.status === 200) {
        publicAgainAnswers++;
        if (header(r, "x-cache") === "HIT") publicAgainHits++;
      }
    }
  }
  return { toPrivateMs, toPublicMs, publicAgainHits, publicAgainAnswers };
}

// ---------------------------------------------------------------------------
// Results

interface LatencyStats {
  n: number;
  medianMs: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  samplesMs: number[];
}

function stats(xs: number[]): LatencyStats {
  return {
    n: xs.length,
    medianMs: round2(median(xs)),
    p99Ms: round2(percentile(xs, 99)),
    maxMs: round2(xs.length === 0 ? null : Math.max(...xs)),
    samplesMs: xs.map((x) => round2(x)!),
  };
}

interface Summary {
  label: string | null;
  node: string;
  edges: number;
  cacheBytes: number;
  loadAverageAtStart: number | null;
  startupMs: number;
  rssMB: { originAfterStartup: number | null; edgesTotalAfterStartup: number | null; edgeMedianAfterStartup: number | null; edgesTotalAtEnd: number | null };
  prewarm: { bytes: number; rounds: PrewarmRound[]; medianAllHitMs: number | null; failedRounds: number };
  delete: LatencyStats & { cachedAfterMs: number | null };
  visibility: { both: LatencyStats; toPrivate: LatencyStats; toPublic: LatencyStats; publicAgainHits: number; publicAgainAnswers: number };
  checks: Check[];
  targets: Record<string, { description: string; value: number | null; pass: boolean | null }>;
}

function fleetRss(fleet: Fleet): { total: number | null; median: number | null } {
  const kbs = fleet.edges.map((e) => e.child.statusKb("VmRSS")).filter((x): x is number => x !== null);
  if (kbs.length === 0) return { total: null, median: null };
  return { total: round2((kbs.reduce((a, b) => a + b, 0) * 1024) / MB), median: round2(((median(kbs) ?? 0) * 1024) / MB) };
}

function renderReport(opts: Options, s: Summary): string {
  const lines: string[] = [""];
  lines.push(
    `fleet benchmark${opts.label ? ` [${opts.label}]` : ""}: ${s.edges} edges + 1 origin, node ${s.node}, ` +
      `edge cache ${fmt(s.cacheBytes / MiB, 0)} MiB each, ${os.availableParallelism()} CPUs`,
  );
  lines.push(
    `all edges listening after ${fmt(s.startupMs / 1000, 1)} s (up to ${opts.batch} starting at once); RSS after startup: ` +
      `origin ${fmt(s.rssMB.originAfterStartup, 0)} MB, edges ${fmt(s.rssMB.edgesTotalAfterStartup, 0)} MB in total ` +
      `(median ${fmt(s.rssMB.edgeMedianAfterStartup, 0)} MB each); at the end ${fmt(s.rssMB.edgesTotalAtEnd, 0)} MB in total`,
  );
  if (s.loadAverageAtStart !== null && s.loadAverageAtStart > os.availableParallelism() / 4) {
    lines.push(`note: the 1-minute load average was ${fmt(s.loadAverageAtStart, 2)} on ${os.availableParallelism()} CPUs at the start: other work may disturb the figures`);
  }
  lines.push("");
  lines.push(`prewarm: ${fmt(s.prewarm.bytes / MiB, 0)} MiB Public file; ms from complete-upload's answer until each edge answers HEAD with X-Cache: HIT`);
  const pre: string[][] = [
    ["round", "complete-upload ms", "first edge HIT", "median edge HIT", `all ${s.edges} HIT`, "incl. complete", "CPU origin / edges", "first answers"],
  ];
  const cpuShare = (ms: number | null, r: PrewarmRound): string => (ms === null || r.waitMs <= 0 ? "n/a" : `${fmt((ms / r.waitMs) * 100, 0)}%`);
  s.prewarm.rounds.forEach((r, i) =>
    pre.push([
      String(i + 1),
      fmt(r.completeMs, 0),
      fmt(r.firstHitMs, 0),
      fmt(r.medianHitMs, 0),
      r.allHitMs === null ? `only ${r.edgesHit} in ${opts.phaseTimeoutMs / 1000} s` : fmt(r.allHitMs, 0),
      r.allHitMs === null ? "n/a" : fmt(r.completeMs + r.allHitMs, 0),
      `${cpuShare(r.originCpuMs, r)} / ${cpuShare(r.edgesCpuMs, r)}`,
      Object.entries(r.firstAnswer)
        .map(([k, v]) => `${v}x ${k}`)
        .join(", "),
    ]),
  );
  lines.push(...renderTable(pre, 1).map((l) => `  ${l}`));
  lines.push("  (incl. complete = complete-upload's own time + all HIT, i.e. from the moment the upload was complete;");
  lines.push("   CPU: time used by the origin / by all edges together while waiting, as % of one core)");
  lines.push("");
  const row = (name: string, st: LatencyStats, target: string, pass: boolean | null | undefined): string[] => [
    name,
    String(st.n),
    fmt(st.medianMs, 1),
    fmt(st.p99Ms, 1),
    fmt(st.maxMs, 1),
    target,
    pass === undefined ? "" : verdict(pass),
  ];
  const allHit = s.prewarm.rounds.map((r) => r.allHitMs).filter((x): x is number => x !== null);
  const table: string[][] = [["measurement", "n", "median ms", "p99 ms", "max ms", "target", "result"]];
  table.push([
    `prewarm: all ${s.edges} edges HIT`,
    String(s.prewarm.rounds.length),
    fmt(s.prewarm.medianAllHitMs, 0),
    "",
    fmt(allHit.length > 0 ? Math.max(...allHit) : null, 0),
    `median <= ${TARGET_PREWARM_MS}`,
    verdict(s.targets.prewarm?.pass ?? null),
  ]);
  table.push(row("file/delete", s.delete, `p99 < ${TARGET_DELETE_P99_MS}`, s.targets.delete?.pass ?? null));
  table.push(row("file/update visibility (both ways)", s.visibility.both, `p99 < ${TARGET_SWITCH_P99_MS}`, s.targets.visibility?.pass ?? null));
  table.push(row("  to Private", s.visibility.toPrivate, "", undefined));
  table.push(row("  to Public", s.visibility.toPublic, "", undefined));
  lines.push(...renderTable(table, 1));
  lines.push("(p99 is nearest-rank: with fewer than 100 samples it is the largest one; delete and update answer only");
  lines.push(" after every live edge has acknowledged; prewarm 'all HIT' is the median over rounds)");
  if (s.visibility.publicAgainAnswers > 0) {
    lines.push(`after switching back to Public, ${s.visibility.publicAgainHits} of ${s.visibility.publicAgainAnswers} checked answers were X-Cache: HIT`);
  }
  lines.push("");
  const checkRows: string[][] = [["check (right after the origin answered)", "passed", "result"]];
  for (const c of s.checks) checkRows.push([c.description, `${c.passed}/${c.total}`, c.total === 0 ? "SKIP" : verdict(c.passed === c.total)]);
  lines.push(...renderTable(checkRows, 1));
  for (const c of s.checks) for (const f of c.failures) lines.push(`  failed: ${c.description}: ${f}`);
  return lines.join("\n");
}

// ---------------------------------------------------------------------------
// Main

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

  let fleet: Fleet | null = null;
  try {
    const loadAvgStart = loadAverage();
    if (loadAvgStart !== null && loadAvgStart > os.availableParallelism() / 4) {
      log(`note: the 1-minute load average is ${fmt(loadAvgStart, 2)} on ${os.availableParallelism()} CPUs: other work may disturb the figures`);
    }
    const workDir = makeWorkDir(opts.tmpBase, "coffer-fleet-", opts.keepData);
    log(`work dir: ${workDir}${opts.keepData ? " (kept)" : ""}`);
    log(`starting the origin and ${opts.edges} edges...`);
    fleet = await startFleet(opts, workDir);
    const f = fleet;
    const everyone = [f.origin, ...f.edges.map((e) => e.child)];
    const rssStart = fleetRss(f);
    const originRss = f.origin.statusKb("VmRSS");
    const checks = new Checks();
    for (const d of [CHECK_PREWARM_BYTES, CHECK_DELETED_UNSIGNED, CHECK_DELETED_SIGNED, CHECK_PRIVATE_UNSIGNED, CHECK_PRIVATE_SIGNED, CHECK_PUBLIC_UNSIGNED]) {
      checks.declare(d);
    }

    const rounds: PrewarmRound[] = [];
    for (let r = 1; r <= opts.rounds; r++) {
      const res = await bounded(`prewarm round ${r}`, opts.phaseTimeoutMs + 120_000, everyone, (signal) => prewarmRound(f, opts, r, checks, signal));
      rounds.push(res);
      log(
        `prewarm ${r}/${opts.rounds}: complete-upload ${fmt(res.completeMs, 0)} ms; HIT at ${res.edgesHit}/${f.edges.length} edges, ` +
          `all after ${res.allHitMs === null ? "n/a (limit reached)" : `${fmt(res.allHitMs, 0)} ms`}` +
          `${Object.keys(res.otherStatuses).length > 0 ? `; other answers while waiting: ${JSON.stringify(res.otherStatuses)}` : ""}`,
      );
      await sleep(300);
    }
    const phaseLimit = opts.phaseTimeoutMs + opts.count * 60_000;
    log(`delete: uploading ${opts.count} files of ${SMALL_BYTES / KiB} KiB...`);
    const del = await bounded("delete phase", phaseLimit, everyone, (signal) => deletePhase(f, opts, checks, signal));
    log(`delete: median ${fmt(median(del.ms), 1)} ms, p99 ${fmt(percentile(del.ms, 99), 1)} ms`);
    log(`visibility: switching a ${SMALL_BYTES / KiB} KiB file to Private and back ${opts.count} times...`);
    const vis = await bounded("visibility phase", phaseLimit, everyone, (signal) => visibilityPhase(f, opts, checks, signal));
    log(
      `visibility: to Private median ${fmt(median(vis.toPrivateMs), 1)} ms, to Public median ${fmt(median(vis.toPublicMs), 1)} ms, ` +
        `p99 both ${fmt(percentile([...vis.toPrivateMs, ...vis.toPublicMs], 99), 1)} ms`,
    );

    const allHit = rounds.map((r) => r.allHitMs);
    const failedRounds = allHit.filter((x) => x === null).length;
    const medianAllHit = failedRounds > 0 ? null : round2(median(allHit as number[]));
    const delStats = stats(del.ms);
    const both = stats([...vis.toPrivateMs, ...vis.toPublicMs]);
    const summary: Summary = {
      label: opts.label,
      node: process.version,
      edges: f.edges.length,
      cacheBytes: opts.cacheBytes,
      loadAverageAtStart: round2(loadAvgStart),
      startupMs: Math.round(f.startupMs),
      rssMB: {
        originAfterStartup: round2(originRss === null ? null : (originRss * 1024) / MB),
        edgesTotalAfterStartup: rssStart.total,
        edgeMedianAfterStartup: rssStart.median,
        edgesTotalAtEnd: fleetRss(f).total,
      },
      prewarm: {
        bytes: opts.prewarmBytes,
        rounds: rounds.map((r) => ({
          ...r,
          completeMs: round2(r.completeMs)!,
          firstHitMs: round2(r.firstHitMs),
          medianHitMs: round2(r.medianHitMs),
          allHitMs: round2(r.allHitMs),
          deleteMs: round2(r.deleteMs)!,
          originCpuMs: round2(r.originCpuMs),
          edgesCpuMs: round2(r.edgesCpuMs),
          waitMs: round2(r.waitMs)!,
        })),
        medianAllHitMs: medianAllHit,
        failedRounds,
      },
      delete: { ...delStats, cachedAfterMs: round2(del.cachedAfterMs) },
      visibility: {
        both,
        toPrivate: stats(vis.toPrivateMs),
        toPublic: stats(vis.toPublicMs),
        publicAgainHits: vis.publicAgainHits,
        publicAgainAnswers: vis.publicAgainAnswers,
      },
      checks: checks.list,
      targets: {
        prewarm: {
          description: `median time until all edges are HITs <= ${TARGET_PREWARM_MS} ms (every round must finish)`,
          value: medianAllHit,
          pass: failedRounds > 0 ? false : medianAllHit === null ? null : medianAllHit <= TARGET_PREWARM_MS,
        },
        delete: {
          description: `file/delete p99 < ${TARGET_DELETE_P99_MS} ms`,
          value: delStats.p99Ms,
          pass: delStats.p99Ms === null ? null : delStats.p99Ms < TARGET_DELETE_P99_MS,
        },
        visibility: {
          description: `file/update visibility p99 < ${TARGET_SWITCH_P99_MS} ms`,
          value: both.p99Ms,
          pass: both.p99Ms === null ? null : both.p99Ms < TARGET_SWITCH_P99_MS,
        },
      },
    };
    const report = renderReport(opts, summary);
    if (opts.json) {
      log(report);
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    } else {
      process.stdout.write(`${report}\n`);
    }
    if (!checks.allPassed) {
      log(`\nsome edge answered against the contract right after the origin answered (see "checks" above): exit code 1`);
      return 1;
    }
    return 0;
  } catch (err) {
    log(`\nBENCHMARK FAILED: ${errorMessage(err)}`);
    const involved = err instanceof ChildFailure ? err.children : started.slice(0, 1);
    for (const child of involved) log(child.diagnostics());
    const dead = started.filter((c) => !c.alive && !involved.includes(c));
    for (const child of dead.slice(0, 3)) log(child.diagnostics());
    return 1;
  } finally {
    fleet?.api.close();
    edgeAgent.destroy();
    log(`stopping ${started.length} processes...`);
    await stopAll(started);
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
