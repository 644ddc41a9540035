// Fleet benchmark: one Coffer origin and many edge processes (50 by default), optionally in
// tiers (--tiers P: P parents fill from the origin, the others from two parents each).
//
// Run with `npm run bench:fleet -- [options]` (builds first) or `npx tsx bench/fleet.ts
// [options]`. See bench/README.md ("Fleet") and `--help`. In one run it measures the
// machine (copy rate, the copy fleet, the floor of a fan-out to every edge, idle memory), complete-upload
// and prewarm with one edge and then with all of them, deletes and visibility switches
// acknowledged by every edge, and checks nothing stale is served. All processes and the
// work directory are removed on exit, failure, Ctrl-C and (through a watchdog) SIGKILL.

import os from "node:os";
import {
  ChildFailure,
  MiB,
  armDeadline,
  bounded,
  errorMessage,
  fmt,
  installExitHandlers,
  loadAverage,
  log,
  makeWorkDir,
  median,
  percentile,
  releaseWatchdog,
  round2,
  sleep,
  stopAll,
} from "./common.js";
import { deletePhase, visibilityPhase, SMALL_BYTES } from "./fleet/changes.js";
import { Checks } from "./fleet/checks.js";
import { bareNodeMemory, measureCopyFleet, measureCopyRate, medianMemory } from "./fleet/machine.js";
import { USAGE, parseOptions, type Options } from "./fleet/options.js";
import { prewarmRound, type PrewarmRound } from "./fleet/prewarm.js";
import { edgeAgent, measureFloor } from "./fleet/probe.js";
import { startEdges, startOrigin, started, type Edge, type Fleet } from "./fleet/procs.js";
import { goals, renderReport, type Summary } from "./fleet/report.js";

const COPY_ROUNDS = 10;
const IDLE_MS = 3000;

async function prewarmRounds(f: Fleet, edges: Edge[], opts: Options, count: number, tag: string, checks: Checks): Promise<PrewarmRound[]> {
  const everyone = [f.origin, ...edges.map((e) => e.child)];
  const rounds: PrewarmRound[] = [];
  for (let r = 1; r <= count; r++) {
    const res = await bounded(`prewarm ${tag} round ${r}`, opts.phaseTimeoutMs + 120_000, everyone, (signal) =>
      prewarmRound(f, edges, opts, `prewarm-${tag}-${r}.bin`, checks, signal),
    );
    rounds.push(res);
    log(
      `prewarm ${tag} ${r}/${count}: complete-upload ${fmt(res.completeMs, 0)} ms; HIT at ${res.edgesHit}/${edges.length} edges, ` +
        `all after ${res.allHitMs === null ? "n/a (limit reached)" : `${fmt(res.allHitMs, 0)} ms`}` +
        `${res.parentsHitMs === null ? "" : ` (every parent after ${fmt(res.parentsHitMs, 0)} ms)`}; origin sent ${fmt(res.originBytes / MiB, 1)} MiB` +
        `${Object.keys(res.otherStatuses).length > 0 ? `; other answers while waiting: ${JSON.stringify(res.otherStatuses)}` : ""}`,
    );
    for (const u of res.unavailable) log(`  503 at edge ${u.edge}${u.parent ? " (parent)" : ""} after ${u.ms} ms: ${u.why}`);
    await sleep(300);
  }
  return rounds;
}

