// Where the origin's CPU goes on the S3 path, beside raw parts (issue 27 point 9): one origin
// (embedded storage, no edge, so no prewarm is counted), each line's upload sampled with
// `perf record` on the origin's pid (every thread, user and kernel), the samples put into parts
// by symbol and the parts scaled to the line's CPU per GiB from /proc.
//
//   npx tsx bench/s3/split.ts [--size MiB] [--rounds N] [--lines raw,put-signed,...] [--entry dist/cli/main.js] [--no-warmup] [--top N]
//
// Every line runs once unmeasured first (the JIT warms up as in a long-running origin); then
// rounds, the lines' order rotating each round. --top N
// prints each line's N busiest symbols, JavaScript functions named (the origin runs with
// --perf-basic-prof).
// Needs perf (Debian: linux-perf) with perf_event_paranoid ≤ 2 or root; without it, only the
// totals are printed. Lines: raw, {put,part}-{signed,unsigned,streaming}.

import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Child, DEFAULT_ENTRY, MiB, OriginApi, commandPath, fmt, installExitHandlers, log, makeWorkDir, positiveNumber, renderTable, runCommand, stopAll } from "../common.js";
import { BenchS3, PAYLOAD_MODES, type PayloadMode } from "./client.js";
import { rawUpload } from "./raw-upload.js";

const GiB = 1024 ** 3;

/** Parts of the CPU, by the symbol a sample fell in; the first rule that matches wins. */
const PARTS: Array<[string, RegExp]> = [
  ["MD5", /^\[\.\] (ossl_)?md5_block/],
  ["SHA-256", /^\[\.\] sha256_block/],
  ["HMAC, other crypto", /^\[\.\] (HMAC|EVP_|ossl_|OPENSSL_|CRYPTO_|node::crypto::)/],
  ["kernel: copies to/from user", /^\[k\] .*(copy_folio_from_iter|copy_page_from_iter|copy_user|copy_to_user|copy_from_user|rep_movs|_copy_to_iter|_copy_from_iter|copyin|copyout|memcpy_orig|clear_page)/i],
  ["kernel: network", /^\[k\] .*(tcp|skb|sock|inet|ip_|net_|__netif|napi|loopback|sk_|epoll|ep_)/i],
  ["kernel: fs, page cache, fsync", /^\[k\] .*(ext4|xfs|btrfs|overlay|jbd2|filemap|folio|page|iomap|blk|bio|writeback|fsync|vfs_|generic_perform_write|lru|mark_buffer|dentry|inode|radix|xa_)/i],
  ["kernel: other", /^\[k\] /],
  ["user memcpy/memmove", /memcpy|memmove/i],
  ["V8 GC", /Heap|Scaveng|MarkCompact|Sweep|Evacuat|Marking|GCTracer|ConcurrentMark|MinorMC|Compactor|Worklist/],
  ["JS, builtins, V8 other", /.*/],
];

const { values } = parseArgs({
  options: { size: { type: "string" }, rounds: { type: "string" }, lines: { type: "string" }, entry: { type: "string" }, keep: { type: "boolean" }, "no-warmup": { type: "boolean" }, callgraph: { type: "boolean" },
    top: { type: "string" } },
});
const SIZE = positiveNumber(values.size, 256, "--size", true) * MiB;
const ROUNDS = positiveNumber(values.rounds, 2, "--rounds", true);
const TOP = positiveNumber(values.top, 0, "--top", true);
const PART = 5 * MiB;
const PARALLEL = 4;
const ENTRY = values.entry ? path.resolve(values.entry) : DEFAULT_ENTRY;
const ACCESS_KEY = randomBytes(24).toString("hex");
const ALL_LINES = ["raw", ...PAYLOAD_MODES.flatMap((m) => [`put-${m}`, `part-${m}`])];
const LINES = values.lines ? values.lines.split(",") : ALL_LINES;
for (const l of LINES) if (!ALL_LINES.includes(l)) throw new Error(`unknown line ${l}; lines: ${ALL_LINES.join(",")}`);

/** Samples `pid` while `fn` runs; answers the report's text (null without perf). */
async function sampled(perf: string | null, pid: number, out: string, fn: () => Promise<void>): Promise<string | null> {
  if (!perf) {
    await fn();
    return null;
  }
  const rec = spawn(perf, ["record", "-q", "-F", "997", ...(values.callgraph ? ["-g"] : []), "-p", String(pid), "-o", out], { stdio: "ignore" });
  await new Promise((r) => setTimeout(r, 500));
  try {
    await fn();
  } finally {
    rec.kill("SIGINT");
    await new Promise((r) => rec.once("close", r));
  }
  const report = await runCommand(perf, ["report", "-i", out, "--no-children", "--sort", "sym", "--stdio", "-q", "--percent-limit", "0"], 120_000);
  return report.stdout;
}

/** The report's samples in parts, as fractions that add up to 1. */
function parts(report: string): Map<string, number> {
  const sums = new Map<string, number>(PARTS.map(([name]) => [name, 0]));
  let total = 0;
  for (const line of report.split("\n")) {
    const m = /^\s*([\d.]+)%\s+(.*)$/.exec(line);
    if (!m) continue;
    const share = Number(m[1]) / 100;
    const sym = m[2]!.trim();
    const name = PARTS.find(([, re]) => re.test(sym))![0];
    sums.set(name, sums.get(name)! + share);
    total += share;
  }
  for (const [k, v] of sums) sums.set(k, total > 0 ? v / total : 0);
  return sums;
}

