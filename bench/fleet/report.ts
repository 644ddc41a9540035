// The fleet benchmark's summary and its table: each figure beside its goal (issue 26, point 3).

import os from "node:os";
import { MB, MiB, fmt, median, percentile, renderTable, verdict } from "../common.js";
import type { ChangeTimes, SwitchTimes } from "./changes.js";
import type { Check } from "./checks.js";
import type { CopyFleet, CopyRate, Memory } from "./machine.js";
import type { Options } from "./options.js";
import type { PrewarmRound } from "./prewarm.js";
import type { Floor } from "./probe.js";

export const EDGE_MEMORY_GOAL_MB = 45;
export const COMPLETE_RATIO_GOAL = 1.2;

export interface Summary {
  label: string | null;
  node: string;
  edges: number;
  tiers: number;
  loadAverageAtStart: number | null;
  startupMs: number;
  prewarmBytes: number;
  memory: { edge: Memory | null; bareNode: Memory | null; originRssKb: number | null; edgesTotalRssKb: number };
  /** CPU used while idle, as a share of one core. */
  idleCpuShare: { origin: number; edges: number };
  floor: Floor;
  copyRate: CopyRate;
  /** The prewarm's copies by as many bare receivers, before the fleet starts: the prewarm's bound. */
  copyFleet: CopyFleet;
  /** The same measurement with the fleet started and idle. */
  copyRateWithFleet: CopyRate;
  single: PrewarmRound[];
  fleet: PrewarmRound[];
  delete: ChangeTimes;
  visibility: SwitchTimes;
  checks: Check[];
}

export interface Goal {
  line: string;
  value: string;
  goal: string;
  pass: boolean | null;
}

const mb = (kb: number | null | undefined): number | null => (kb == null ? null : (kb * 1024) / MB);
const med = (xs: number[]): number | null => median(xs);
const allHit = (rounds: PrewarmRound[]): number | null => (rounds.some((r) => r.allHitMs === null) ? null : med(rounds.map((r) => r.allHitMs!)));

/** Every goal line, computed from the summary. */
export function goals(s: Summary): Goal[] {
  const size = s.prewarmBytes;
  const floor = s.floor.medianMs;
  const out: Goal[] = [];
  const bytes = med(s.fleet.map((r) => r.originBytes));
  const perSize = bytes === null ? null : bytes / size;
  out.push(
    s.tiers > 0
      ? { line: `origin bytes sent per upload (${s.tiers} parents)`, value: `${fmt(perSize, 2)} x size`, goal: `<= ${s.tiers + 1} x size`, pass: perSize === null ? null : perSize <= s.tiers + 1 }
      : { line: "origin bytes sent per upload (no tiers)", value: `${fmt(perSize, 2)} x size`, goal: `contrast: ${s.edges} x size`, pass: null },
  );
  const c1 = med(s.single.map((r) => r.completeMs));
  const cN = med(s.fleet.map((r) => r.completeMs));
  const ratio = c1 === null || cN === null ? null : cN / c1;
  out.push({ line: `complete-upload at ${s.edges} edges / at 1 edge`, value: `${fmt(cN, 0)} / ${fmt(c1, 0)} ms = ${fmt(ratio, 2)}`, goal: `<= ${COMPLETE_RATIO_GOAL}`, pass: ratio === null ? null : ratio <= COMPLETE_RATIO_GOAL });
  // What the goal above asks against what any fan-out to every edge costs here.
  const extra = c1 === null || cN === null ? null : cN - c1;
  out.push({ line: "  complete-upload's extra time at N edges, beside the floor", value: `${fmt(extra, 0)} ms`, goal: `floor ${fmt(floor, 0)} ms`, pass: null });
  // The copies themselves, made by as many bare processes fanned out the same way (bench/README.md).
  const prewarmGoal = floor === null || s.copyFleet.medianMs === null ? null : 3 * floor + s.copyFleet.medianMs;
  const hit = allHit(s.fleet);
  out.push({ line: `prewarm: ${fmt(size / MiB, 0)} MiB a HIT at all ${s.edges} edges (median)`, value: `${fmt(hit, 0)} ms`, goal: `<= 3 x floor + the copy fleet's ${fmt(s.copyFleet.medianMs, 0)} ms = ${fmt(prewarmGoal, 0)} ms`, pass: hit === null || prewarmGoal === null ? false : hit <= prewarmGoal });
  // The same in CPU, which the machine's other work moves less: an edge's fill against a bare receiver's, round for round.
  const edgeFill = med(s.fleet.map((r) => r.edgesCpuMs / r.edges));
  const peerFill = med(s.copyFleet.receiverCpuMs);
  out.push({ line: "  CPU per copy: an edge's fill / a bare receiver's (medians)", value: `${fmt(edgeFill, 1)} / ${fmt(peerFill, 1)} ms = ${fmt(edgeFill === null || peerFill === null ? null : edgeFill / peerFill, 2)}`, goal: "", pass: null });
  // Per round, not per copy sent: with tiers the origin sends a few copies and the parents the rest.
  const senderRound = med(s.copyFleet.senderCpuMs.map((x) => x * s.copyFleet.receivers));
  out.push({ line: "  CPU per round: the origin / the bare sender (medians)", value: `${fmt(med(s.fleet.map((r) => r.originCpuMs)), 0)} / ${fmt(senderRound, 0)} ms`, goal: "", pass: null });
  // Shown beside it: the bound at the fill rates of 2 receivers, before the fleet starts and with it idling.
  for (const [name, rate] of [["2 receivers' fill rate", s.copyRate], ["2 receivers' fill rate, the fleet idling", s.copyRateWithFleet]] as const) {
    const bound = floor === null ? null : 3 * floor + ((s.edges * size) / rate.fillBytesPerS) * 1000;
    out.push({ line: `  the same bound at ${name}`, value: `${fmt(hit, 0)} ms`, goal: `${fmt(bound, 0)} ms`, pass: null });
  }
  for (const [name, xs] of [["file/delete", s.delete.ms], ["file/update visibility (both ways)", s.visibility.ms]] as const) {
    const p99 = percentile(xs, 99);
    out.push({ line: `${name} p99`, value: `${fmt(p99, 1)} ms`, goal: `<= 2 x floor = ${fmt(floor === null ? null : 2 * floor, 1)} ms`, pass: p99 === null || floor === null ? null : p99 <= 2 * floor });
  }
  const stale = s.checks.reduce((n, c) => n + (c.total - c.passed), 0);
  out.push({ line: "stale or wrong answers right after the origin answered", value: String(stale), goal: "0", pass: stale === 0 });
  const pss = mb(s.memory.edge?.pssKb);
  const rss = mb(s.memory.edge?.vmRssKb);
  out.push({ line: "idle edge PSS (median over the fleet)", value: `${fmt(pss, 1)} MB`, goal: `<= ${EDGE_MEMORY_GOAL_MB} MB`, pass: pss === null ? null : pss <= EDGE_MEMORY_GOAL_MB });
  out.push({ line: "idle edge VmRSS (median; see the note)", value: `${fmt(rss, 1)} MB`, goal: `<= ${EDGE_MEMORY_GOAL_MB} MB`, pass: rss === null ? null : rss <= EDGE_MEMORY_GOAL_MB });
  return out;
}