/** Starts the fleet: one edge alone first (measured), then the parents, then the rest. */
async function run(opts: Options, workDir: string, loadAvgStart: number | null): Promise<{ summary: Summary; fleet: Fleet }> {
  const f = await startOrigin(opts, workDir);
  fleetForCleanup = f;
  log(`copy rate: ${COPY_ROUNDS} x ${fmt(opts.prewarmBytes / MiB, 0)} MiB per receiver...`);
  const copyRate = await measureCopyRate(opts.prewarmBytes, COPY_ROUNDS, workDir);
  log(`copy rate: ${fmt(copyRate.bytesPerS / MiB, 0)} MiB/s bare, ${fmt(copyRate.fillBytesPerS / MiB, 0)} MiB/s as verified fills`);
  log(`copy fleet: ${opts.edges} receivers, ${opts.rounds} rounds of one ${fmt(opts.prewarmBytes / MiB, 0)} MiB fill each...`);
  const copyFleet = await measureCopyFleet(opts.edges, opts.prewarmBytes, opts.rounds, workDir, opts.batch);
  log(`copy fleet: ${copyFleet.roundsMs.map((x) => fmt(x, 0)).join(" / ")} ms per round; ${fmt(median(copyFleet.receiverCpuMs), 1)} ms of CPU per receiver's fill`);
  const checks = new Checks();
  let startupMs = await startEdges(opts, f, 0, 1);
  // Rounds at one edge are cheap and their complete-upload is the reference: a few more of them.
  const single = await prewarmRounds(f, f.edges.slice(0, 1), opts, opts.rounds + 2, "1-edge", checks);
  log(`starting the other ${opts.edges - 1} edges...`);
  if (opts.tiers > 1) startupMs += await startEdges(opts, f, 1, opts.tiers);
  startupMs += await startEdges(opts, f, Math.max(1, opts.tiers), opts.edges);
  if (opts.settleS > 0) {
    log(`letting the fleet idle ${opts.settleS} s before measuring it...`);
    await sleep(opts.settleS * 1000);
  }
  // Idle: what the fleet costs while nothing changes (the edges' heartbeats and acknowledgements).
  await sleep(1000);
  const idleCpu = (): number[] => [f.origin.cpuMs() ?? 0, f.edges.reduce((n, e) => n + (e.child.cpuMs() ?? 0), 0)];
  const [originIdle0, edgesIdle0] = idleCpu();
  await sleep(IDLE_MS);
  const [originIdle1, edgesIdle1] = idleCpu();
  const idleCpuShare = { origin: (originIdle1! - originIdle0!) / IDLE_MS, edges: (edgesIdle1! - edgesIdle0!) / IDLE_MS };
  const edgeMemory = medianMemory(f.edges.map((e) => e.child.pid));
  const edgesTotalRssKb = f.edges.reduce((n, e) => n + (e.child.statusKb("VmRSS") ?? 0), 0);
  const originRssKb = f.origin.statusKb("VmRSS");
  const bareNode = await bareNodeMemory(workDir, IDLE_MS);
  const floor = await measureFloor(f.edges, opts.floorRounds);
  log(`floor: every edge answered /healthz in ${fmt(floor.medianMs, 1)} ms (median)`);
  // The same copies again with the fleet up and idle: what the cores copy while every edge keeps its lease.
  const copyRateWithFleet = await measureCopyRate(opts.prewarmBytes, COPY_ROUNDS, workDir);
  log(`copy rate with the fleet idling: ${fmt(copyRateWithFleet.fillBytesPerS / MiB, 0)} MiB/s as verified fills`);
  const everyone = [f.origin, ...f.edges.map((e) => e.child)];
  const fleetRounds = await prewarmRounds(f, f.edges, opts, opts.rounds, `${opts.edges}-edges`, checks);
  const phaseLimit = opts.phaseTimeoutMs + opts.count * 60_000;
  log(`delete: uploading ${opts.count} files of ${SMALL_BYTES / 1024} KiB...`);
  const del = await bounded("delete phase", phaseLimit, everyone, (signal) => deletePhase(f, opts, checks, signal));
  log(`delete: median ${fmt(median(del.ms), 1)} ms, p99 ${fmt(percentile(del.ms, 99), 1)} ms`);
  log(`visibility: switching a ${SMALL_BYTES / 1024} KiB file to Private and back ${opts.count} times...`);
  const vis = await bounded("visibility phase", phaseLimit, everyone, (signal) => visibilityPhase(f, opts, checks, signal));
  log(`visibility: median ${fmt(median(vis.ms), 1)} ms, p99 ${fmt(percentile(vis.ms, 99), 1)} ms`);
  const summary: Summary = {
    label: opts.label,
    node: process.version,
    edges: f.edges.length,
    tiers: opts.tiers,
    loadAverageAtStart: round2(loadAvgStart),
    startupMs: Math.round(startupMs),
    prewarmBytes: opts.prewarmBytes,
    memory: { edge: edgeMemory, bareNode, originRssKb, edgesTotalRssKb },
    idleCpuShare,
    floor,
    copyRate,
    copyFleet,
    copyRateWithFleet,
    single,
    fleet: fleetRounds,
    delete: del,
    visibility: vis,
    checks: checks.list,
  };
  return { summary, fleet: f };
}

let fleetForCleanup: Fleet | null = null;

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
  try {
    const loadAvgStart = loadAverage();
    if (loadAvgStart !== null && loadAvgStart > os.availableParallelism() / 4) {
      log(`note: the 1-minute load average is ${fmt(loadAvgStart, 2)} on ${os.availableParallelism()} CPUs: other work may disturb the figures`);
    }
    const workDir = makeWorkDir(opts.tmpBase, "coffer-fleet-", opts.keepData);
    log(`work dir: ${workDir}${opts.keepData ? " (kept)" : ""}; ${opts.edges} edges${opts.tiers > 0 ? `, ${opts.tiers} of them parents` : ""}`);
    const { summary } = await run(opts, workDir, loadAvgStart);
    const report = renderReport(opts, summary);
    if (opts.json) {
      log(report);
      process.stdout.write(`${JSON.stringify({ ...summary, goals: goals(summary) }, null, 2)}\n`);
    } else {
      process.stdout.write(`${report}\n`);
    }
    if (summary.checks.some((c) => c.passed !== c.total)) {
      log(`\nsome edge answered against the contract right after the origin answered (see the checks above): exit code 1`);
      return 1;
    }
    return 0;
  } catch (err) {
    log(`\nBENCHMARK FAILED: ${errorMessage(err)}`);
    const involved = err instanceof ChildFailure ? err.children : started.slice(0, 1);
    for (const child of involved) log(child.diagnostics());
    for (const child of started.filter((c) => !c.alive && !involved.includes(c)).slice(0, 3)) log(child.diagnostics());
    return 1;
  } finally {
    fleetForCleanup?.api.close();
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