/** utime + stime of `pid` (every thread), in seconds; `system` for stime alone. */
function procCpu(pid: number, system = false): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((system ? 0 : Number(fields[11])) + Number(fields[12])) / 100;
}

async function settled(pid: number): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const before = procCpu(pid);
    await new Promise((r) => setTimeout(r, 300));
    if (procCpu(pid) - before < 0.02) return;
  }
}

async function main(): Promise<void> {
  installExitHandlers();
  const perf = commandPath("perf");
  if (!perf) log("no perf: totals only");
  const work = makeWorkDir(os.tmpdir(), "coffer-bench-s3-split-", values.keep ?? false);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(COFFER_|AWS_)/.test(k)) env[k] = v;
  const { child: origin, match: originUrl } = await Child.start({
    name: "origin", command: process.execPath, args: ["--perf-basic-prof-only-functions", ENTRY, "origin"],
    env: {
      ...env, COFFER_HOST: "127.0.0.1", COFFER_SIGNING_SECRET: randomBytes(16).toString("hex"), COFFER_EDGE_TOKEN: randomBytes(16).toString("hex"), COFFER_LOG_LEVEL: "warn",
      COFFER_PORT: "0", COFFER_S3_PORT: "0", COFFER_DATA_DIR: path.join(work, "origin"), COFFER_ACCESS_KEY: ACCESS_KEY, COFFER_CDN_URL: "http://cdn.invalid",
    },
  }, /origin listening on (http:\/\/\S+)/, 30_000);
  const s3Url = await origin.waitForLine(/s3 listening on (http:\/\/\S+)/, 30_000);
  const api = new OriginApi(originUrl, ACCESS_KEY, PARALLEL);
  const agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL });
  try {
    const made = await api.post("/collections/keys/create", { name: "bench-s3", scopes: ["read", "write"] });
    const s3 = new BenchS3(s3Url, String(made.key_id), String(made.key), agent);
    const created = await s3.send("PUT", "/bench", {}, null);
    if (created.status !== 200) throw new Error(`CreateBucket: HTTP ${created.status} ${created.text.slice(0, 200)}`);
    const file = path.join(work, "data.bin");
    fs.writeFileSync(file, randomBytes(SIZE));
    const run = async (line: string, round: number): Promise<void> => {
      if (line === "raw") {
        await rawUpload({ api, accessKey: ACCESS_KEY, file, size: SIZE, part: PART, parallel: PARALLEL }, `raw-${round}.bin`);
        return;
      }
      const [op, mode] = line.split("-") as ["put" | "part", PayloadMode];
      if (op === "put") await s3.putObject("bench", `put-${mode}-${round}.bin`, { file, offset: 0, length: SIZE }, mode);
      else await s3.multipart("bench", `mpu-${mode}-${round}.bin`, file, SIZE, PART, PARALLEL, mode);
    };
    if (!values["no-warmup"]) {
      for (const line of LINES) await run(line, 0);
      log("warmed up");
    }
    const tops: string[] = [];
    const acc = new Map(LINES.map((line) => [line, { totals: [] as number[], kernel: 0, shares: new Map<string, number>(PARTS.map(([name]) => [name, 0])) }]));
    // Rounds outside, lines inside, the order rotating each round: a line's cost must not depend on its place.
    for (let round = 1; round <= ROUNDS; round++) {
      const shift = (round - 1) % LINES.length;
      for (const line of [...LINES.slice(shift), ...LINES.slice(0, shift)]) {
        const a = acc.get(line)!;
        await settled(origin.pid);
        const before = origin.cpuMs() ?? 0;
        const sys0 = procCpu(origin.pid, true);
        const report = await sampled(perf, origin.pid, path.join(work, `${line}-${round}.perf`), () => run(line, round));
        const perGiB = ((origin.cpuMs() ?? 0) - before) / 1000 / (SIZE / GiB);
        a.totals.push(perGiB);
        a.kernel += (procCpu(origin.pid, true) - sys0) / (SIZE / GiB) / ROUNDS;
        if (report && TOP > 0 && round === 1) tops.push(`${line}:`, ...report.split("\n").filter((l) => /%/.test(l)).slice(0, TOP).map((l) => l.slice(0, 140)));
        if (report) for (const [k, v] of parts(report)) a.shares.set(k, a.shares.get(k)! + (v * perGiB) / ROUNDS);
        log(`${line} round ${round}: ${fmt(perGiB, 2)} s/GiB`);
      }
    }
    const rows = [["line (s/GiB)", "total", "of it kernel (/proc)", ...PARTS.map(([name]) => name)]];
    for (const line of LINES) {
      const a = acc.get(line)!;
      const mean = a.totals.reduce((x, y) => x + y, 0) / a.totals.length;
      rows.push([line, fmt(mean, 2), fmt(a.kernel, 2), ...PARTS.map(([name]) => fmt(a.shares.get(name)!, 2))]);
    }
    process.stdout.write(`\n${SIZE / MiB} MiB, ${ROUNDS} round(s), origin CPU per GiB (mean), split by perf samples:\n\n${renderTable(rows).join("\n")}\n`);
    if (tops.length > 0) process.stdout.write(`\n${tops.join("\n")}\n`);
  } finally {
    agent.destroy();
    api.close();
    await stopAll([origin]);
    fs.rmSync(`/tmp/perf-${origin.pid}.map`, { force: true });
  }
}

main().then(() => process.exit(0), (err: unknown) => {
  log(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