function roundsTable(title: string, rounds: PrewarmRound[]): string[] {
  const rows: string[][] = [["round", "edges", "complete ms", "of which ack wait", "first HIT", "median HIT", "all HIT", "origin MiB sent", "origin CPU ms", "edges CPU ms", "polling CPU ms", "first answers"]];
  rounds.forEach((r, i) =>
    rows.push([
      String(i + 1),
      String(r.edges),
      fmt(r.completeMs, 0),
      fmt(r.ackWaitMs, 0),
      fmt(r.firstHitMs, 0),
      fmt(r.medianHitMs, 0),
      r.allHitMs === null ? `only ${r.edgesHit}` : fmt(r.allHitMs, 0),
      fmt(r.originBytes / MiB, 1),
      fmt(r.originCpuMs, 0),
      fmt(r.edgesCpuMs, 0),
      fmt(r.benchCpuMs, 0),
      Object.entries(r.firstAnswer).map(([k, v]) => `${v}x ${k}`).join(", "),
    ]),
  );
  return [title, ...renderTable(rows, 1).map((l) => `  ${l}`)];
}

function memoryLine(name: string, m: Memory | null): string {
  if (m === null) return `  ${name}: n/a`;
  return `  ${name}: VmRSS ${fmt(mb(m.vmRssKb), 1)} MB, RssAnon ${fmt(mb(m.rssAnonKb), 1)} MB, PSS ${fmt(mb(m.pssKb), 1)} MB`;
}

