// Idle edge memory (issue 26, point 3): VmRSS, RssAnon, RssFile and PSS of `coffer edge`
// processes started by the real command against a real origin, 5 s after they listen, then
// after a burst of hits and 10 s idle, then after one /metrics scrape and 10 s idle; beside a
// bare Node ESM http server (bench/bare-node-server.mjs) through the same phases, which is
// this machine's floor. With --compare-entry, a second build's edges go through the same
// phases in the same run (before/after).
//
//   npm run build && npx tsx bench/edge-memory.ts [--edges 3] [--compare-entry /tmp/base/dist/cli/main.js] [--json]
//
// See bench/README.md ("Idle edge memory"). Every process is a child of this one, removed on exit.

import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  Child,
  DEFAULT_ENTRY,
  REPO_ROOT,
  UsageError,
  errorMessage,
  fmt,
  installExitHandlers,
  loadAverage,
  log,
  makeWorkDir,
  median,
  parseEnvPairs,
  positiveNumber,
  releaseWatchdog,
  renderTable,
  sleep,
  stopAll,
  uploadFile,
  OriginApi,
} from "./common.js";
import { cleanEnv } from "./fleet/procs.js";

const USAGE = `usage: npx tsx bench/edge-memory.ts [options]   (run \`npm run build\` first)
  --entry PATH          coffer's entry point (default dist/cli/main.js)
  --compare-entry PATH  another build whose edges go through the same phases in the same run (repeatable);
                        shown by the name of the directory that holds its dist/
  --edges N             edge processes per build, measured together; medians are shown (default 3)
  --idle S              seconds after "listening" before the first measurement (default 5)
  --long S              seconds after "listening" before the second, still idle (default 60; 0 skips it):
                        an idle edge's timers can make V8 optimize, and map its compiler in, after a while
  --settle S            seconds idle after the burst and after the scrape (default 10)
  --burst N             GET requests per process in the burst, 4 at a time (default 2000)
  --env-edge K=V        extra environment for every edge (repeatable), e.g. MALLOC_ARENA_MAX=2
  --json                the figures as JSON on stdout
  --keep                keep the work directory`;

interface Options {
  entries: string[];
  edges: number;
  idleMs: number;
  longMs: number;
  settleMs: number;
  burst: number;
  envEdge: Record<string, string>;
  json: boolean;
  keep: boolean;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      entry: { type: "string" }, "compare-entry": { type: "string", multiple: true }, edges: { type: "string" }, idle: { type: "string" }, long: { type: "string" },
      settle: { type: "string" }, burst: { type: "string" }, "env-edge": { type: "string", multiple: true }, json: { type: "boolean" }, keep: { type: "boolean" }, help: { type: "boolean" },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const entries = [path.resolve(values.entry ?? DEFAULT_ENTRY)];
  for (const e of values["compare-entry"] ?? []) entries.push(path.resolve(e));
  for (const e of entries) if (!fs.existsSync(e)) throw new UsageError(`${e} does not exist; run \`npm run build\` first`);
  return {
    entries,
    edges: positiveNumber(values.edges, 3, "--edges", true),
    idleMs: positiveNumber(values.idle, 5, "--idle") * 1000,
    settleMs: positiveNumber(values.settle, 10, "--settle") * 1000,
    longMs: values.long === "0" ? 0 : positiveNumber(values.long, 60, "--long") * 1000,
    burst: positiveNumber(values.burst, 2000, "--burst", true),
    envEdge: parseEnvPairs(values["env-edge"], "--env-edge"),
    json: values.json ?? false,
    keep: values.keep ?? false,
  };
}

/** One process's memory in kB: /proc/<pid>/status and /proc/<pid>/smaps_rollup. */
interface Memory {
  vmRss: number;
  rssAnon: number;
  rssFile: number;
  pss: number;
}

function kb(text: string, name: string): number {
  const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, "m").exec(text);
  if (!m?.[1]) throw new Error(`no ${name} in /proc`);
  return Number(m[1]);
}

function memoryOf(pid: number): Memory {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  return { vmRss: kb(status, "VmRSS"), rssAnon: kb(status, "RssAnon"), rssFile: kb(status, "RssFile"), pss: kb(rollup, "Pss") };
}

