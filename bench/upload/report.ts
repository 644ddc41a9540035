// Results of the upload benchmark: medians, ratios to @tus/server and to dd, the targets of
// issue 11 and the CPU goals of issue 25 (on the embedded configuration; s3rver is a
// functional stand-in, so the postgres-s3 lines get figures and ratios but no target), and
// the tables.

import { MB, MiB, fmt, median, renderTable, round2, verdict } from "../common.js";
import type { Line, Timing } from "./lines.js";
import type { Kind, Options, Storage } from "./options.js";

/** Goals per line kind, as a ratio to @tus/server. */
export const RATIO_TARGETS: Partial<Record<Kind, number>> = { "json-first": 0.9, "json-last": 0.9, raw: 1.2, "coffer-tus": 1.0 };
/** Goals per line kind for the server's CPU per GiB, as a ratio to @tus/server's (at most). */
export const CPU_TARGETS: Partial<Record<Kind, number>> = { "json-first": 2, "json-last": 2, raw: 1.5, "coffer-tus": 1.5 };
export const IDLE_RSS_TARGET_MB = 80;
const GiB = 1024 * MiB;
export const PEAK_RSS_TARGET_MB = 150;

export interface LineResult {
  kind: Kind;
  storage: Storage | null;
  build: string | null;
  label: string;
  skipped: string | null;
  roundsMiBps: number[];
  /** Per round, ms: this process, the server, what it stores into (postgres-s3), every other process. */
  clientCpuMs: number[];
  serverCpuMs: number[];
  helpersCpuMs: number[];
  otherCpuMs: number[];
  /** Medians of the rounds, CPU seconds per GiB uploaded. */
  clientCpuPerGiB: number | null;
  serverCpuPerGiB: number | null;
  helpersCpuPerGiB: number | null;
  /** The server's CPU per GiB of each round, and the least of them. */
  roundsServerCpuPerGiB: number[];
  bestServerCpuPerGiB: number | null;
  /** Median of the rounds' CPU of every other process divided by the round's time: cores busy elsewhere. */
  otherCores: number | null;
  cpuRatioToTus: number | null;
  /** The least round over @tus/server's least: contention only adds CPU, so this is the nearest to a quiet machine's ratio. */
  bestCpuRatioToTus: number | null;
  cpuTarget: { max: number; pass: boolean | null } | null;
  /** The highest VmRSS of its server sampled while this line ran (MB). */
  serverRssMB: number | null;
  medianMiBps: number | null;
  ratioToTus: number | null;
  ratioToDd: number | null;
  target: { min: number; pass: boolean | null } | null;
}

export interface MemoryResult {
  storage: Storage;
  build: string | null;
  idleMB: number | null;
  peakMB: number | null;
  idleTarget: { max: number; pass: boolean | null } | null;
  peakTarget: { max: number; pass: boolean | null } | null;
}

export interface Summary {
  label: string | null;
  sizeMiB: number;
  rounds: number;
  concurrency: number;
  node: string;
  envCoffer: string[];
  lines: LineResult[];
  memory: MemoryResult[];
  tusPeakMB: number | null;
}

export const kbToMB = (kb: number | null): number | null => (kb === null ? null : (kb * 1024) / MB);

const present = (xs: Array<number | null>): number[] => xs.flatMap((x) => (x === null ? [] : [Math.round(x)]));
const perGiB = (ms: number | null, bytes: number): number | null => (ms === null ? null : Math.round(((ms / 1000) * GiB / bytes) * 1000) / 1000);

export function lineResult(line: Line, timings: Timing[], bytes: number, serverRssMB: number | null): LineResult {
  const mibps = timings.map((t) => round2(bytes / MiB / (t.ms / 1000))!);
  const serverCpuMs = present(timings.map((t) => t.serverMs));
  const helpersCpuMs = present(timings.map((t) => t.helpersMs));
  const clientCpuMs = present(timings.map((t) => t.clientMs));
  const cpuLine = line.kind !== "dd";
  return {
    kind: line.kind, storage: line.storage, build: line.build, label: line.label, skipped: line.skipped,
    roundsMiBps: mibps,
    clientCpuMs, serverCpuMs, helpersCpuMs, otherCpuMs: present(timings.map((t) => t.otherMs)),
    clientCpuPerGiB: cpuLine ? perGiB(median(clientCpuMs), bytes) : null,
    serverCpuPerGiB: perGiB(median(serverCpuMs), bytes),
    helpersCpuPerGiB: line.storage === "postgres-s3" ? perGiB(median(helpersCpuMs), bytes) : null,
    roundsServerCpuPerGiB: serverCpuMs.map((ms) => perGiB(ms, bytes)!),
    bestServerCpuPerGiB: serverCpuMs.length === 0 ? null : perGiB(Math.min(...serverCpuMs), bytes),
    otherCores: round2(median(timings.flatMap((t) => (t.otherMs === null || t.ms <= 0 ? [] : [t.otherMs / t.ms])))),
    cpuRatioToTus: null, bestCpuRatioToTus: null, cpuTarget: null,
    serverRssMB: round2(serverRssMB),
    medianMiBps: round2(median(mibps)),
    ratioToTus: null, ratioToDd: null, target: null,
  };
}

