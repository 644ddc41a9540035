// Results of the upload benchmark: medians, ratios to @tus/server and to dd, the targets of
// issue 11 (on the embedded configuration; s3rver is a functional stand-in, so the
// postgres-s3 lines get figures and ratios but no target), and the table.

import { MB, MiB, fmt, median, renderTable, round2, verdict } from "../common.js";
import type { Line, Timing } from "./lines.js";
import type { Kind, Options, Storage } from "./options.js";

/** Goals per line kind, as a ratio to @tus/server. */
export const RATIO_TARGETS: Partial<Record<Kind, number>> = { "json-first": 0.9, "json-last": 0.9, raw: 1.2, "coffer-tus": 1.0 };
export const IDLE_RSS_TARGET_MB = 80;
export const PEAK_RSS_TARGET_MB = 150;

export interface LineResult {
  kind: Kind;
  storage: Storage | null;
  label: string;
  skipped: string | null;
  roundsMiBps: number[];
  clientCpuMs: number[];
  serverCpuMs: number[];
  /** The highest VmRSS of its server sampled while this line ran (MB). */
  serverRssMB: number | null;
  medianMiBps: number | null;
  ratioToTus: number | null;
  ratioToDd: number | null;
  target: { min: number; pass: boolean | null } | null;
}

export interface MemoryResult {
  storage: Storage;
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

export function lineResult(line: Line, timings: Timing[], bytes: number, serverRssMB: number | null): LineResult {
  const mibps = timings.map((t) => round2(bytes / MiB / (t.ms / 1000))!);
  return {
    kind: line.kind, storage: line.storage, label: line.label, skipped: line.skipped,
    roundsMiBps: mibps,
    clientCpuMs: timings.map((t) => Math.round(t.clientCpuMs)),
    serverCpuMs: timings.flatMap((t) => (t.serverCpuMs === null ? [] : [Math.round(t.serverCpuMs)])),
    serverRssMB: round2(serverRssMB),
    medianMiBps: round2(median(mibps)),
    ratioToTus: null, ratioToDd: null, target: null,
  };
}

/** Fills in ratios and targets. */
export function summarize(opts: Options, lines: LineResult[], memory: MemoryResult[], tusPeakMB: number | null): Summary {
  const tus = lines.find((l) => l.kind === "tus")?.medianMiBps ?? null;
  const dd = lines.find((l) => l.kind === "dd")?.medianMiBps ?? null;
  for (const l of lines) {
    if (l.medianMiBps === null) continue;
    if (tus !== null && tus > 0 && l.kind !== "dd") l.ratioToTus = round2(l.medianMiBps / tus);
    if (dd !== null && dd > 0 && l.kind !== "dd") l.ratioToDd = round2(l.medianMiBps / dd);
    const min = RATIO_TARGETS[l.kind];
    if (min !== undefined && l.storage === "embedded") l.target = { min, pass: l.ratioToTus === null ? null : l.ratioToTus >= min };
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

const seconds = (xs: number[]): string => fmt(median(xs) === null ? null : median(xs)! / 1000, 2);

export function renderSummary(s: Summary): string {
  const out: string[] = [""];
  out.push(`upload benchmark${s.label ? ` [${s.label}]` : ""}: ${s.sizeMiB} MiB, ${s.rounds} round(s) per line, node ${s.node}`);
  const rows: string[][] = [["line", "storage", "MiB/s", "x tus", "x dd", "cpu client/server", "server RSS", "target", "rounds (MiB/s)"]];
  for (const l of s.lines) {
    if (l.skipped) {
      rows.push([l.label, l.storage ?? "-", "skipped", "", "", "", "", l.skipped, ""]);
      continue;
    }
    const target = l.target ? `>= ${l.target.min.toFixed(2)} x tus ${verdict(l.target.pass)}` : l.kind === "tus" ? "(reference)" : l.kind === "dd" ? "(the disk)" : "none (s3rver is a stand-in)";
    rows.push([
      l.label, l.storage ?? "-", fmt(l.medianMiBps), l.kind === "tus" ? "1.00" : fmt(l.ratioToTus, 2), l.kind === "dd" ? "1.00" : fmt(l.ratioToDd, 2),
      l.kind === "dd" ? "-" : `${seconds(l.clientCpuMs)} / ${seconds(l.serverCpuMs)} s`, l.serverRssMB === null ? "-" : `${fmt(l.serverRssMB)} MB`, target,
      l.roundsMiBps.map((x) => x.toFixed(0)).join(" "),
    ]);
  }
  out.push(...renderTable(rows, 2));
  out.push("(MiB/s: median of the rounds, 1 MiB = 2^20 bytes; x tus, x dd: ratio of the medians; cpu: median seconds per upload of this process / the server;");
  out.push(" server RSS: its highest VmRSS sampled while the line ran)");
  out.push("");
  for (const m of s.memory) {
    const idle = `${fmt(m.idleMB)} MB${m.idleTarget ? ` (< ${m.idleTarget.max} MB ${verdict(m.idleTarget.pass)})` : ""}`;
    const peak = `${fmt(m.peakMB)} MB${m.peakTarget ? ` (< ${m.peakTarget.max} MB ${verdict(m.peakTarget.pass)})` : ""}`;
    out.push(`origin RSS, ${m.storage}: idle ${idle}, peak during the run ${peak}`);
  }
  if (s.tusPeakMB !== null) out.push(`@tus/server RSS: peak ${fmt(s.tusPeakMB)} MB`);
  out.push("(RSS in MB, 1 MB = 10^6 bytes; idle: VmRSS 1 s after start; peak: the larger of VmHWM at the end and VmRSS sampled every 50 ms)");
  return out.join("\n");
}