function medianMemory(pids: number[]): Memory {
  const all = pids.map(memoryOf);
  const med = (f: (m: Memory) => number): number => median(all.map(f)) ?? 0;
  return { vmRss: med((m) => m.vmRss), rssAnon: med((m) => m.rssAnon), rssFile: med((m) => m.rssFile), pss: med((m) => m.pss) };
}

type Phase = "idle" | "idle, later" | "after burst" | "after scrape";

interface Line {
  name: string;
  phases: Partial<Record<Phase, Memory>>;
}

const phasesOf = (opts: Options): Phase[] => ["idle", ...(opts.longMs > opts.idleMs ? ["idle, later" as const] : []), "after burst", "after scrape"];

interface Origin {
  child: Child;
  url: string;
  secret: string;
  edgeToken: string;
  /** Path of a 4 KiB Public file's delivery address. */
  filePath: string;
}

async function startOrigin(entry: string, workDir: string): Promise<Origin> {
  const hex = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(Math.random() * 256))).toString("hex");
  const accessKey = hex(24);
  const secret = hex(32);
  const edgeToken = hex(32);
  const dataDir = path.join(workDir, "origin");
  fs.mkdirSync(dataDir, { mode: 0o700 });
  const { child, match: url } = await Child.start(
    {
      name: "origin",
      command: process.execPath,
      args: [entry, "origin"],
      env: {
        ...cleanEnv(), COFFER_PORT: "0", COFFER_S3_PORT: "0", COFFER_HOST: "127.0.0.1", COFFER_DATA_DIR: dataDir,
        COFFER_ACCESS_KEY: accessKey, COFFER_SIGNING_SECRET: secret, COFFER_EDGE_TOKEN: edgeToken, COFFER_CDN_URL: "http://cdn.invalid",
      },
    },
    /origin listening on (http:\/\/\S+)/,
    60_000,
  );
  const api = new OriginApi(url, accessKey);
  try {
    const up = await uploadFile(api, Buffer.alloc(4096, 7), { name: "memory-4k.bin", visibility: "Public" });
    return { child, url, secret, edgeToken, filePath: up.deliveryPath };
  } finally {
    api.close();
  }
}

/** A server under test: how to start one process of it and what to ask it for. */
interface Kind {
  name: string;
  start(i: number): Promise<{ child: Child; url: string }>;
  path: string;
  scrapePath: string;
}

function edgeKind(entry: string, label: string, origin: Origin, workDir: string, envEdge: Record<string, string>): Kind {
  return {
    name: label,
    path: origin.filePath,
    scrapePath: "/metrics",
    async start(i) {
      const dataDir = path.join(workDir, `${label.replace(/\W+/g, "-")}-edge-${i}`);
      fs.mkdirSync(dataDir, { mode: 0o700 });
      const { child, match } = await Child.start(
        {
          name: `${label} edge ${i}`,
          command: process.execPath,
          args: [entry, "edge", "--origin", origin.url, "--name", `memory-${i}`],
          env: {
            ...cleanEnv(), COFFER_EDGE_PORT: "0", COFFER_HOST: "127.0.0.1", COFFER_DATA_DIR: dataDir,
            COFFER_SIGNING_SECRET: origin.secret, COFFER_EDGE_TOKEN: origin.edgeToken, ...envEdge,
          },
        },
        /edge listening on (http:\/\/\S+)/,
        60_000,
      );
      return { child, url: match };
    },
  };
}

function bareKind(workDir: string): Kind {
  const file = path.join(workDir, "bare-4k.bin");
  fs.writeFileSync(file, Buffer.alloc(4096, 7));
  return {
    name: "bare Node http server",
    path: "/",
    scrapePath: "/",
    async start(i) {
      const { child, match } = await Child.start(
        { name: `bare node ${i}`, command: process.execPath, args: [path.join(REPO_ROOT, "bench", "bare-node-server.mjs"), file, "[]"], env: cleanEnv() },
        /bare node listening on (http:\/\/\S+)/,
        30_000,
      );
      return { child, url: match };
    },
  };
}