/** Fills in ratios and targets. */
export function summarize(opts: Options, lines: LineResult[], memory: MemoryResult[], tusPeakMB: number | null): Summary {
  const tus = lines.find((l) => l.kind === "tus")?.medianMiBps ?? null;
  const dd = lines.find((l) => l.kind === "dd")?.medianMiBps ?? null;
  const tusCpu = lines.find((l) => l.kind === "tus")?.serverCpuPerGiB ?? null;
  const tusBest = lines.find((l) => l.kind === "tus")?.bestServerCpuPerGiB ?? null;
  for (const l of lines) {
    if (l.medianMiBps === null) continue;
    if (tus !== null && tus > 0 && l.kind !== "dd") l.ratioToTus = round2(l.medianMiBps / tus);
    if (dd !== null && dd > 0 && l.kind !== "dd") l.ratioToDd = round2(l.medianMiBps / dd);
    const min = RATIO_TARGETS[l.kind];
    if (min !== undefined && l.storage === "embedded") l.target = { min, pass: l.ratioToTus === null ? null : l.ratioToTus >= min };
    if (tusCpu !== null && tusCpu > 0 && l.serverCpuPerGiB !== null) l.cpuRatioToTus = round2(l.serverCpuPerGiB / tusCpu);
    if (tusBest !== null && tusBest > 0 && l.bestServerCpuPerGiB !== null) l.bestCpuRatioToTus = round2(l.bestServerCpuPerGiB / tusBest);
    const max = CPU_TARGETS[l.kind];
    // Judged on the least rounds: the reference's CPU grows more than Coffer's on a busy machine (bench/README.md).
    if (max !== undefined && l.storage === "embedded") l.cpuTarget = { max, pass: l.bestCpuRatioToTus === null ? null : l.bestCpuRatioToTus <= max };
  }
  for (const m of memory) {
    if (m.storage !== "embedded") continue;
    m.idleTarget = { max: IDLE_RSS_TARGET_MB, pass: m.idleMB === null ? null : m.idleMB < IDLE_RSS_TARGET_MB };
    m.peakTarget = { max: PEAK_RSS_TARGET_MB, pass: m.peakMB === null ? null : m.peakMB < PEAK_RSS_TARGET_MB };
  }
  return {
    label: opts.label, sizeMiB: opts.sizeMiB, rounds: opts.rounds, concurrency: opts.concurrency, node: process.version,
    envCoffer: Object.keys(opts.envCoffer), lines, memory, tusPeakMB,
  };
}

/** The storage column: the configuration, and the build when several run side by side. */
const place = (l: LineResult): string => (l.storage === null ? "-" : l.build === null ? l.storage : `${l.storage}, ${l.build}`);