export function renderReport(opts: Options, s: Summary): string {
  const lines: string[] = [""];
  lines.push(
    `fleet benchmark${opts.label ? ` [${opts.label}]` : ""}: ${s.edges} edges${s.tiers > 0 ? ` (${s.tiers} parents, ${s.edges - s.tiers} filling from two of them)` : ""} + 1 origin, ` +
      `node ${s.node}, ${os.availableParallelism()} CPUs; edges listening after ${fmt(s.startupMs / 1000, 1)} s` +
      (opts.settleS > 0 ? `, measured after ${opts.settleS} s idle` : ""),
  );
  if (s.loadAverageAtStart !== null && s.loadAverageAtStart > os.availableParallelism() / 4) {
    lines.push(`note: the 1-minute load average was ${fmt(s.loadAverageAtStart, 2)} at the start: other work may disturb the figures`);
  }
  lines.push(`floor: all ${s.edges} edges answer GET /healthz, fanned out at once: median ${fmt(s.floor.medianMs, 1)} ms over ${s.floor.roundsMs.length} rounds (${s.floor.roundsMs.map((x) => fmt(x, 0)).join(" ")})`);
  lines.push(`copy rate: ${fmt(s.copyRate.bytesPerS / MiB, 0)} MiB/s bare socket bytes; fill rate ${fmt(s.copyRate.fillBytesPerS / MiB, 0)} MiB/s received, SHA-256 checked, written and synced to a file (1 sender, ${s.copyRate.receivers} receivers at once, ${fmt(s.copyRate.bytes / MiB, 0)} MiB each way)`);
  lines.push(`  with all ${s.edges} edges started and idle: fill rate ${fmt(s.copyRateWithFleet.fillBytesPerS / MiB, 0)} MiB/s (bare ${fmt(s.copyRateWithFleet.bytesPerS / MiB, 0)} MiB/s)`);
  const cf = s.copyFleet;
  lines.push(
    `copy fleet: ${cf.receivers} bare receivers each making one verified ${fmt(s.prewarmBytes / MiB, 0)} MiB fill from 1 sender, all at once, before the fleet starts: ` +
      `${cf.roundsMs.map((x) => fmt(x, 0)).join(" / ")} ms per round; CPU per fill ${cf.receiverCpuMs.map((x) => fmt(x, 1)).join(" / ")} ms, per copy sent ${cf.senderCpuMs.map((x) => fmt(x, 1)).join(" / ")} ms`,
  );
  lines.push("idle memory (after startup, before any prewarm at full size):");
  lines.push(memoryLine(`edge, median of ${s.edges}`, s.memory.edge));
  lines.push(memoryLine("bare Node ESM http server", s.memory.bareNode));
  lines.push(`  origin VmRSS ${fmt(mb(s.memory.originRssKb), 0)} MB; edges' VmRSS summed ${fmt(mb(s.memory.edgesTotalRssKb), 0)} MB`);
  lines.push(`idle CPU (3 s, nothing changing): origin ${fmt(s.idleCpuShare.origin * 100, 1)}% of a core, all ${s.edges} edges together ${fmt(s.idleCpuShare.edges * 100, 1)}%`);
  lines.push("");
  lines.push(...roundsTable("prewarm with 1 edge (started alone first; the same origin):", s.single));
  lines.push(...roundsTable(`prewarm with all ${s.edges} edges:`, s.fleet));
  lines.push("  (complete ms: complete-upload's own time, and of it the wait for every edge's acknowledgement (the origin's");
  lines.push("   coffer_change_ack_seconds); HIT: ms after complete answered; CPU: from complete's request until the last HIT;");
  lines.push("   polling: this benchmark's own CPU, mostly the HEADs asking every edge every --poll-ms for its HIT)");
  lines.push("");
  const cpuPer = (c: ChangeTimes): string => fmt(c.ms.length === 0 ? null : c.originCpuMs / c.ms.length, 2);
  const upCpu = med(s.fleet.map((r) => r.originCpuMs));
  lines.push(`origin CPU: ${cpuPer(s.delete)} ms per delete, ${cpuPer(s.visibility)} ms per switch (each fanned out to ${s.edges} edges); ${fmt(upCpu, 0)} ms per upload prewarmed (median)`);
  const edgesPer = (c: ChangeTimes): string => fmt(c.ms.length === 0 ? null : c.edgesCpuMs / c.ms.length, 1);
  lines.push(`edges' CPU, all ${s.edges} together: ${edgesPer(s.delete)} ms per delete, ${edgesPer(s.visibility)} ms per switch`);
  const stat = (name: string, xs: number[]): string[] => [name, String(xs.length), fmt(median(xs), 1), fmt(percentile(xs, 99), 1), fmt(xs.length > 0 ? Math.max(...xs) : null, 1)];
  const lat: string[][] = [["change, until every edge acknowledged", "n", "median ms", "p99 ms", "max ms"]];
  lat.push(stat("file/delete", s.delete.ms), stat("file/update visibility", s.visibility.ms));
  lat.push(stat("  to Private", s.visibility.toPrivateMs), stat("  to Public", s.visibility.toPublicMs));
  lines.push(...renderTable(lat, 1));
  lines.push("");
  const checkRows: string[][] = [["check (right after the origin answered)", "passed", "result"]];
  for (const c of s.checks) checkRows.push([c.description, `${c.passed}/${c.total}`, c.total === 0 ? "SKIP" : verdict(c.passed === c.total)]);
  lines.push(...renderTable(checkRows, 1));
  for (const c of s.checks) for (const f of c.failures) lines.push(`  failed: ${c.description}: ${f}`);
  lines.push("");
  const g: string[][] = [["goal line", "measured", "goal", "result"]];
  for (const x of goals(s)) g.push([x.line, x.value, x.goal, x.pass === null ? "(shown)" : verdict(x.pass)]);
  lines.push(...renderTable(g, 1));
  lines.push(`note: an edge's VmRSS counts the node binary's pages every edge shares (about 43 MB here); PSS divides shared pages`);
  lines.push(`      among the processes mapping them and is what one more edge adds to a machine running many.`);
  lines.push(`(p99 is nearest-rank: with fewer than 100 samples it is the largest one)`);
  return lines.join("\n");
}