/** `count` GETs of `target`, 4 at a time over keep-alive connections; every answer must be 200. */
async function burst(url: string, target: string, count: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  let next = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      http.get(url + target, { agent }, (res) => {
        res.resume();
        res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET ${target} -> ${res.statusCode}`))));
      }).on("error", reject);
    });
  const worker = async () => {
    while (next++ < count) await one();
  };
  try {
    await Promise.all([worker(), worker(), worker(), worker()]);
  } finally {
    agent.destroy();
  }
}

/** Starts `n` processes of a kind together and takes them through the phases. */
async function measure(kind: Kind, n: number, opts: Options): Promise<Line> {
  const procs = await Promise.all(Array.from({ length: n }, (_, i) => kind.start(i + 1)));
  const pids = procs.map((p) => p.child.pid);
  const line: Line = { name: kind.name, phases: {} };
  try {
    await sleep(opts.idleMs);
    line.phases.idle = medianMemory(pids);
    if (opts.longMs > opts.idleMs) {
      await sleep(opts.longMs - opts.idleMs);
      line.phases["idle, later"] = medianMemory(pids);
    }
    await Promise.all(procs.map((p) => burst(p.url, kind.path, opts.burst)));
    await sleep(opts.settleMs);
    line.phases["after burst"] = medianMemory(pids);
    await Promise.all(procs.map((p) => burst(p.url, kind.scrapePath, 1)));
    await sleep(opts.settleMs);
    line.phases["after scrape"] = medianMemory(pids);
    log(`${kind.name}: ${phasesOf(opts).map((ph) => `${ph} ${fmt(line.phases[ph]!.vmRss / 1000)} MB`).join(", ")}`);
    return line;
  } finally {
    await stopAll(procs.map((p) => p.child));
  }
}

function render(lines: Line[], opts: Options, load: number | null): string {
  const mb = (x: number) => fmt(x / 1000);
  const rows = [["", "phase", "VmRSS", "RssAnon", "RssFile", "PSS"]];
  for (const l of lines) {
    for (const ph of phasesOf(opts)) {
      const m = l.phases[ph]!;
      rows.push([ph === "idle" ? l.name : "", ph, mb(m.vmRss), mb(m.rssAnon), mb(m.rssFile), mb(m.pss)]);
    }
  }
  return [
    `Idle edge memory, MB (1000 kB) per process, median of ${opts.edges} processes per line; load average ${fmt(load, 2)} at start`,
    ...(Object.keys(opts.envEdge).length > 0 ? [`edges' extra environment: ${Object.entries(opts.envEdge).map(([k, v]) => `${k}=${v}`).join(" ")}`] : []),
    `phases: ${opts.idleMs / 1000} s after listening;${opts.longMs > opts.idleMs ? ` ${opts.longMs / 1000} s after listening;` : ""} after ${opts.burst} GETs of a 4 KiB Public file and ${opts.settleMs / 1000} s idle; after one /metrics scrape and ${opts.settleMs / 1000} s idle`,
    ...renderTable(rows, 2),
  ].join("\n");
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  installExitHandlers();
  const load = loadAverage();
  const workDir = makeWorkDir(os.tmpdir(), "coffer-edge-memory-", opts.keep);
  const origin = await startOrigin(opts.entries[0]!, workDir);
  log(`origin ${origin.url}; 4 KiB Public file at ${origin.filePath}`);
  const lines: Line[] = [];
  try {
    for (const [i, entry] of opts.entries.entries()) {
      // A compared build is named by the directory holding its dist/: /tmp/base/dist/cli/main.js is "base".
      const label = i === 0 ? "coffer edge" : `coffer edge (${path.basename(path.resolve(entry, "../../.."))})`;
      lines.push(await measure(edgeKind(entry, label, origin, workDir, opts.envEdge), opts.edges, opts));
    }
    lines.push(await measure(bareKind(workDir), opts.edges, opts));
  } finally {
    await origin.child.stop();
  }
  if (opts.json) process.stdout.write(`${JSON.stringify({ options: opts, loadAverage: load, lines }, null, 2)}\n`);
  else process.stdout.write(`${render(lines, opts, load)}\n`);
  releaseWatchdog();
}

main().catch((err: unknown) => {
  log(err instanceof UsageError ? `${err.message}\n${USAGE}` : `BENCHMARK FAILED: ${errorMessage(err)}`);
  process.exit(1);
});