export function renderSummary(s: Summary): string {
  const out: string[] = [""];
  out.push(`upload benchmark${s.label ? ` [${s.label}]` : ""}: ${s.sizeMiB} MiB, ${s.rounds} round(s) per line, node ${s.node}`);
  const rows: string[][] = [["line", "storage", "MiB/s", "x tus", "x dd", "server RSS", "target", "rounds (MiB/s)"]];
  for (const l of s.lines) {
    if (l.skipped) {
      rows.push([l.label, place(l), "skipped", "", "", "", l.skipped, ""]);
      continue;
    }
    const target = l.target ? `>= ${l.target.min.toFixed(2)} x tus ${verdict(l.target.pass)}` : l.kind === "tus" ? "(reference)" : l.kind === "dd" ? "(the disk)" : "none (s3rver is a stand-in)";
    rows.push([
      l.label, place(l), fmt(l.medianMiBps), l.kind === "tus" ? "1.00" : fmt(l.ratioToTus, 2), l.kind === "dd" ? "1.00" : fmt(l.ratioToDd, 2),
      l.serverRssMB === null ? "-" : `${fmt(l.serverRssMB)} MB`, target, l.roundsMiBps.map((x) => x.toFixed(0)).join(" "),
    ]);
  }
  out.push(...renderTable(rows, 2));
  out.push("(MiB/s: median of the rounds, 1 MiB = 2^20 bytes; x tus, x dd: ratio of the medians; server RSS: its highest VmRSS sampled while the line ran)");
  out.push("");
  out.push(...renderCpu(s.lines));
  out.push(...renderBuilds(s.lines));
  out.push("");
  for (const m of s.memory) {
    const idle = `${fmt(m.idleMB)} MB${m.idleTarget ? ` (< ${m.idleTarget.max} MB ${verdict(m.idleTarget.pass)})` : ""}`;
    const peak = `${fmt(m.peakMB)} MB${m.peakTarget ? ` (< ${m.peakTarget.max} MB ${verdict(m.peakTarget.pass)})` : ""}`;
    out.push(`origin RSS, ${m.storage}${m.build ? ` (${m.build})` : ""}: idle ${idle}, peak during the run ${peak}`);
  }
  if (s.tusPeakMB !== null) out.push(`@tus/server RSS: peak ${fmt(s.tusPeakMB)} MB`);
  out.push("(RSS in MB, 1 MB = 10^6 bytes; idle: VmRSS 1 s after start; peak: the larger of VmHWM at the end and VmRSS sampled every 50 ms)");
  return out.join("\n");
}

/** The CPU table: seconds per GiB of the client and the server, the server's ratio to @tus/server's and the goal. */
function renderCpu(lines: LineResult[]): string[] {
  const rows: string[][] = [["line", "storage", "client", "server", "x tus", "best", "x tus", "goal (best)", "+ PG, s3rver", "others", "rounds (server)"]];
  for (const l of lines) {
    if (l.skipped || l.kind === "dd") continue;
    const goal = l.cpuTarget ? `<= ${l.cpuTarget.max.toFixed(2)} x tus ${verdict(l.cpuTarget.pass)}` : l.kind === "tus" ? "(reference)" : "none";
    rows.push([
      l.label, place(l), fmt(l.clientCpuPerGiB, 2), fmt(l.serverCpuPerGiB, 2), l.kind === "tus" ? "1.00" : fmt(l.cpuRatioToTus, 2),
      fmt(l.bestServerCpuPerGiB, 2), l.kind === "tus" ? "1.00" : fmt(l.bestCpuRatioToTus, 2), goal,
      l.helpersCpuPerGiB === null ? "-" : fmt(l.helpersCpuPerGiB, 2), fmt(l.otherCores, 2), l.roundsServerCpuPerGiB.map((x) => x.toFixed(2)).join(" "),
    ]);
  }
  return [
    "CPU seconds per GiB uploaded (user + system, all threads, from /proc; median of the rounds):",
    ...renderTable(rows, 2),
    "(client: this process; server: the origin or @tus/server, each its own process; x tus: ratio to @tus/server's median;",
    " best: the least round, and its ratio to @tus/server's least, on which the goal is judged: other work on the machine",
    " only adds CPU, and adds more to @tus/server's, so the least rounds are the nearest to a quiet machine's figures;",
    " + PG, s3rver: what the postgres-s3 origin stores into, beside its own figure; others: cores kept busy by every other",
    " process of the machine during the line's rounds (median): figures of rounds on a busy machine are higher, see bench/README.md)",
  ];
}

/**
 * With several builds: each other build's server CPU per GiB over the first build's, round by
 * round. A line's builds are next to each other in the order of the lines, so in most rounds one
 * runs right after the other and the machine changed less between the two than between rounds.
 */
function renderBuilds(lines: LineResult[]): string[] {
  const out: string[] = [];
  for (const first of lines.filter((l) => l.build !== null)) {
    const others = lines.filter((l) => l.build !== null && l.build !== first.build && l.kind === first.kind && l.storage === first.storage);
    if (lines.find((l) => l.kind === first.kind && l.storage === first.storage && l.build !== null) !== first) continue;
    for (const other of others) {
      const n = Math.min(first.serverCpuMs.length, other.serverCpuMs.length);
      const ratios = Array.from({ length: n }, (_, i) => other.serverCpuMs[i]! / first.serverCpuMs[i]!).filter(Number.isFinite);
      out.push(`  ${first.label} (${first.storage}): ${other.build} / ${first.build} ${fmt(median(ratios), 2)} (rounds ${ratios.map((r) => r.toFixed(2)).join(" ")})`);
    }
  }
  return out.length === 0 ? [] : ["", "Server CPU per GiB of each other build over the first, rounds paired (median, then each round):", ...out];
}
